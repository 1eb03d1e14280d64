"""The controller of a run: one for `amqp-conformance run` (and every command that runs cases through
`conformance.run.engine.execute`) and for `pytest --broker ...` (the suite as a pytest plugin,
`conformance.run.plugin`). Both make a `Plan` and go through `Controller.start` and `Controller.finish`, with the
same checks: a plan without cases is refused, the brokers are started or checked before any case runs (a URL
broker that fails its check stops the run, exit 4 / 6 / 7), a run directory is written with the pairs it
schedules, every record the workers report is kept, a run whose cases did not all report when pytest ended as
if all went well is broken (exit 14; pytest's own run fails), the run directory is finished or marked stopped,
the brokers' identities are what the cases' `open` frames said, the expectations are judged and written.

The difference is only who runs pytest: `execute` runs its own `pytest.main` around the controller
(`inside_pytest` False); the plugin's controller lives inside the session the user started (`inside_pytest`
True), so its hooks finish the run when the session ends (`session_finished`) and stop the brokers when pytest
unconfigures.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EXIT_CASE_ERROR, EXIT_OK, BadResults, UsageError
from ..options import RunOptions
from ..results import parse_line
from ..verdict import exit_code
from . import gate
from .directory import RunDirectory
from .gate import Gate
from .hooks import RunHooks
from .order import expected_durations
from .runner import CaseRunner
from .targets import Brokers, Target


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
    gate: Gate | None = None                          # --expect / --strict-flaky / --flaky-from (conformance.run.gate)

    def resolved_targets(self) -> list[Target]:
        if self.targets is not None:
            return list(self.targets)
        return [Target(b.name, b.name) for b in self.brokers]

    @property
    def scheduled(self) -> int:
        return len(self.cases) * len(self.resolved_targets())


@dataclass
class Outcome:
    run: RunDirectory | None
    records: list[dict]            # the records of this run, in the order the cases finished
    complete: bool                 # every scheduled pair has its record
    judgements: list | None = None  # with --expect: each record against the file (the gate decides the exit code)

    @property
    def exit_code(self) -> int:
        if self.judgements is None:
            return exit_code(self.records)
        code = gate.exit_code(self.judgements)        # a gate never goes green on a run that did not finish
        return EXIT_CASE_ERROR if code == EXIT_OK and not self.complete else code


class Controller:
    """A run's controller: its plan, started brokers, run directory, the records reported, the console."""

    def __init__(self, plan: Plan, options: RunOptions, started: Brokers, run: RunDirectory | None, console,
                 inside_pytest: bool):
        self.plan = plan
        self.options = options
        self.started = started
        self.run = run
        self.console = console
        self.inside_pytest = inside_pytest
        self.targets = plan.resolved_targets()
        self.records: list[dict] = []         # the records of the finished cases, as reported
        self.scheduled: int | None = None     # as pytest collected them
        self.missing: str | None = None       # why the session's records cannot stand (cases never reported)
        runner = CaseRunner(options, [c.id for c in plan.cases], self.targets, started, run)
        if not inside_pytest:                 # the order of the cases: from the recent runs under --reports-dir
            runner.expected = expected_durations(Path(options.reports_dir), exclude=run.path if run else None)
        runner.gate = plan.gate
        self.hooks = RunHooks(runner, self)

    @classmethod
    def start(cls, plan: Plan, console=None, *, stop=None, run_dir: Path | None = None,
              inside_pytest: bool = False) -> "Controller":
        """Check the plan, start or check its brokers, create its run directory (under --reports-dir; inside
        pytest at `run_dir`, or none without one). Raises ConformanceError for what stops a run before it
        starts (its exit code says what); `stop` (interrupts.Stop) arms Ctrl-C/SIGTERM during the start."""
        if not plan.cases:
            raise UsageError("no case is selected; run `amqp-conformance list --cases` to see them")
        options = plan.options
        from .. import brokers as _brokers
        if not options.in_process and not all(isinstance(b, _brokers.BrokerSpec) for b in plan.brokers):
            options = RunOptions(**{**options.to_json(), "workers": 0})    # a handle in this process: no workers
        armed = stop.armed() if stop is not None else contextlib.nullcontext()
        try:
            with armed:
                started = Brokers.start(plan.brokers, options, say=console.note if console is not None else None,
                                        own_node_cases=plan.cases if plan.targets is None else ())
        except KeyboardInterrupt:                   # Brokers.start stopped the nodes it had started
            if stop is None:
                raise
            raise stop.error() from None
        try:
            meta = {"brokers": started.identities(), "options": {**options.to_json(), **plan.selection}, **plan.meta}
            if not inside_pytest:             # inside pytest: what it collects (-k may deselect), `collected`
                meta["scheduled"] = plan.scheduled
            if inside_pytest:
                run = RunDirectory.at(Path(run_dir), **meta) if run_dir else None
            else:
                run = RunDirectory.create(options.reports_dir, plan.run_id, **meta)
            self = cls(plan, options, started, run, console, inside_pytest)
        except BaseException:
            started.close()
            raise
        if console is not None:
            console.begin(plan.scheduled, run.path, cases=len(plan.cases), targets=[t.label for t in self.targets],
                          judge=self.hooks.judge if plan.gate is not None else None,
                          expect_path=plan.gate.path if plan.gate is not None else None)
        return self

    # -- while the cases run (called by the hooks) ----------------------------------------------------------

    def collected(self, count: int) -> None:
        if self.scheduled is None:
            self.scheduled = count
            if self.run is not None and not isinstance(self.run.read_meta().get("scheduled"), int):
                self.run.update_meta(scheduled=count)

    def received(self, line: str) -> None:
        record = parse_line(line, "a worker's record")
        self.records.append(record)
        if self.console is not None:
            self.console.case(record)

    # -- after the session ----------------------------------------------------------------------------------

    def unreported(self, *, interrupted: bool, stopped_early: bool) -> str | None:
        """Why a session that ended as if all went well cannot stand: cases scheduled that never reported
        (e.g. its workers could not import the suite); None when every pair reported, or when the run was
        interrupted or stopped early on purpose."""
        scheduled = self.scheduled if self.inside_pytest and self.scheduled is not None else self.plan.scheduled
        if interrupted or stopped_early or len(self.records) >= scheduled:
            return None
        return f"{len(self.records)} of {scheduled} scheduled cases finished"

    def finish(self, *, stopped: str | None, reread: bool = False) -> Outcome:
        """Finish the run directory (`stopped`: why it did not finish), take the brokers' identities from the
        records, judge them against the expectations and write the summary, show the closing table.
        `reread`: after a signal, count what results.jsonl holds (workers may have written records the
        controller was not told of)."""
        records = self.records
        complete = self.run.finish(stopped=stopped) if self.run is not None else \
            stopped is None and len(records) >= self.plan.scheduled
        if reread and self.run is not None:
            with contextlib.suppress(BadResults):
                kept = self.run.records()
                if len(kept) > len(records):
                    records = kept
        if self.run is not None:
            self.run.update_meta(brokers=identities_from(records, self.started.identities()))
        outcome = Outcome(self.run, records, complete,
                          gate.judgements(self.plan.gate, records, {t.label: t.broker for t in self.targets}))
        if outcome.judgements is not None and self.run is not None:
            gate.write_summary(self.run.path, self.plan.gate, outcome.judgements)
        return outcome

    def session_finished(self, session, *, interrupted: bool, stopped_early: bool) -> None:
        """Inside pytest: the same checks and the same finish as `execute`'s, when the user's session ends."""
        import pytest
        self.missing = self.unreported(interrupted=interrupted, stopped_early=stopped_early)
        if self.missing is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED          # never green on a run that broke
        stopped = ("interrupted (Ctrl-C)" if interrupted else
                   "pytest stopped early (e.g. --maxfail)" if stopped_early else self.missing)
        self.outcome = self.finish(stopped=stopped)

    def terminal_summary(self, terminalreporter) -> None:
        if self.missing is not None:
            terminalreporter.write_sep("-", f"amqp-conformance: the run broke: {self.missing}")
        if self.plan.gate is not None:                              # pytest --expect FILE
            found = getattr(self, "outcome", None)
            judgements = (found.judgements if found is not None else None) or \
                [self.hooks.judge(r) for r in self.records]
            where = self.run.path / gate.SUMMARY_MD if self.run is not None else "not written (no --run-dir)"
            terminalreporter.write_sep("-", "amqp-conformance: results against the expectations file")
            terminalreporter.write_line(gate.lines(judgements, where, self.plan.gate.path))

    def close(self) -> None:
        """Stop the brokers this run started (and remove its credentials file)."""
        self.started.close()


def identities_from(records: list[dict], started: dict | None = None) -> dict:
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
