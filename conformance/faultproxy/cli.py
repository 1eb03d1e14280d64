"""`amqp-conformance selfcheck`: check the checker by running the cases through the fault-injecting proxy.

This module owns the subcommand's arguments, their validation (one-line errors with the exit codes of
conformance.errors: an unknown fault or a bad option is a usage error, exit 2; an unknown case exits 3) and
its exit code: 0 when the proxy without fault changed no verdict and every fault was detected by at least
one case (fail or non-strict) -- with `--expect FILE` also when the direct and no-fault runs are as the file
expects and each fault shows as unexpected fail and nothing else that fails the gate --, 1 otherwise, 14 when a case of the direct or no-fault run ended in error (the
run broke, so the comparison says nothing). With `--transport` the faults are the catalogue's transport
faults and the output is the transport matrix; a reset or stall that fired leaves `error` verdicts, so such
a run exits 14 like any run with errors (whether the matrix held is its last line and `ok` in the JSON). Cases, brokers, options and the run directory are the run
pipeline's (`conformance.run`), with the same flags as `run`.
"""

from __future__ import annotations

import difflib
import sys

from ..errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK, UsageError
from ..verdict import Verdict
from .. import options as run_options
from ..run import gate as run_gate
from ..run import selection


def register(sub) -> None:
    from .faults import FAULTS
    p = sub.add_parser("selfcheck", help="run the cases directly, through a transparent proxy and through the "
                                         "proxy once per fault; print the fault x case sensitivity matrix")
    selection.add_arguments(p)
    run_options.add_broker_arguments(p.add_argument, required=True, note="plain amqp:// only (the proxy decodes "
                                     "frames)")
    p.add_argument("--fault", action="append", default=[], metavar="F",
                   help="a fault to run (repeatable; default: all): " + ", ".join(FAULTS)
                   + "; with --transport: " + ", ".join(_transport_names()))
    p.add_argument("--transport", action="store_true",
                   help="break the network instead of the protocol: run the cases through each transport fault "
                        "(per-frame delay, reset, stall) and print the transport matrix")
    run_options.add_arguments(p)
    run_gate.add_arguments(p, write=False)
    p.set_defaults(func=cmd_selfcheck)


def _transport_names() -> list[str]:
    from ..catalogue import faults as fault_catalogue
    return [f.name for f in fault_catalogue.of_kind("transport")]


def _faults(names: list[str], transport: bool = False) -> list[str]:
    from .faults import FAULTS
    known = _transport_names() if transport else list(FAULTS)
    chosen = []
    for name in names or known:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            what = "transport faults (--transport)" if transport else "faults"
            raise UsageError(f"unknown fault {name!r}; {hint}{what} are: {', '.join(known)}")
        if name not in chosen:
            chosen.append(name)
    return chosen


def cmd_selfcheck(args) -> int:
    from ..run.console import Console
    from ..run.targets import resolve
    from .selfcheck import DIRECT, PROXY, render_gate_text, render_text, render_transport_text, run_selfcheck
    faults = _faults(args.fault, args.transport)
    gate = run_gate.from_args(args)                                     # exit 16 bad expectations
    options = run_options.from_args(args)                                # exit 2 for a bad value
    cases = selection.select_cases(args.selectors, args.keyword)        # exit 3 unknown case, 2 bad -k
    [spec] = resolve([args.broker], args.profile)                       # exit 2 for an unknown broker
    if spec.address is not None and spec.address.tls:
        raise UsageError("selfcheck needs a plain amqp:// broker: the proxy decodes frames and cannot sit inside TLS")
    report, outcome = run_selfcheck(spec, cases, faults, options=options, console=Console(sys.stdout, summary=False, noun="configuration"),
                                    selection={"cases": list(args.selectors), "keyword": args.keyword}, gate=gate)
    print(render_transport_text(report) if args.transport else render_text(report))
    if "expectations" in report:
        print(render_gate_text(report))
    path = outcome.run.path
    print(f"report: {path}/selfcheck.md  {path}/selfcheck.json  results: {path}/results.jsonl")
    if args.transport:      # the faults that fired leave `error` verdicts: the run exits as a run with errors does
        if any(v == Verdict.ERROR for verdicts in report["verdicts"].values() for v in verdicts.values()):
            return EXIT_CASE_ERROR
        return EXIT_OK if report["ok"] else EXIT_MUST_FAILED
    if any(report["verdicts"][config][c] == Verdict.ERROR for config in (DIRECT, PROXY) for c in report["cases"]):
        return EXIT_CASE_ERROR
    if "expectations" in report:        # --expect: the gate must catch every fault, as unexpected fail only
        return EXIT_OK if report["ok"] and report["expectations"]["ok"] else EXIT_MUST_FAILED
    return EXIT_OK if report["ok"] else EXIT_MUST_FAILED
