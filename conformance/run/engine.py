"""The one run loop: cases x targets scheduled over workers by pytest, each result recorded and reported.

This module owns how a run happens. `execute(plan, console)` starts the brokers (`targets.Brokers`), creates
the run directory with the number of case x target pairs it schedules, and runs pytest in this process on the
suite's anchor (`conformance/suite`, whose collector, `conformance.run.items.Suite`, makes a `CaseItem` per
pair) with a `Pipeline` object passed to `pytest.main(..., plugins=[pipeline])`. pytest does what it is good
at: pytest-xdist schedules the items over worker processes (-n), the junitxml plugin writes junit.xml,
allure-pytest writes allure-results. Its own console output is kept off the terminal; the `console` shows the verdicts instead.

`Pipeline` is that plugin object, in three roles: the controller of a run (`execute`, or `pytest --broker ...`
through `conformance.run.plugin`), a pytest-xdist worker (built from what the controller sends it), or
both at once when cases run in this process (-n 0/1). A worker gets its targets once, from the controller
(`pytest_configure_node`): the options, the case ids, the targets and the brokers' records without their
credentials; those (URLs with passwords, hook tools) travel in a 0600 file of the run's own
(`Brokers.crossing`), never in pytest-xdist's workerinput. Every case of every command goes through
`Pipeline.run_one(case, label)`, the only caller of the one-case runner (`conformance.casekit.executor.run_case`):
run it on the target's handle, let a wrapped broker annotate it, serialise its record once (the line
results.jsonl gets), and hand that line to the controller on the test report (`report.amqp_record`), where
the console prints it. A pair whose item could not even start (its broker could not be attached) gets an
`error` record all the same, so a finished run has a record per scheduled pair.

Nothing travels through files but the results: brokers are started (and fail, with their exit codes) before
pytest runs; what happened inside pytest is read off the plugin object (the records, a Ctrl-C through
`pytest_keyboard_interrupt`, a stop by --maxfail) and off `pytest.main`'s exit status and captured output.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..errors import ConformanceError, RunBroken, UsageError
from ..verdict import exit_code  # noqa: F401  (a finished run's exit code; console and tests import it here)
from .directory import RunDirectory
from ..options import RunOptions
from ..results import RESULTS_FILE, parse_line, read_records, record_line
from .items import CASES_NODEID, PIPELINE, SUITE_DIR, CaseItem
from .targets import Brokers, Target

WORKER_INPUT = "amqp_conformance"        # key of the plan in pytest-xdist's workerinput


@dataclass
class Plan:
    """What to run: the cases, the brokers (BrokerSpecs to start or check, or handles running in this
    process), the targets over them (default: each broker as it is), options and what run.json says."""

    cases: list
    brokers: list
    options: RunOptions = field(default_factory=RunOptions)
    targets: list[Target] | None = None
    selection: dict = field(default_factory=dict)     # how the cases were chosen (selectors, -k): into run.json
    meta: dict = field(default_factory=dict)          # more run.json fields, e.g. {"kind": "selfcheck"}
    run_id: str | None = None
    junit: bool = False
    allure: bool = False
    pytest_args: list[str] = field(default_factory=list)

    def resolved_targets(self) -> list[Target]:
        if self.targets is not None:
            return list(self.targets)
        return [Target(b.name, b.name) for b in self.brokers]

    @property
    def scheduled(self) -> int:
        return len(self.cases) * len(self.resolved_targets())


@dataclass
class Outcome:
    run: RunDirectory
    records: list[dict]            # the records of this run, in the order the cases finished
    complete: bool                 # every scheduled pair has its record

    @property
    def exit_code(self) -> int:
        return exit_code(self.records)


def execute(plan: Plan, console=None) -> Outcome:
    """Run `plan`: start the brokers, run every case on every target, record and report each result; stop the
    brokers. Raises ConformanceError for what stops a run before it starts (its exit code says what),
    RunBroken (exit 14) when pytest cannot run the cases, KeyboardInterrupt after a Ctrl-C (the finished
    cases are kept and shown)."""
    if not plan.cases:
        raise UsageError("no case is selected; run `amqp-conformance list --cases` to see them")
    targets = plan.resolved_targets()
    options = plan.options
    from .. import brokers as _brokers
    if not options.in_process and not all(isinstance(b, _brokers.BrokerSpec) for b in plan.brokers):
        options = RunOptions(**{**options.to_json(), "workers": 0})    # a handle in this process: no workers
    started = Brokers.start(plan.brokers, options, say=console.note if console is not None else None,
                            own_node_cases=plan.cases if plan.targets is None else ())
    try:
        run = RunDirectory.create(options.reports_dir, plan.run_id, brokers=started.identities(),
                                  options={**options.to_json(), **plan.selection}, scheduled=plan.scheduled,
                                  **plan.meta)
        pipeline = Pipeline(options, [c.id for c in plan.cases], targets, started, run, console)
        pipeline.expected = expected_durations(Path(options.reports_dir), exclude=run.path)
        if console is not None:
            console.begin(plan.scheduled, run.path, cases=len(plan.cases), targets=[t.label for t in targets])
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            status = pytest.main(_argv(plan, options, run), plugins=[pipeline])
        interrupted = pipeline.interrupted
        if status == pytest.ExitCode.INTERRUPTED and not interrupted:
            raise RunBroken(f"pytest could not collect the cases ({_first_error(output.getvalue())}); "
                            "reinstall amqp-conformance (./dev setup)")
        if status == pytest.ExitCode.USAGE_ERROR:
            raise UsageError(f"pytest refused its arguments: {_first_error(output.getvalue())}; check what you "
                             "passed after --")
        if status in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED):
            (run.path / "pytest.log").write_text(output.getvalue(), "utf-8")
            raise RunBroken(f"pytest stopped the run ({_first_error(output.getvalue())}); its output is in "
                            f"{run.path / 'pytest.log'}, the results so far beside it")
        if not interrupted and not pipeline.stopped_early() and len(pipeline.records) < plan.scheduled:
            # pytest ended as if all went well, yet cases never reported (e.g. its workers could not import the
            # suite): the run itself broke, and no verdict of the missing cases may read as green
            (run.path / "pytest.log").write_text(output.getvalue(), "utf-8")
            raise RunBroken(f"{len(pipeline.records)} of {plan.scheduled} scheduled cases finished "
                            f"({_first_error(output.getvalue())}); pytest's output is in "
                            f"{run.path / 'pytest.log'}, the results so far beside it")
        complete = run.finish(stopped="interrupted (Ctrl-C)" if interrupted else
                              ("pytest stopped early (e.g. --maxfail)" if pipeline.stopped_early() else None))
        run.update_meta(brokers=_identities_from(pipeline.records, started.identities()))
        outcome = Outcome(run, pipeline.records, complete)
        if console is not None:
            console.end(outcome, interrupted=interrupted)
        if interrupted:
            raise KeyboardInterrupt
        return outcome
    finally:
        started.close()


def _argv(plan: Plan, options: RunOptions, run: RunDirectory) -> list[str]:
    # The suite by its directory, with its own ini file and no conftest.py from above it: nothing of the
    # directory `run` is started from (its pytest.ini, conftest.py, installed pytest plugins) takes part.
    argv = [str(SUITE_DIR), "-c", str(SUITE_DIR / "pytest.ini"), "--rootdir", str(SUITE_DIR.parent.parent),
            "--confcutdir", str(SUITE_DIR), "--disable-plugin-autoload", "-p", "conformance.run.plugin",
            "-p", "no:cacheprovider", "-p", "no:warnings", "-p", "no:stepwise", "-v", "--tb=line", "--run-dir", str(run.path)]
    if not options.in_process:
        argv += ["-p", "xdist.plugin", "-n", str(options.workers)]
    if plan.junit:
        argv += ["--junitxml", str(run.path / "junit.xml"), "-o", "junit_family=xunit1"]
    if plan.allure:
        argv += ["-p", "allure_pytest.plugin", "--alluredir", str(run.path / "allure-results")]
    return argv + list(plan.pytest_args)


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("ERROR", "E ", "INTERNALERROR")):
            return line[:300]
    return (lines[-1] if lines else "no output")[:300]


def _identities_from(records: list[dict], started: dict | None = None) -> dict:
    """broker -> product and version as the cases' own `open` frames announced them, with the start time of
    each node and the node of its own (alarm and queue-limit cases) of a broker that had one."""
    seen: dict[str, dict] = {}
    for r in records:
        if r.get("broker_product") or r.get("broker_version"):
            seen.setdefault(r["broker"], {"product": r.get("broker_product"), "version": r.get("broker_version")})
    for name, identity in (started or {}).items():
        extra = {k: identity[k] for k in ("start_s", "own_node") if k in identity}
        if name in seen and extra:
            seen[name].update(extra)
    return seen


class Pipeline:
    """The pytest plugin object of one run (see the module docstring for its roles)."""

    def __init__(self, options: RunOptions, case_ids: list[str], targets: list[Target], brokers: Brokers,
                 run: RunDirectory | None = None, console=None, *, owns_brokers: bool = False):
        self.options = options
        self.case_ids = list(case_ids)
        self.targets = {t.label: t for t in targets}
        self.brokers = brokers
        brokers.answer_timeout = options.frame_timeout
        self.run = run
        self.console = console
        self.owns_brokers = owns_brokers      # stop them at pytest_unconfigure (pytest --broker ...)
        self.records: list[dict] = []         # controller: records of the finished cases, as reported
        self.interrupted = False
        self.scheduled: int | None = None
        self._current: str | None = None      # the record of the case that just ran, as one JSON line
        self._session = None
        self._worker = False
        self.expected: dict[str, float] = {}  # "<label> <case id>" -> its duration in a recent run (ordering)

    # -- building it ---------------------------------------------------------------------------------------

    @classmethod
    def from_pytest_options(cls, config) -> "Pipeline":
        """For `pytest --broker NAME|URL ...` (the suite used as a pytest plugin): brokers started here and
        stopped at the end of the session; --run-dir gets a run directory like `amqp-conformance run` writes."""
        from ..options import FIELDS
        from .selection import select_cases
        from .targets import resolve
        given = {name: config.getoption(FIELDS[name].metadata["flag"]) for name in
                 ("frame_timeout", "quiet_period", "connect_timeout")}
        options = RunOptions(**{k: v for k, v in given.items() if v is not None})
        cases = select_cases(config.getoption("--case") or None)
        specs = resolve(config.getoption("--broker"), config.getoption("--profile"))
        started = Brokers.start(specs, options, own_node_cases=cases)
        run = None
        run_dir = config.getoption("--run-dir")
        if run_dir:
            run = RunDirectory.at(Path(run_dir), brokers=started.identities(),
                                  options={**options.to_json(), "cases": config.getoption("--case")})
        return cls(options, [c.id for c in cases], [Target(s.name, s.name) for s in specs], started, run,
                   owns_brokers=True)

    @classmethod
    def for_worker(cls, data: dict, run_dir: str | None) -> "Pipeline":
        """A pytest-xdist worker's pipeline, from what the controller's `worker_input` sent it."""
        pipeline = cls(RunOptions.from_json(data["options"]), data["cases"], [Target(**t) for t in data["targets"]],
                       Brokers.attached(data["brokers"], data["credentials"]),
                       RunDirectory(Path(run_dir)) if run_dir else None)
        pipeline.expected = dict(data.get("expected") or {})
        return pipeline

    def worker_input(self) -> dict:
        """What a worker needs, as plain values and without credentials (they stay in the run's 0600 file)."""
        records, credentials = self.brokers.crossing()
        return {"options": self.options.to_json(), "cases": self.case_ids,
                "targets": [t.to_json() for t in self.targets.values()], "brokers": records,
                "credentials": credentials, "expected": self.expected}

    # -- what the suite's test and fixtures ask for -----------------------------------------------------------

    def cases(self) -> list:
        from ..cases import load_all, load_clients
        known = {**load_all(), **load_clients()}
        return [known[cid] for cid in self.case_ids]

    def labels(self) -> list[str]:
        return list(self.targets)

    def run_one(self, case, label: str):
        """Run one case on the target `label`: the result, recorded (results.jsonl, transcripts) and kept for
        the test report. This is the only place a case is run."""
        from ..casekit.executor import run_case
        broker = self.brokers.handle(self.targets[label])
        own = self.brokers.for_case(broker, case)      # alarm and queue-limit cases: the node of their own
        self.brokers.bound(own)
        result = run_case(case, own, self.options)
        if own is not broker:
            result.observations["node"] = "own node"
        from ..brokers.interface import WrappedBroker
        if isinstance(broker, WrappedBroker):
            broker.annotate(result)
        self._keep(result)
        return result

    def _keep(self, result) -> None:
        """Serialise the record once: the line results.jsonl gets is the one the controller reads."""
        if self.run is not None:
            report = self.run.bug_report_of(result)
            if report is not None:
                result.observations["bug_report"] = report
        self._current = record_line(result, self.run.run_id if self.run is not None else None)
        if self.run is not None:
            self.run.record(result, self._current)

    # -- pytest hooks ----------------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config) -> None:
        config.stash[PIPELINE] = self
        self._worker = hasattr(config, "workerinput")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:       # pytest-xdist controller: what a worker needs
        node.workerinput[WORKER_INPUT] = self.worker_input()

    def pytest_sessionstart(self, session) -> None:
        self._session = session

    def pytest_collection_finish(self, session) -> None:      # in-process runs (the controller collects)
        self._scheduled(sum(1 for item in session.items if _is_case(item.nodeid)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:   # workers collected
        self._scheduled(sum(1 for nodeid in ids if _is_case(nodeid)))

    def _scheduled(self, count: int) -> None:
        if self.scheduled is None:
            self.scheduled = count
            if self.run is not None and not isinstance(self.run.read_meta().get("scheduled"), int):
                self.run.update_meta(scheduled=count)

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """On pytest-xdist workers: the own-node cases (alarms, queue limits) first, so that xdist's first
        batch of consecutive items (about a quarter of a worker's share, at least 2) gives them to one worker,
        which runs them one after another on the broker's second node while the others run the rest (they
        would otherwise wait for one another's exclusive lock); then the others longest first, by their
        duration in a recent run (`expected_durations`; unknown ones keep their place after those), so that no
        long case is left for the end while the other workers idle. Every worker orders alike (the order
        comes from the controller). A hint only: where and when a case runs does not change what it finds."""
        if int(getattr(config, "workerinput", {}).get("workercount", 1) or 1) > 1:
            items[:] = run_order(items, lambda item: getattr(getattr(item, "case", None), "own_node", False),
                                 lambda item: self.expected.get(_pair_of(item)))

    def pytest_runtest_setup(self, item) -> None:
        self._current = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if not isinstance(item, CaseItem):
            return report
        if report.when == "call" and self._current is not None:
            report.amqp_record = self._current
        elif report.when in ("setup", "call") and report.failed and self._current is None:
            report.amqp_record = self._broken(item, report)
        return report

    def _broken(self, item, report) -> dict | None:
        """An error record for a pair whose test broke outside the case (e.g. its broker could not be
        attached in this worker), so that every scheduled pair has a record."""
        from ..results import CaseResult
        from ..verdict import Verdict
        case, label = item.case, item.label
        reason = (report.longreprtext.strip().splitlines() or ["no message"])[-1]
        result = CaseResult(case.id, case.title, case.section, case.level, list(case.requirements),
                            Verdict.ERROR, f"the case could not run ({report.when}): {reason[:300]}", label)
        self._keep(result)
        return self._current

    def pytest_runtest_logreport(self, report) -> None:
        line = getattr(report, "amqp_record", None)
        if line is None or self._worker:
            return
        record = parse_line(line, "a worker's record")
        self.records.append(record)
        if self.console is not None:
            self.console.case(record)

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        self.interrupted = True

    def pytest_sessionfinish(self, session) -> None:
        if self.owns_brokers and self.run is not None and not self._worker:     # pytest --run-dir DIR
            self.run.finish(stopped="interrupted (Ctrl-C)" if self.interrupted else None)

    def pytest_unconfigure(self, config) -> None:
        if self.owns_brokers or self._worker:      # `execute` closes the brokers it started itself
            self.brokers.close()

    # -- after pytest returns -----------------------------------------------------------------------------

    def stopped_early(self) -> bool:
        session = self._session
        return bool(session is not None and (session.shouldstop or session.shouldfail))


def run_order(items: list, own_node, expected) -> list:
    """The own-node items first (in their order), then the others longest first by `expected(item)` (seconds
    or None: unknown ones after the known, in their order)."""
    rest = [i for i in items if not own_node(i)]
    rest.sort(key=lambda i: (expected(i) is None, -(expected(i) or 0.0)))
    return [i for i in items if own_node(i)] + rest


def expected_durations(reports_dir: Path, exclude: Path | None = None, look_back: int = 5) -> dict[str, float]:
    """"<label> <case id>" -> the case's duration in the newest of the last `look_back` runs under
    `reports_dir` that has it (run ids sort by time); empty when there are none. Used only to order cases."""
    runs = reports_dir / "runs"
    found: dict[str, float] = {}
    try:
        dirs = sorted((d for d in runs.iterdir() if d.is_dir() and d != exclude), reverse=True)[:look_back]
    except OSError:
        return found
    for run_dir in dirs:
        with contextlib.suppress(Exception):
            for record in read_records(run_dir / RESULTS_FILE):
                key = f"{record['broker']} {record['case_id']}"
                if key not in found and isinstance(record.get("duration_s"), (int, float)):
                    found[key] = float(record["duration_s"])
    return found


def _pair_of(item) -> str:
    return f"{getattr(item, 'label', None)} {getattr(getattr(item, 'case', None), 'id', None)}"


def _is_case(nodeid: str) -> bool:
    return nodeid.startswith(CASES_NODEID)
