"""`amqp-conformance run`: the conformance cases against one or more brokers, in verdicts.

This module owns the command's arguments and its exit code; the run itself is `conformance.run.engine`.
Exit codes: before anything runs, the codes of conformance.errors (2 usage, 3 unknown case, 4 unreachable,
6 authentication, 7 a broker did not start, 16 a bad expectations file, ...); after the run, 14 when any case
ended in `error`, else 1 when a MUST-level case failed, else 0; with --expect FILE the gate decides instead
(14 an unexpected error, 1 an unexpected result, 0 all as expected: conformance.expectations); 130 after
Ctrl-C (the finished cases are kept). `--start CMD --url URL` runs against a broker your build starts
(conformance.brokers.command), `--label` names a broker given by URL in results and expectations. `--client
NAME` judges a client library's pinned release, `--client-from PATH` a team's own build of it and
`--client-driver CMD` a driver of the team's own (conformance.clients.local), under `--label`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys

from .. import options as run_options
from . import gate as run_gate
from . import selection
from ..verdict import Verdict


def register(sub) -> None:
    p = sub.add_parser("run", help="run the conformance cases against one or more brokers")
    selection.add_arguments(p)
    run_options.add_broker_arguments(p.add_argument, many=True, note="default: qpid-proton-c")
    p.add_argument("--start", default=None, metavar="CMD",
                   help="start your broker build with this command ({port}: a free port, also in --url), run "
                        "against it, stop it afterwards; needs --url")
    p.add_argument("--url", default=None, metavar="URL", help="with --start: where it listens, e.g. "
                   "amqp://127.0.0.1:{port}")
    p.add_argument("--ready-timeout", type=float, default=60.0, metavar="S",
                   help="with --start: seconds until its port must accept connections (default 60)")
    p.add_argument("--label", default=None, metavar="NAME",
                   help="the name of a --start or URL broker in results and expectations (default: host:port; with "
                        "--start: broker)")
    p.add_argument("--client", action="append", default=[], metavar="LIBRARY",
                   help="judge a client library instead of a broker (the suite plays the broker): a name "
                        "(newest pinned release) or a label such as rhea-2.0.8 (`clients list`); repeatable")
    p.add_argument("--client-from", default=None, metavar="PATH",
                   help="with one --client: judge your own build of that library instead of a pinned release (a "
                        "wheel, sdist or pip-installable directory; an npm package directory or tarball); its "
                        "label is NAME-local unless --label names it")
    p.add_argument("--client-driver", default=None, metavar="CMD",
                   help="judge a library the suite has no driver for: CMD runs your driver, which speaks "
                        "clients/PROTOCOL.md; needs --label")
    run_options.add_arguments(p)
    run_gate.add_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print each case record as one JSON object per line on stdout (the rest goes to stderr)")
    p.set_defaults(func=cmd_run, pytest_args=[])


def cmd_run(args) -> int:
    from .console import Console
    from .engine import Plan
    from .targets import default_workers
    options = run_options.from_args(args)                                # exit 2 for a bad value
    if getattr(args, "client", None) or getattr(args, "client_from", None) or getattr(args, "client_driver", None):
        return _run_clients(args, options)
    cases = selection.select_cases(args.selectors, args.keyword)        # exit 3 unknown case, 2 bad -k
    gate = run_gate.from_args(args)                                     # exit 16 bad expectations
    console = Console(sys.stderr, json_stream=sys.stdout) if args.json else Console(sys.stdout)
    with _brokers(args) as specs:                                       # exit 2 unknown broker or bad URL
        if args.workers is None:                                        # -n not given: the profiles' hint
            options = dataclasses.replace(options, workers=default_workers(specs))
        plan = Plan(cases, specs, options, selection={"cases": list(args.selectors), "keyword": args.keyword},
                    junit=True, allure=True, pytest_args=list(args.pytest_args), gate=gate)
        return _execute(plan, console, args)


@contextlib.contextmanager
def _brokers(args):
    """The BrokerSpecs of --broker, or of the broker --start starts (stopped when the run ends); --label names
    the one URL broker."""
    from ..brokers import BrokerSpec
    from ..errors import UsageError
    from .targets import resolve
    if bool(args.start) != bool(args.url):
        raise UsageError("--start CMD and --url URL go together: the command starts your broker, the URL is where "
                         "it listens (amqp://127.0.0.1:{port})")
    if args.start:
        if args.broker:
            raise UsageError("--start runs one broker of yours; give --broker in another run")
        from ..brokers.command import StartedCommand
        label = args.label or "broker"
        resolve([args.url.replace("{port}", "5672")], args.profile)     # a bad URL or profile: before starting
        with StartedCommand(args.start, args.url, label=label, ready_timeout=args.ready_timeout) as started:
            yield [BrokerSpec(label, started.address, args.profile or "generic")]
        return
    specs = resolve(args.broker, args.profile)
    if args.label:
        urls = [s for s in specs if s.address is not None]
        if len(urls) != 1 or len(specs) != 1:
            raise UsageError("--label names one broker given by URL (or --start); run the others without it")
        specs = [BrokerSpec(args.label, specs[0].address, specs[0].profile)]
    yield specs


def _execute(plan, console, args) -> int:
    """Run the plan; with --write-expect, write the file from a whole run (an interrupted or incomplete run
    writes nothing). Without --expect, a run that only writes the file exits 0 unless it broke (14)."""
    from ..errors import EXIT_CASE_ERROR, EXIT_OK
    from .engine import execute
    outcome = execute(plan, console)
    write = getattr(args, "write_expect", None)
    if not write:
        return outcome.exit_code
    if not outcome.complete:
        console.note(f"expectations NOT written to {write}: the run did not finish every case")
        return outcome.exit_code if plan.gate is not None else EXIT_CASE_ERROR
    labels = list(dict.fromkeys(t.broker for t in plan.resolved_targets()))
    console.note(run_gate.write_file(write, outcome.records, labels=labels, cases=[c.id for c in plan.cases],
                                     run_id=outcome.run.run_id))
    if plan.gate is not None:
        return outcome.exit_code
    return EXIT_CASE_ERROR if any(r["verdict"] == Verdict.ERROR for r in outcome.records) else EXIT_OK


def _run_clients(args, options) -> int:
    """`run --client NAME`: the client cases against each library (its label is the results' `broker`), in
    this process with one driver per library for the whole run."""
    from ..clients import ClientSubject, resolve as resolve_client
    from ..errors import UsageError
    from .console import Console
    from .engine import Plan
    if args.broker:
        raise UsageError("--client and --broker judge different sides; run them separately")
    cases = selection.select_cases(args.selectors, args.keyword, kind="client")
    if args.start or args.url:
        raise UsageError("--start and --url name a broker; --client names the library")
    gate = run_gate.from_args(args, "client")                           # exit 16 bad expectations
    meta: dict = {"subject_kind": "client"}
    if args.client_from or args.client_driver:
        subject, meta["client_builds"] = _own_build(args)               # exit 2 bad path, 8 install failed
        subjects = [subject]
    else:
        if args.label:
            raise UsageError("--label names a broker, or your own build of a client (--client-from, "
                             "--client-driver); a pinned release is named by its label")
        subjects = [ClientSubject(resolve_client(name)) for name in dict.fromkeys(args.client)]
    for subject in subjects:
        subject.check()                                                 # exit 8: not provisioned
    console = (Console(sys.stderr, json_stream=sys.stdout, noun="client") if args.json
               else Console(sys.stdout, noun="client"))
    plan = Plan(cases, subjects, options, selection={"cases": list(args.selectors), "keyword": args.keyword},
                meta=meta, junit=True, allure=True, pytest_args=list(args.pytest_args), gate=gate)
    try:
        return _execute(plan, console, args)
    finally:
        for subject in subjects:
            subject.discard()


def _own_build(args):
    """The subject of `--client NAME --client-from PATH` (the team's build of a library the suite drives,
    installed into its own cache entry) or of `--client-driver CMD --label NAME` (a driver the suite does not
    ship), and what run.json says of it."""
    import os
    from ..clients import ClientSubject, Library, resolve as resolve_client
    from ..clients import local
    from ..errors import UsageError
    if args.client_from and args.client_driver:
        raise UsageError("--client-from installs your build for the suite's driver, --client-driver runs your own "
                         "driver: give one of them")
    if args.client_driver:
        if args.client or not args.label:
            raise UsageError("--client-driver CMD needs --label NAME (its name in results and expectations) and "
                             "no --client (the suite knows no driver of that library)")
        argv = local.driver_command(args.client_driver)
        label = local.check_label(args.label)
        lib = Library(label, "", "unknown", "none", "", "", "a driver given with --client-driver")
        return ClientSubject(lib, argv=argv, name=label), {label: {"driver": args.client_driver}}
    if len(args.client) != 1:
        raise UsageError("--client-from PATH is your build of one library: give exactly one --client NAME")
    build = local.install(resolve_client(args.client[0]), args.client_from, args.label)
    subject = ClientSubject(build.lib, argv=list(build.argv), env={**os.environ, **dict(build.env)},
                            name=build.label, version=build.version)
    return subject, {build.label: build.meta()}
