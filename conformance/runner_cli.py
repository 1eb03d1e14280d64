"""`amqp-conformance run`: validate the request, run the cases through pytest, summarise, set the exit code.

Exit codes: 0 when no MUST-level case failed, 1 when one did, and the distinct codes of conformance.errors
for usage errors, unknown cases, unreachable brokers, failed authentication and brokers that would not start.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

from .errors import EXIT_MUST_FAILED, EXIT_OK, ConformanceError, UsageError
from .results import DEFAULT_REPORTS_DIR, RunDirectory
from .verdict import SEVERITY, Verdict


def register(sub) -> None:
    p = sub.add_parser("run", help="run the conformance cases against one or more brokers")
    p.add_argument("selectors", nargs="*", metavar="CASE",
                   help="case ids (2.6.8/1), sections (2.6.8) or requirement ids; default: all cases")
    p.add_argument("--broker", action="append", default=[], metavar="NAME|URL",
                   help="managed broker (rabbitmq-4.0, rabbitmq-3.10, qpid-proton-c) or amqp[s]://user:pass@host:port "
                        "(repeatable; default: qpid-proton-c)")
    p.add_argument("--profile", default=None, help="profile for URL brokers: rabbitmq-4, rabbitmq-3, qpid-proton-c, "
                   "generic, or a .toml file")
    p.add_argument("-k", dest="keyword", default=None, help="pytest -k expression over test ids")
    p.add_argument("-n", dest="workers", default="2", help="parallel workers (pytest-xdist; 0 = none; default 2)")
    p.add_argument("--quiet-period", type=float, default=0.5, help="seconds to watch that nothing more arrives")
    p.add_argument("--frame-timeout", type=float, default=5.0, help="bound on each wait for a frame (seconds)")
    p.add_argument("--reports-dir", default=str(DEFAULT_REPORTS_DIR), help="where run directories go (default reports/)")
    p.set_defaults(func=cmd_run, pytest_args=[])

    r = sub.add_parser("replay", help="re-run a saved reproducer (reports/reproducers/*.json) against a broker")
    r.add_argument("reproducer", help="the JSON file a failing exploration saved")
    r.add_argument("--broker", default="qpid-proton-c", metavar="NAME|URL")
    r.add_argument("--profile", default=None)
    r.set_defaults(func=cmd_replay)


def cmd_replay(args) -> int:
    from . import brokers
    from .explore import Violated, replay
    from .runner import RunOptions
    path = Path(args.reproducer)
    if not path.exists():
        raise UsageError(f"no reproducer at {path}; pass a file from reports/reproducers/")
    handle = brokers.start(brokers.resolve(args.broker, args.profile))
    try:
        replay(path, handle, RunOptions())
    except Violated as exc:
        print(f"FAIL {path.name} on {args.broker}: {exc}")
        return EXIT_MUST_FAILED
    except (json.JSONDecodeError, KeyError) as exc:
        from .errors import BadResults
        raise BadResults(f"{path} is not a reproducer ({exc}); pass a file from reports/reproducers/") from None
    finally:
        if handle.managed is not None:
            handle.managed.stop()
    print(f"PASS {path.name} on {args.broker}: the model found nothing to flag")
    return EXIT_OK


def _preflight(brokers_wanted: list[str], profile: str | None) -> list:
    from . import brokers
    from .peer import Peer, Timeouts
    specs = [brokers.resolve(b, profile) for b in brokers_wanted]
    if profile:
        brokers.load_profile(profile)
    for spec in specs:
        if spec.url is not None:
            prof = brokers.load_profile(spec.profile)
            peer = Peer.connect(spec.url, timeouts=Timeouts(frame=10.0, connect=5.0))
            try:
                peer.handshake(sasl=prof.sasl_mechanism)
            finally:
                peer.close()
    return specs


def cmd_run(args) -> int:
    from .cases import select
    brokers_wanted = args.broker or ["qpid-proton-c"]
    selected = select(args.selectors or None)              # exit 3 for an unknown id
    specs = _preflight(brokers_wanted, args.profile)       # exit 2 / 4 / 6 before anything starts
    run = RunDirectory.create(Path(args.reports_dir), brokers={s.name: {"url": s.url and _redact(s.url),
                                                                      "profile": s.profile} for s in specs},
                              options={"cases": args.selectors, "quiet_period": args.quiet_period,
                                       "frame_timeout": args.frame_timeout, "workers": args.workers})
    print(f"amqp-conformance: {len(selected)} cases x {len(specs)} broker(s) -> {run.path}", flush=True)
    import pytest
    package_root = Path(__file__).resolve().parent.parent
    argv = ["--pyargs", "conformance.suite", "-p", "no:cacheprovider", "-p", "no:warnings", "-v", "-rfE",
            "--tb=line", "--rootdir", str(package_root),
            "--run-dir", str(run.path), "--junitxml", str(run.path / "junit.xml"), "-o", "junit_family=xunit1",
            "--alluredir", str(run.path / "allure-results"),
            "--quiet-period", str(args.quiet_period), "--frame-timeout", str(args.frame_timeout)]
    for b in brokers_wanted:
        argv += ["--broker", b]
    if args.profile:
        argv += ["--profile", args.profile]
    for sel in args.selectors:
        argv += ["--case", sel]
    if args.keyword:
        argv += ["-k", args.keyword]
    if str(args.workers) not in ("0", "1"):
        argv += ["-n", str(args.workers)]
    argv += list(args.pytest_args)
    code = pytest.main(argv)
    fatal = run.path / "fatal.json"
    if fatal.exists():
        info = json.loads(fatal.read_text())
        raise ConformanceError(info["message"], exit_code=info["exit_code"])
    run.finish()
    records = run.records()
    _identify(run, records)
    print(summary(records))
    print(f"results: {run.path}/results.jsonl  transcripts: {run.path}/transcripts/  junit: {run.path}/junit.xml")
    if code == 2 or code == 4:   # pytest usage error / interrupted
        raise UsageError("pytest could not run the cases (see above)")
    failed_must = [r for r in records if r["verdict"] == Verdict.FAIL.value and r["level"] == "MUST"]
    return EXIT_MUST_FAILED if failed_must else EXIT_OK


def _redact(url: str) -> str:
    from .peer import parse_url
    return parse_url(url).redacted()


def _identify(run: RunDirectory, records: list[dict]) -> None:
    seen = {}
    for r in records:
        seen.setdefault(r["broker"], {"product": r.get("broker_product"), "version": r.get("broker_version")})
    run.update_meta(brokers=seen)


def summary(records: list[dict]) -> str:
    """Verdict counts per broker, then per section and level."""
    if not records:
        return "no case finished"
    order = [v.value for v in sorted(Verdict, key=lambda v: -SEVERITY[v])]
    lines = []
    by_broker = defaultdict(Counter)
    by_section = defaultdict(Counter)
    by_level = defaultdict(Counter)
    for r in records:
        by_broker[r["broker"]][r["verdict"]] += 1
        by_section[r["section"]][r["verdict"]] += 1
        by_level[r["level"]][r["verdict"]] += 1

    def row(label, counter):
        return f"  {label:<16}" + "".join(f"{counter.get(v, 0):>14}" for v in order)

    header = f"  {'':<16}" + "".join(f"{v:>14}" for v in order)
    lines.append("\nverdicts by broker\n" + header)
    lines += [row(b, c) for b, c in sorted(by_broker.items())]
    lines.append("\nverdicts by section\n" + header)
    from .catalogue import section_key
    lines += [row("§" + s, c) for s, c in sorted(by_section.items(), key=lambda kv: section_key(kv[0]))]
    lines.append("\nverdicts by level\n" + header)
    lines += [row(lv, c) for lv, c in sorted(by_level.items())]
    bad = [r for r in records if r["verdict"] in ("fail", "error", "non-strict")]
    if bad:
        lines.append("\nnot passing:")
        for r in sorted(bad, key=lambda r: (r["broker"], r["case_id"])):
            lines.append(f"  {r['broker']:<14} {r['case_id']:<9} {r['verdict']:<10} {r['reason'][:110]}")
    return "\n".join(lines)
