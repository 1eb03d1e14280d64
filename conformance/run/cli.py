"""`amqp-conformance run`: the conformance cases against one or more brokers, in verdicts.

This module owns the command's arguments and its exit code; the run itself is `conformance.run.engine`.
Exit codes: before anything runs, the codes of conformance.errors (2 usage, 3 unknown case, 4 unreachable,
6 authentication, 7 a broker did not start, ...); after the run, 14 when any case ended in `error`, else 1
when a MUST-level case failed, else 0; 130 after Ctrl-C (the finished cases are kept).
"""

from __future__ import annotations

import sys

from .. import options as run_options
from . import selection


def register(sub) -> None:
    p = sub.add_parser("run", help="run the conformance cases against one or more brokers")
    selection.add_arguments(p)
    p.add_argument("--broker", action="append", default=[], metavar="NAME|URL",
                   help="managed broker (qpid-proton-c, rabbitmq-3.10|4.0|4.3, qpid-broker-j-9.2, artemis-2.40.0, ...: "
                        "`brokers list`) or amqp[s]://user:pass@host:port "
                        "(repeatable; default: qpid-proton-c)")
    p.add_argument("--profile", default=None, help="profile for URL brokers: rabbitmq-4, rabbitmq-3, qpid-broker-j, "
                   "artemis, artemis-before-2.32, qpid-proton-c, generic, or a .toml file")
    run_options.add_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print each case record as one JSON object per line on stdout (the rest goes to stderr)")
    p.set_defaults(func=cmd_run, pytest_args=[])


def cmd_run(args) -> int:
    from .console import Console
    from .engine import Plan, execute
    from .targets import resolve
    options = run_options.from_args(args)                                # exit 2 for a bad value
    cases = selection.select_cases(args.selectors, args.keyword)        # exit 3 unknown case, 2 bad -k
    specs = resolve(args.broker, args.profile)                          # exit 2 unknown broker or bad URL
    console = Console(sys.stderr, json_stream=sys.stdout) if args.json else Console(sys.stdout)
    plan = Plan(cases, specs, options, selection={"cases": list(args.selectors), "keyword": args.keyword},
                junit=True, allure=True, pytest_args=list(args.pytest_args))
    return execute(plan, console).exit_code
