"""A nightly matrix history for the report tests, made of real runs: 30 nights of 16 broker releases and 9 client
library releases (the managed series' labels and versions), replayed from reference runs.

The records, findings, reasons and transcripts are what `run` writes: the reference broker (correct, and with
catalogue faults switched on) and the reference client (correct, and faulted) run every broker and client case
once; `conformance.history.synthetic.write_nightly_history` then replays them as 30 nightly runs, each column
taking its records from the correct or the faulted reference per case, so findings hold for some releases of a
series and not others, as they do on real brokers.
"""

from __future__ import annotations

from pathlib import Path

ARTEMIS = ("2.17.0", "2.18.0", "2.21.0", "2.26.0", "2.28.0", "2.31.2", "2.35.0", "2.39.0", "2.40.0")
BROKER_FAULTS = ("cumulative_credit", "ignore_echo", "ignore_unattached_handle", "ignore_drain")
CLIENT_FAULTS = ("client-ignore-echo", "client-send-without-credit")


def reference_runs(reports: Path) -> list[Path]:
    """One run of every broker case against the correct and the faulted reference broker, and one of every client
    case against the correct and the faulted reference client."""
    from conformance.cases import load_all, load_clients
    from conformance.options import RunOptions
    from conformance.run.engine import Plan, execute
    from conformance.run.selection import select_cases
    from conformance.reference.client import subject
    from conformance.reference.config import Faults
    from conformance.reference.runs import ReferenceBuild, write_reference_run
    fast = RunOptions(quiet_period=0.2)
    brokers = write_reference_run(reports, [ReferenceBuild("ref-good", "1.0"),
                                            ReferenceBuild("ref-bad", "2.0", Faults(**{f: True for f in BROKER_FAULTS}))],
                                  list(load_all()), run_id="reference-brokers", options=fast)
    subjects = [subject(name="ref-client-good"), subject(*CLIENT_FAULTS, name="ref-client-bad")]
    try:
        clients = execute(Plan(select_cases(None, kind="client"), subjects,
                               RunOptions(quiet_period=0.2, workers=0, reports_dir=reports), run_id="reference-clients",
                               selection={"cases": list(load_clients()), "reference": True})).run.path
    finally:
        for s in subjects:
            s.discard()
    return [brokers, clients]


def columns():
    """The 16 broker releases and 9 client library releases, each replaying the correct reference with some
    cases taken from the faulted one."""
    from conformance.clients.library import LIBRARIES
    from conformance.history.synthetic import Replay
    bad = "ref-bad"
    out = []
    for i, version in enumerate(ARTEMIS):
        faults = [("2.7.4/3", bad)]                                   # every release
        if i < 7:
            faults += [("2.6.7/3", bad), ("2.6.7/4", bad)]            # fixed in 2.39.0
        if i == 8:
            faults += [("2.7.4/1", bad)]                              # a regression in the newest
        out.append(Replay(f"artemis-{version}", "apache-activemq-artemis", version, "ref-good", tuple(faults)))
    for name, version, faults in (("rabbitmq-3.10", "3.10.8", ("2.6.8/2", "2.6.9/1")),
                                  ("rabbitmq-4.0", "4.0.5", ("2.6.9/1",)), ("rabbitmq-4.3", "4.3.0", ())):
        out.append(Replay(name, "RabbitMQ", version, "ref-good", tuple((c, bad) for c in faults)))
    for name, version in (("qpid-broker-j-8.0", "8.0.6"), ("qpid-broker-j-9.2", "9.2.1"),
                          ("qpid-broker-j-10.0", "10.0.1")):
        out.append(Replay(name, "qpid", version, "ref-good", (("2.7.4/2", bad),)))
    out.append(Replay("qpid-proton-c", "qpid-proton-c example broker", "0.37.0-2+b1", bad))
    for n, library in enumerate(LIBRARIES[:9]):
        faults = (("2.6.7/103", "ref-client-bad"), ("2.6.7/104", "ref-client-bad")) if n % 3 == 0 else \
            (("2.7.4/102", "ref-client-bad"),) if n % 3 == 1 else ()
        out.append(Replay(library.label, library.name, library.version, "ref-client-good", faults))
    return out


def write_history(reports: Path, sources: list[Path], nights: int = 30) -> list[Path]:
    from conformance.history.synthetic import write_nightly_history
    return write_nightly_history(reports, sources, nights, columns())
