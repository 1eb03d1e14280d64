"""The worker side of a run: the case runner, in every process that runs cases (a pytest-xdist worker, or the
controller itself when cases run in its process), and what crosses to it from the controller.

`CaseRunner.run_one(case, label)` is the only caller of the one-case runner
(`conformance.casekit.executor.run_case`): it runs the case on the target's handle (`targets.Brokers`), lets a
wrapped broker annotate it, serialises its record once (`current`: the line results.jsonl gets, which the
hooks hand to the controller on the test report) and writes it into the run directory. A pair whose item could
not even start (its broker could not be attached) gets an `error` record all the same (`broken`).

What a worker gets (`worker_input`, read back by `from_worker_input`): the options, the case ids, the targets,
each broker's description without its credentials (`conformance.brokers.describe`; the credentials travel in
the run's 0600 file, `Brokers.crossing`, never in pytest-xdist's workerinput), the expected durations (the
order) and the expectations (the gate). Plain JSON values only.
"""

from __future__ import annotations

from pathlib import Path

from ..options import RunOptions
from ..results import record_line
from .directory import RunDirectory
from .gate import Gate
from .targets import Brokers, Target

WORKER_INPUT = "amqp_conformance"        # key of what a worker gets in pytest-xdist's workerinput


class CaseRunner:
    """Runs the cases of one run in one process, on the targets' handles; records each result once."""

    def __init__(self, options: RunOptions, case_ids: list[str], targets: list[Target], brokers: Brokers,
                 run: RunDirectory | None = None):
        self.options = options
        self.case_ids = list(case_ids)
        self.targets = {t.label: t for t in targets}
        self.brokers = brokers
        brokers.answer_timeout = options.frame_timeout
        self.run = run
        self.current: str | None = None       # the record of the case that just ran, as one JSON line
        self.expected: dict[str, float] = {}  # "<label> <case id>" -> its duration in a recent run (order.py)
        self.gate: Gate | None = None         # what each result is judged against (--expect)

    # -- what crosses from the controller ----------------------------------------------------------------

    def worker_input(self) -> dict:
        """What a worker needs, as plain values and without credentials (they stay in the run's 0600 file)."""
        records, credentials = self.brokers.crossing()
        return {"options": self.options.to_json(), "cases": self.case_ids,
                "targets": [t.to_json() for t in self.targets.values()], "brokers": records,
                "credentials": credentials, "expected": self.expected,
                "gate": self.gate.to_json() if self.gate is not None else None}

    @classmethod
    def from_worker_input(cls, data: dict, run_dir: str | None) -> "CaseRunner":
        """A pytest-xdist worker's runner, from what the controller's `worker_input` sent it."""
        runner = cls(RunOptions.from_json(data["options"]), data["cases"], [Target(**t) for t in data["targets"]],
                     Brokers.attached(data["brokers"], data["credentials"]),
                     RunDirectory(Path(run_dir)) if run_dir else None)
        runner.expected = dict(data.get("expected") or {})
        runner.gate = Gate.from_json(data.get("gate"))
        return runner

    # -- what the suite's items ask for ------------------------------------------------------------------

    def cases(self) -> list:
        from ..cases import load_all, load_clients
        known = {**load_all(), **load_clients()}
        return [known[cid] for cid in self.case_ids]

    def labels(self) -> list[str]:
        return list(self.targets)

    def judge(self, record: dict, label: str | None = None):
        """`record` against the run's expectations (None without --expect), as the broker behind its target."""
        if self.gate is None:
            return None
        label = label or record["broker"]
        target = self.targets.get(label)
        return self.gate.judge(record, target.broker if target is not None else label)

    def run_one(self, case, label: str):
        """Run one case on the target `label`: the result, recorded (results.jsonl, transcripts) and kept for
        the test report. This is the only place a case is run."""
        from ..casekit.executor import run_case
        from ..errors import BrokerStartFailed
        try:
            broker = self.brokers.handle(self.targets[label])
            own = self.brokers.for_case(broker, case)  # alarm and queue-limit cases: the node of their own
        except BrokerStartFailed as exc:               # its node did not start (targets.Brokers.start)
            result = error_result(case, label, f"the broker did not start: {exc.message}")
            self.keep(result)
            return result
        self.brokers.bound(own)
        result = run_case(case, own, self.options)
        if own is not broker:
            result.observations["node"] = "own node"
        from ..brokers.interface import WrappedBroker
        if isinstance(broker, WrappedBroker):
            broker.annotate(result)
        self.keep(result)
        return result

    def broken(self, case, label: str, reason: str) -> str:
        """The record of a pair whose test broke outside the case, so that every scheduled pair has one."""
        self.keep(error_result(case, label, reason))
        return self.current

    def keep(self, result) -> None:
        """Serialise the record once: the line results.jsonl gets is the one the controller reads."""
        if self.run is not None:
            report = self.run.bug_report_of(result)
            if report is not None:
                result.observations["bug_report"] = report
        self.current = record_line(result, self.run.run_id if self.run is not None else None)
        if self.run is not None:
            self.run.record(result, self.current)


def error_result(case, label: str, reason: str):
    from ..results import CaseResult
    from ..verdict import Verdict
    return CaseResult(case.id, case.title, case.section, case.level, list(case.requirements), Verdict.ERROR,
                      reason, label)
