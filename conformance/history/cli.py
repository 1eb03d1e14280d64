"""`amqp-conformance report | diff | bisect | bisect-run`: the commands over results and their history.

This module owns their arguments, progress lines and exit codes; the work is in store (ingest), analysis
(report model), conformance.report (rendering), diff and bisect. `bisect` and `bisect-run` choose their case
and options as `run` does (conformance.run: selectors, -k, --frame-timeout, ...) and run it through the run
pipeline.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..errors import EXIT_MUST_FAILED, EXIT_OK, ConformanceError, SparkUnavailable, UsageError
from .. import options as run_options
from ..results import REGRESSION, atomic_write_text, change_kind, check_verdict, is_broken, is_untestable
from ..verdict import Verdict
from ..run import gate as run_gate
from ..run import selection


def _spark_options(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--spark-master", default=None, metavar="URL",
                   help="run on this Spark master (spark://host:port; default: local Spark, local[2])")
    g.add_argument("--spark-remote", default=None, metavar="sc://HOST:PORT", help="use this Spark Connect server")


def _history_options(p) -> None:
    run_options.add_arguments(p, "reports_dir")
    p.add_argument("--history", default=None, help="history directory (default <reports-dir>/history)")
    _spark_options(p)


def register(sub) -> None:
    p = sub.add_parser("report", help="ingest runs into the history (Spark) and write the HTML/Markdown/JSON report")
    p.add_argument("runs", nargs="*", metavar="RUN_DIR",
                   help="run directories or directories holding them (default: every run under <reports-dir>/runs)")
    p.add_argument("--out", default=None, help="report directory (default <reports-dir>/report)")
    p.add_argument("--no-ingest", action="store_true", help="report on the history as it is")
    p.add_argument("--allure", action="store_true", help="also build the Allure 3 HTML report of the runs")
    p.add_argument("--compact", action="store_true",
                   help="merge every batch of the history into one before the report (safe to interrupt)")
    run_gate.add_arguments(p, write=False)
    _history_options(p)
    p.set_defaults(func=cmd_report)

    d = sub.add_parser("diff", help="regressions and fixes between two runs or two broker versions (exit 1 if any "
                                    "case regressed)")
    d.add_argument("a", metavar="A", help="run directory, run id, or broker@version (from the history)")
    d.add_argument("b", metavar="B")
    d.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _history_options(d)
    d.set_defaults(func=cmd_diff)

    b = sub.add_parser("bisect", help="first build of an ordered series where a case's verdict changes "
                                      "(a regression or a fix)")
    selection.add_arguments(b)
    b.add_argument("--build", action="append", default=[], metavar="NAME|URL",
                   help="a build, in order, oldest first (managed broker name or URL); repeatable")
    b.add_argument("--builds", default=None, metavar="FILE.toml",
                   help="builds from a file: [[build]] label, broker | url | command (+ url), profile")
    b.add_argument("--series", default=None, metavar="NAME",
                   help="the managed releases of a series, oldest first (activemq, artemis, qpid-broker-j, "
                        "rabbitmq), or a client library's pinned releases (any library `clients list` shows: rhea, "
                        "fe2o3-amqp, vertx-proton, ...); "
                        "each is provisioned when the search first needs it")
    b.add_argument("--repo", default=None, metavar="PATH",
                   help="your clone of the broker's repository: after the releases, bisect the commits between the "
                        "two where the verdict changes, each built by the series' recipe (fixtures/recipes)")
    b.add_argument("--recipe", default=None, metavar="NAME|FILE",
                   help="with --repo: how the broker is built at a commit (default: the series' recipe)")
    b.add_argument("--no-history", action="store_true", help="run every point the search needs")
    _history_options(b)
    run_options.add_arguments(b, "frame_timeout", "quiet_period", "connect_timeout")
    b.set_defaults(func=cmd_bisect)

    g = sub.add_parser("bisect-run", help="one `git bisect run` step: build, start, run a case; exit 0 good, "
                                          "1 bad, 125 cannot test")
    selection.add_arguments(g)
    g.add_argument("--start", default=None, metavar="CMD", help="command that starts the broker ({port} filled in)")
    g.add_argument("--url", default=None, help="where the started broker listens (amqp://host:{port})")
    run_options.add_broker_arguments(g.add_argument, note="instead of --start")
    g.add_argument("--build-cmd", default=None, metavar="CMD", help="run first (in the current directory); "
                                                                   "failure -> 125")
    g.add_argument("--label", default=None, help="name of this build in results (default: git describe)")
    g.add_argument("--ready-timeout", type=float, default=60.0)
    run_options.add_arguments(g, "frame_timeout", "quiet_period", "connect_timeout", "reports_dir")
    g.set_defaults(func=cmd_bisect_run)


def _say(message: str) -> None:
    print(f"[amqp-conformance] {message}", flush=True)


def _reports(args) -> Path:
    return Path(args.reports_dir) if args.reports_dir else run_options.default_reports_dir()


def _history(args):
    from .store import History
    return History(Path(args.history) if args.history else _reports(args) / "history")


def _one_case(args, kind: str = "broker"):
    """The one case `bisect` / `bisect-run` follows: the selectors and -k must name exactly one."""
    cases = selection.select_cases(args.selectors, args.keyword, kind)   # exit 3 unknown case, 2 bad -k
    if len(cases) != 1:
        shown = ", ".join(c.id for c in cases[:6]) + (", ..." if len(cases) > 6 else "")
        raise UsageError(f"bisect follows one case; the selection names {len(cases)} ({shown}): give one case id "
                         "or narrow it with -k")
    return cases[0]


def _spark(args):
    try:
        import pyspark  # noqa: F401  (the report extras)
    except ImportError:
        raise SparkUnavailable(f"`{args.command}` needs PySpark, which is not installed; run ./dev report (it "
                               "installs the report extras, Java and Allure) or pip install "
                               "'amqp-conformance[report]'") from None
    from .spark import SparkTarget, session
    t0 = time.monotonic()
    # Spark's own SPARK_REMOTE (a CI job with a Spark Connect service) unless an option says otherwise
    remote = args.spark_remote or (None if args.spark_master else os.environ.get("SPARK_REMOTE") or None)
    target = SparkTarget(master=args.spark_master, remote=remote)
    _say(f"starting Spark ({target.label})")
    spark = session(target, log_file=_reports(args) / "spark.log")
    _say(f"Spark ready in {time.monotonic() - t0:.1f} s")
    return spark


@contextlib.contextmanager
def spark_job(what: str):
    """A Spark failure inside (not bad input, which raises ConformanceError itself) becomes one line, exit 13."""
    try:
        yield
    except ConformanceError:
        raise
    except Exception as exc:  # noqa: BLE001 - only Spark's and py4j's own errors are turned into one line
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SparkUnavailable(f"the Spark job failed while {what} ({first}); Spark's log is in "
                               "<reports-dir>/spark.log") from None


def cmd_report(args) -> int:
    from ..report import json_model, render_markdown, validate_model, write_report
    from . import bisect_log
    from .analysis import build_model
    from .store import check_run_dirs, find_run_dirs
    reports = _reports(args)
    history = _history(args)
    out = Path(args.out) if args.out else reports / "report"
    gate = run_gate.from_args(args)                 # a bad expectations file: exit 16 before Spark starts
    run_dirs: list[Path] = []
    if not args.no_ingest:
        sources = [Path(r) for r in args.runs] or [reports]
        run_dirs = find_run_dirs(sources)           # BadResults before Spark starts
        check_run_dirs(run_dirs)                    # a finished run with records missing: exit 12, nothing ingested
    spark = _spark(args)
    t0 = time.monotonic()
    if run_dirs:
        with spark_job("ingesting runs"):
            history.ingest(spark, run_dirs, progress=_say)
    if getattr(args, "compact", False) and history.batch_dirs():
        with spark_job("compacting the history"):
            history.compact(spark, progress=_say)
    t1 = time.monotonic()
    _say("analysing the history")
    with spark_job("analysing the history"):
        model = build_model(spark, history, bisects=bisect_log.read_records(reports))
    if gate is not None:
        run_gate.mark_model(model, gate)            # each cell: expected, unexpected ..., new (docs/ci.md)
    validate_model(model)
    out.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(model)
    atomic_write_text(out / "report.json", json.dumps(json_model(model), indent=1, sort_keys=True, default=str))
    written = write_report(model, out)
    atomic_write_text(out / "report.md", markdown)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    _say(f"ingest {t1 - t0:.1f} s, analysis {time.monotonic() - t1:.1f} s; "
         f"{model['history']['runs']} runs, {model['history']['records']} records, {len(model['columns'])} "
         f"releases; report.html {written['html_bytes'] / 1e6:.2f} MB, {written['side_files']} side files "
         f"{written['side_bytes'] / 1e6:.1f} MB")
    if args.allure:
        from .allure import build_allure
        build_allure(run_dirs or find_run_dirs([reports]), out / "allure")
    print(f"report: {out / 'report.html'}\nsummary: {out / 'report.md'}\ndata: {out / 'report.json'}")
    return EXIT_OK


def cmd_diff(args) -> int:
    from .diff import compare, format_diff, is_column, side_from_history, side_from_run
    reports = _reports(args)
    sides = []
    spark = None
    for spec in (args.a, args.b):
        if is_column(spec):
            if spark is None:
                spark = _spark(args)
            with spark_job(f"reading {spec} from the history"):
                sides.append(side_from_history(spec, spark, _history(args)))
        else:
            sides.append(side_from_run(spec, reports))
    result = compare(*sides)
    if args.json:
        print(json.dumps({"a": result.a, "b": result.b, "changes": result.rows, "only_a": result.only_a,
                          "only_b": result.only_b, "regressed": result.regressed}, indent=1))
    else:
        print(format_diff(result))
    return EXIT_MUST_FAILED if result.regressed else EXIT_OK


def _commit_source(args):
    """(recipe, clone) for `bisect --repo`, checked before anything runs: the recipe (named, or the series'),
    the clone, and a tag in it for every release of the series."""
    from ..brokers.source import Clone, load_recipe, recipe_for_series
    if not args.repo:
        raise UsageError("--recipe builds commits of your clone: give --repo PATH too")
    if args.build or args.builds:
        raise UsageError("--repo bisects the commits between two releases of a series: give --series NAME (or "
                         "--recipe), not --build/--builds")
    if args.recipe:
        recipe = load_recipe(args.recipe)
        own = recipe.releases.series or recipe.name
        if args.series and args.series != own:
            raise UsageError(f"recipe {recipe.name} is for the series {own!r}, not {args.series!r}; leave --series "
                             "out or give the series' own recipe")
    elif args.series:
        recipe = recipe_for_series(args.series)
        if recipe is None:
            from ..brokers.source import available_recipes
            raise UsageError(f"no recipe builds the series {args.series!r} from source; use one of "
                             f"{', '.join(available_recipes())} or give --recipe FILE (fixtures/recipes/README.md)")
    else:
        raise UsageError("--repo needs the releases to start from: give --series NAME or --recipe NAME|FILE")
    clone = Clone(args.repo)
    return recipe, clone


def _release_builds(recipe, clone) -> list:
    """The releases of a recipe's series, oldest first, each with its tag checked in the clone."""
    from ..run.builds import Build
    from .. import brokers
    if recipe.releases.series:
        names = brokers.series(recipe.releases.series)
        builds = [Build(label=name, broker=name) for name in names]
    else:
        builds = [Build(label=recipe.release_label(v)) for v in recipe.releases.versions]
    for b in builds:
        version = recipe.version_of(b.label)
        if version is None:
            raise UsageError(f"recipe {recipe.path}: release {b.label} does not fit releases.label = "
                             f"{recipe.releases.label!r}; fix the label template")
        tag = recipe.tag(version)
        if clone.commit_of(tag) is None:
            raise UsageError(f"the clone at {clone.path} has no tag {tag} (release {b.label}); fetch the tags "
                             "(git fetch --tags) or check releases.tag in the recipe")
    return builds


def _known(args, case, labels: list[str], prefix: str | None) -> dict[str, dict]:
    """What the history says about `case` on these builds (and on every build labelled `prefix...`): the latest
    record of each, {label: {verdict, reason, findings, run_id}}; empty without a history or with --no-history."""
    history = _history(args)
    if args.no_history or not history.batch_dirs():
        return {}
    from pyspark.sql import functions as F
    spark = _spark(args)
    wanted = F.col("broker").isin(labels)
    if prefix:
        wanted = wanted | F.col("broker").startswith(prefix)
    with spark_job("reading the history"):
        rows = (history.records(spark).where((F.col("case_id") == case.id) & wanted)
                .groupBy("broker").agg(F.max_by(F.struct("verdict", "reason", "findings", "run_id"),
                                                "started_at").alias("last"))
                .collect())
    known = {}
    for r in rows:
        last = r["last"]
        findings = []
        if last["findings"]:
            with contextlib.suppress(ValueError):
                findings = json.loads(last["findings"])
        known[r["broker"]] = {"verdict": last["verdict"], "reason": last["reason"] or "", "findings": findings,
                              "run_id": last["run_id"]}
    _say(f"the history knows {sum(1 for lb in labels if lb in known)} of {len(labels)} builds for {case.id}"
         + (f" and {sum(1 for k in known if k not in labels)} commit build(s)" if prefix else ""))
    return known


def cmd_bisect(args) -> int:
    from . import bisect_log
    from ..run.builds import Build, build_from_arg, load_builds, run_case_on
    from .bisect import RAN, first_change
    from ..clients import LIBRARIES
    t_start = time.monotonic()
    client_series = bool(args.series) and args.series in {lib.name for lib in LIBRARIES}
    case = _one_case(args, "client" if client_series else "broker")
    options = run_options.from_args(args, workers=0)
    given = [bool(args.builds), bool(args.build), bool(args.series)]
    if sum(given) > 1:
        raise UsageError("give builds one way: --build (repeatable), --builds FILE or --series NAME")
    source = _commit_source(args) if (args.repo or args.recipe) else None
    if source is not None:
        recipe, clone = source
        builds = _release_builds(recipe, clone)
    elif client_series:                 # a client library's pinned releases, oldest first
        from ..clients import series as client_releases
        builds = [Build(label=lib.label, client=lib.label) for lib in client_releases(args.series)]
    elif args.series:
        from .. import brokers
        builds = [Build(label=name, broker=name) for name in brokers.series(args.series)]
    else:
        builds = load_builds(Path(args.builds)) if args.builds else [build_from_arg(b) for b in args.build]
    if len(builds) < 2:
        raise UsageError("bisect needs at least two builds, oldest first")
    known = _known(args, case, [b.label for b in builds], f"{source[0].name}-" if source else None)
    records: dict[int, dict] = {}
    release_builder = None
    if source is not None and not recipe.releases.series:      # releases built from their tags
        from ..brokers.source import Builder
        release_builder = Builder(recipe, clone, say=_say)

    def runnable(i: int):
        """The build to run (a release built from its tag first), or why it cannot run."""
        build = builds[i]
        if release_builder is None:
            return build
        from ..brokers.source import startable
        commit = clone.commit_of(recipe.tag(recipe.version_of(build.label)))
        built = release_builder.build(commit)
        if not built.ok:
            return f"does not build: {built.error}"
        return Build(label=build.label, **startable(recipe, release_builder, built, build.label))

    def verdict_of(i: int) -> tuple[str, str]:
        """(verdict, source) of the case on build i: from the history when it has a testable one, else a run."""
        build = builds[i]
        last = known.get(build.label)
        if last and not is_untestable(last["verdict"]):
            check_verdict(last["verdict"], f"the history's record of {case.id} on {build.label}")
            records[i] = {**last, "source": "history"}
            _say(f"[{i + 1}/{len(builds)}] {build.label}: {last['verdict']} (from the history)")
            return last["verdict"], "history"
        _say(f"[{i + 1}/{len(builds)}] {build.label}: running {case.id}")
        target = runnable(i)
        if isinstance(target, str):
            record = {"run_id": None, "verdict": Verdict.ERROR.value, "reason": target, "findings": []}
        else:
            record = run_case_on(target, case, options.reports_dir, options)
        check_verdict(record["verdict"], f"the record of {case.id} on {build.label}")
        records[i] = {**record, "source": "run"}
        _say(f"[{i + 1}/{len(builds)}] {build.label}: {record['verdict']} - {record['reason'][:100]}")
        return record["verdict"], (RAN if record["run_id"] else "start")

    def shown(i: int) -> str:
        r = records[i]
        where = "history" if r["source"] == "history" else (f"run {r['run_id']}" if r["run_id"] else "not started")
        return f"{r['verdict']} ({where}): {r['reason']}"

    started_at = bisect_log.now()
    result = first_change(len(builds), verdict_of)
    print(f"\nbisect {case.id} over {len(builds)} builds:")
    for step in sorted(result.steps, key=lambda s: s.index):
        state = step.verdict if result.counted(step) else "skip"
        print(f"  {step.index + 1:>3}. {builds[step.index].label:<24} {state:<14} {shown(step.index)[:100]}")
    ran = sum(1 for s in result.steps if s.source == "run")
    counts = f"{ran} run(s), {len(result.steps) - ran} from the history"
    before = builds[result.before].label if result.changed is not None else None
    after = builds[result.changed].label if result.changed is not None else None
    kind = change_kind(result.verdict_before, result.verdict_after) if result.changed is not None else ""
    log = {
        "case_id": case.id, "series": args.series or None, "command": _bisect_command(args, case.id, builds),
        "builds": [b.label for b in builds], "before": before, "changed": after, "kind": kind, "note": result.note,
        "verdict_before": result.verdict_before, "verdict_after": result.verdict_after,
        "steps": [{"build": builds[s.index].label, "verdict": s.verdict, "source": s.source}
                  for s in sorted(result.steps, key=lambda s: s.index)],
        "started_at": started_at}
    if result.changed is None or source is None:
        bisect_log.write_record(options.reports_dir, {**log, "finished_at": bisect_log.now()})
    if result.changed is None:
        print(f"no change found: {result.note}; {counts}")
        return EXIT_MUST_FAILED
    if kind == REGRESSION and not is_broken(result.verdict_before):
        print(f"first failing build: {after}")
    print(f"the verdict of {case.id} changes between {before} and {after}: {result.verdict_before} -> "
          f"{result.verdict_after} ({kind})" + (f"; {result.note}" if result.note else "") + f"; {counts}")
    if result.errors_counted:
        print("(an end of the series gives error: the case could not be judged there, for the reason above; bisect "
              "counted error as a verdict and named the build where it starts or stops)")
    if source is None:
        return EXIT_OK
    answer = _bisect_commits(args, case, options, recipe, clone, builds, records, result, known)
    from .commits import answer_json
    bisect_log.write_record(options.reports_dir, {**log, "commit": answer_json(answer),
                                                  "finished_at": bisect_log.now()})
    print(f"the whole bisect took {time.monotonic() - t_start:.0f} s")
    return EXIT_OK if answer.commit is not None else EXIT_MUST_FAILED


def _bisect_commits(args, case, options, recipe, clone, builds, records, result, known):
    """The commit stage of `bisect --repo`: the commits between the tags of the two releases found."""
    from ..brokers.source import Builder, JavaOverlay
    from .commits import CommitBisect, Point, format_answer

    def release_point(i: int) -> Point:
        label = builds[i].label
        r = records[i]
        return Point(clone.commit_of(recipe.tag(recipe.version_of(label))), label, r["verdict"], "release",
                     r["reason"], r.get("findings") or [], r.get("run_id"))

    old, new = release_point(result.before), release_point(result.changed)
    overlay = isinstance(recipe.build, JavaOverlay)
    builder = Builder(recipe, clone, base_version=recipe.version_of(old.label) if overlay else None, say=_say)
    print(f"\nbisecting the commits of {clone.path} from {recipe.tag(recipe.version_of(old.label))} "
          f"({old.verdict}) to {recipe.tag(recipe.version_of(new.label))} ({new.verdict}), recipe {recipe.name} "
          f"({recipe.build.kind}" + (f" on top of {old.label})" if overlay else ")"), flush=True)
    search = CommitBisect(case=case, recipe=recipe, clone=clone, builder=builder, old=old, new=new, known=known,
                          options=options, say=_say, new_is_build=not overlay)
    answer = search.run(clone.count(old.commit, new.commit))
    kind = change_kind(old.verdict, answer.after.verdict) if answer.after else ""
    print(format_answer(answer, case.id, kind))
    return answer


def _bisect_command(args, case_id: str, builds: list) -> str:
    """The bisect as a command line with build labels only (a URL may hold a password: never written)."""
    if args.series:
        return f"amqp-conformance bisect {case_id} --series {args.series}"
    if args.builds:
        return f"amqp-conformance bisect {case_id} --builds {args.builds}"
    return f"amqp-conformance bisect {case_id} " + " ".join(f"--build {b.label}" for b in builds)


def cmd_bisect_run(args) -> int:
    """Exit codes follow `git bisect run`: 0 good, 1 bad, 125 cannot test, 128 (abort) for a usage error or a
    record whose verdict the vocabulary does not know."""
    from ..run.builds import Build, build_from_arg, run_case_on
    from .bisect import BISECT_ABORT, BISECT_BAD, BISECT_GOOD, BISECT_SKIP, GOOD, BAD, outcome_of
    try:
        case = _one_case(args)
        options = run_options.from_args(args, workers=0)
        if args.broker:
            build = build_from_arg(args.broker)
        elif args.start and args.url:
            build = Build(label=args.label or _git_describe() or "HEAD", url=args.url, command=args.start,
                          profile=args.profile, ready_timeout=args.ready_timeout)
        else:
            raise UsageError("give --start CMD --url URL, or --broker NAME|URL")
        if args.label and args.broker:
            build = Build(**{**build.__dict__, "label": args.label})
    except ConformanceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return BISECT_ABORT   # > 127 aborts the bisection (a usage error is not a bad commit)
    if args.build_cmd:
        _say(f"building: {args.build_cmd}")
        proc = subprocess.run(args.build_cmd, shell=True)
        if proc.returncode != 0:
            _say(f"build failed (exit {proc.returncode}): skip")
            return BISECT_SKIP
    record = run_case_on(build, case, options.reports_dir, options)
    try:
        outcome = outcome_of(record["verdict"])
    except ConformanceError as exc:     # a verdict the vocabulary does not know: abort, never a bad commit
        print(f"error: {exc.message}", file=sys.stderr)
        return BISECT_ABORT
    _say(f"{build.label}: {case.id} {record['verdict']} - {record['reason'][:120]}")
    return {GOOD: BISECT_GOOD, BAD: BISECT_BAD}.get(outcome, BISECT_SKIP)


def _git_describe() -> str | None:
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
