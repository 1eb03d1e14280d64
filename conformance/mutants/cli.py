"""`amqp-conformance selfcheck`: check the checker by running the cases through the mutant proxy.

This module owns the subcommand's arguments, their validation (one-line errors with the exit codes of
conformance.errors: an unknown fault or a bad option is a usage error, exit 2; an unknown case exits 3),
starting and stopping the broker, and the run directory the report goes to. Exit code 0 when the proxy
without fault changed no verdict and every fault was detected by at least one case (fail or non-strict),
1 otherwise.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..errors import EXIT_MUST_FAILED, EXIT_OK, UsageError
from ..results import DEFAULT_REPORTS_DIR, RunDirectory


def register(sub) -> None:
    from .faults import FAULTS
    p = sub.add_parser("selfcheck", help="run the cases directly, through a transparent proxy and through the "
                                         "proxy once per fault; print the fault x case sensitivity matrix")
    p.add_argument("selectors", nargs="*", metavar="CASE",
                   help="case ids (2.6.8/1), sections (2.6.8) or requirement ids; default: all cases")
    p.add_argument("--broker", required=True, metavar="NAME|URL",
                   help="managed broker (rabbitmq-4.0, rabbitmq-3.10, qpid-proton-c) or amqp://user:pass@host:port")
    p.add_argument("--profile", default=None, help="profile for a URL broker (see `run --help`)")
    p.add_argument("-k", dest="keyword", default=None,
                   help="only cases whose id or title contains this text (case-insensitive)")
    p.add_argument("--fault", action="append", default=[], metavar="F",
                   help="a fault to run (repeatable; default: all): " + ", ".join(FAULTS))
    p.add_argument("-n", dest="workers", default="2", help="parallel worker processes (0 or 1 = none; default 2)")
    p.add_argument("--quiet-period", type=float, default=0.5, help="seconds to watch that nothing more arrives")
    p.add_argument("--frame-timeout", type=float, default=5.0, help="bound on each wait for a frame (seconds)")
    p.add_argument("--reports-dir", default=str(DEFAULT_REPORTS_DIR), help="where run directories go (default reports/)")
    p.set_defaults(func=cmd_selfcheck)


def _faults(names: list[str]) -> list[str]:
    from .faults import FAULTS
    chosen = []
    for name in names or list(FAULTS):
        if name not in FAULTS:
            close = difflib.get_close_matches(name, list(FAULTS), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise UsageError(f"unknown fault {name!r}; {hint}faults are: {', '.join(FAULTS)}")
        if name not in chosen:
            chosen.append(name)
    return chosen


def _workers(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"-n takes a number of workers, not {value!r}") from None
    if n < 0 or n > 16:
        raise UsageError(f"-n {n}: choose between 0 and 16 workers")
    return n


def cmd_selfcheck(args) -> int:
    from .. import brokers
    from ..cases import select
    from ..runner import RunOptions
    from .selfcheck import render_text, run_selfcheck
    faults = _faults(args.fault)
    workers = _workers(args.workers)
    if args.quiet_period <= 0 or args.frame_timeout <= 0:
        raise UsageError("--quiet-period and --frame-timeout must be positive numbers of seconds")
    selected = select(args.selectors or None)                       # exit 3 for an unknown id
    if args.keyword:
        word = args.keyword.lower()
        selected = [c for c in selected if word in c.id.lower() or word in c.title.lower()]
        if not selected:
            raise UsageError(f"-k {args.keyword!r} matches no case; run `amqp-conformance list --cases`")
    spec = brokers.resolve(args.broker, args.profile)               # exit 2 for an unknown broker
    if spec.url is not None and spec.url.startswith("amqps:"):
        raise UsageError("selfcheck needs a plain amqp:// broker: the proxy decodes frames and cannot sit inside TLS")
    handle = brokers.start(spec)                                    # exit 4 / 6 / 7 / 8 as for `run`
    try:
        run = RunDirectory.create(Path(args.reports_dir), kind="selfcheck",
                                  brokers={spec.name: {"url": handle.redacted_url, "profile": spec.profile,
                                                       "product": handle.product, "version": handle.version}},
                                  options={"cases": args.selectors, "keyword": args.keyword, "faults": faults,
                                           "workers": workers, "quiet_period": args.quiet_period,
                                           "frame_timeout": args.frame_timeout})
        runs = 2 + len(faults)
        print(f"amqp-conformance selfcheck: {len(selected)} cases x {runs} runs (direct, proxy, "
              f"{len(faults)} fault(s)) on {spec.name} -> {run.path}", flush=True)
        options = RunOptions(frame_timeout=args.frame_timeout, quiet_period=args.quiet_period)
        report = run_selfcheck(handle, [c.id for c in selected], faults, workers=workers, options=options,
                               broker_spec=spec, run=run, progress=lambda line: print(line, flush=True))
        run.finish()
    finally:
        if handle.managed is not None:
            handle.managed.stop()
    print(render_text(report))
    print(f"report: {run.path}/selfcheck.md  {run.path}/selfcheck.json  results: {run.path}/results.jsonl")
    return EXIT_OK if report["ok"] else EXIT_MUST_FAILED
