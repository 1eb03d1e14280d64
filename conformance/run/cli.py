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
                   help="managed broker (qpid-proton-c, rabbitmq-3.10|4.0|4.3, qpid-broker-j-9.2, artemis-2.40.0, "
                        "activemq-6.3.1, ...: "
                        "`brokers list`) or amqp[s]://user:pass@host:port "
                        "(repeatable; default: qpid-proton-c)")
    p.add_argument("--profile", default=None, help="profile for URL brokers: rabbitmq-4, rabbitmq-3, qpid-broker-j, "
                   "artemis, artemis-before-2.32, activemq, qpid-proton-c, generic, or a .toml file")
    p.add_argument("--client", action="append", default=[], metavar="LIBRARY",
                   help="judge a client library instead of a broker (the suite plays the broker): a name "
                        "(newest pinned release) or a label such as rhea-2.0.8 (`clients list`); repeatable")
    run_options.add_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print each case record as one JSON object per line on stdout (the rest goes to stderr)")
    p.set_defaults(func=cmd_run, pytest_args=[])


def cmd_run(args) -> int:
    from .console import Console
    from .engine import Plan, execute
    from .targets import resolve
    options = run_options.from_args(args)                                # exit 2 for a bad value
    if getattr(args, "client", None):
        return _run_clients(args, options)
    cases = selection.select_cases(args.selectors, args.keyword)        # exit 3 unknown case, 2 bad -k
    specs = resolve(args.broker, args.profile)                          # exit 2 unknown broker or bad URL
    console = Console(sys.stderr, json_stream=sys.stdout) if args.json else Console(sys.stdout)
    plan = Plan(cases, specs, options, selection={"cases": list(args.selectors), "keyword": args.keyword},
                junit=True, allure=True, pytest_args=list(args.pytest_args))
    return execute(plan, console).exit_code


def _run_clients(args, options) -> int:
    """`run --client NAME`: the client cases against each library (its label is the results' `broker`), in
    this process with one driver per library for the whole run."""
    from ..clients import ClientSubject, resolve as resolve_client
    from ..errors import UsageError
    from .console import Console
    from .engine import Plan, execute
    if args.broker:
        raise UsageError("--client and --broker judge different sides; run them separately")
    cases = selection.select_cases(args.selectors, args.keyword, kind="client")
    subjects = [ClientSubject(resolve_client(name)) for name in dict.fromkeys(args.client)]
    for subject in subjects:
        subject.check()                                                 # exit 8: not provisioned
    console = (Console(sys.stderr, json_stream=sys.stdout, noun="client") if args.json
               else Console(sys.stdout, noun="client"))
    plan = Plan(cases, subjects, options, selection={"cases": list(args.selectors), "keyword": args.keyword},
                meta={"subject_kind": "client"}, junit=True, allure=True, pytest_args=list(args.pytest_args))
    try:
        return execute(plan, console).exit_code
    finally:
        for subject in subjects:
            subject.discard()
