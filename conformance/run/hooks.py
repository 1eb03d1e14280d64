"""The pytest hooks object of a run, in every process of it: what pytest and pytest-xdist call, handed on to the
role that process plays.

`RunHooks` is registered with pytest by `conformance.run.engine.execute` (`pytest.main(..., plugins=[...])`) or
by the pytest plugin (`conformance.run.plugin`, for `pytest --broker ...`); pytest-xdist workers make their own
from what the controller sends them (`pytest_configure_node`). It holds the process's case runner
(`conformance.run.runner.CaseRunner`: the items run their case through it) and, in the controller, the run's
controller (`conformance.run.controller.Controller`: records, the run directory, the checks); a worker has no
controller, a run whose cases run in the controller's process has both. It keeps only what pytest tells it:
the session, whether Ctrl-C ended it, whether it stopped early.
"""

from __future__ import annotations

import pytest

from . import interrupts
from .items import CASES_NODEID, PIPELINE, CaseItem
from .order import order_items, own_node_scheduler
from .runner import WORKER_INPUT, CaseRunner


class RunHooks:
    """The pytest plugin object of one run in one process (see the module docstring)."""

    def __init__(self, runner: CaseRunner, controller=None):
        self.runner = runner
        self.controller = controller          # None in a pytest-xdist worker
        self.interrupted = False
        self._session = None
        self._worker = False

    # -- what the suite's items ask for (conformance.run.items) ------------------------------------------

    def cases(self) -> list:
        return self.runner.cases()

    def labels(self) -> list[str]:
        return self.runner.labels()

    def judge(self, record: dict, label: str | None = None):
        return self.runner.judge(record, label)

    def run_one(self, case, label: str):
        return self.runner.run_one(case, label)

    def broker(self, label: str):
        """The broker handle of the target `label` in this process (for tests of one's own beside the cases)."""
        return self.runner.brokers.handle(self.runner.targets[label])

    @property
    def gate(self):
        """What each result is judged against (--expect), or None."""
        return self.runner.gate

    @property
    def records(self) -> list[dict]:
        """The records the controller has received (empty in a worker)."""
        return self.controller.records if self.controller is not None else []

    # -- pytest hooks ----------------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config) -> None:
        config.stash[PIPELINE] = self
        self._worker = hasattr(config, "workerinput")
        if self._worker:
            interrupts.in_worker()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:       # pytest-xdist controller: what a worker needs
        node.workerinput[WORKER_INPUT] = self.runner.worker_input()

    def pytest_sessionstart(self, session) -> None:
        self._session = session

    def pytest_collection_finish(self, session) -> None:      # in-process runs (the controller collects)
        if self.controller is not None:
            self.controller.collected(sum(1 for item in session.items if _is_case(item.nodeid)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:   # workers collected
        if self.controller is not None:
            self.controller.collected(sum(1 for nodeid in ids if _is_case(nodeid)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config, log):     # pytest-xdist controller, `--dist load` only
        """All own-node items in one worker's first batch, for any -n (conformance.run.order)."""
        if config.getvalue("dist") != "load":
            return None
        return own_node_scheduler(config, log, {case.id for case in self.cases() if getattr(case, "own_node", False)})

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """On pytest-xdist workers: the run order of conformance.run.order (the own-node cases first, then
        the others longest first); every worker orders alike. A hint only."""
        if int(getattr(config, "workerinput", {}).get("workercount", 1) or 1) > 1:
            items[:] = order_items(items, self.runner.expected)

    def pytest_runtest_setup(self, item) -> None:
        self.runner.current = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if not isinstance(item, CaseItem):
            return report
        if report.when == "call" and self.runner.current is not None:
            report.amqp_record = self.runner.current
        elif report.when in ("setup", "call") and report.failed and self.runner.current is None:
            # the pair's test broke outside the case (e.g. its broker could not be attached in this worker)
            reason = (report.longreprtext.strip().splitlines() or ["no message"])[-1]
            report.amqp_record = self.runner.broken(item.case, item.label,
                                                    f"the case could not run ({report.when}): {reason[:300]}")
        return report

    def pytest_runtest_logreport(self, report) -> None:
        line = getattr(report, "amqp_record", None)
        if line is None or self._worker or self.controller is None:
            return
        self.controller.received(line)

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        self.interrupted = True

    def pytest_sessionfinish(self, session) -> None:
        if self.controller is not None and self.controller.inside_pytest and not self._worker:
            self.controller.session_finished(session, interrupted=self.interrupted, stopped_early=self.stopped_early())

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.controller is not None and self.controller.inside_pytest and not self._worker:
            self.controller.terminal_summary(terminalreporter)

    def pytest_unconfigure(self, config) -> None:
        if self._worker:
            self.runner.brokers.close()
        elif self.controller is not None and self.controller.inside_pytest:   # `execute` closes its own
            self.controller.close()

    # -- after pytest returns -----------------------------------------------------------------------------

    def stopped_early(self) -> bool:
        session = self._session
        return bool(session is not None and (session.shouldstop or session.shouldfail))


def _is_case(nodeid: str) -> bool:
    return nodeid.startswith(CASES_NODEID)
