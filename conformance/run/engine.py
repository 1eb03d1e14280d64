"""The one run loop: cases x targets scheduled over workers by pytest, each result recorded and reported.

This module owns how `amqp-conformance run` (and every command that runs cases: selfcheck, bisect, bisect-run,
the reference runs) runs pytest. `execute(plan, console)` starts the run's controller
(`conformance.run.controller.Controller.start`: the checks, the brokers, the run directory), runs pytest in this
process on the suite's anchor (`conformance/suite`, whose collector, `conformance.run.items.Suite`, makes a
`CaseItem` per pair) with the run's hooks object (`conformance.run.hooks.RunHooks`) passed to
`pytest.main(..., plugins=[hooks])`, and has the controller finish the run. pytest does what it is good at:
pytest-xdist schedules the items over worker processes (-n), the junitxml plugin writes junit.xml,
allure-pytest writes allure-results. Its own console output is kept off the terminal; the `console` shows the
verdicts instead. `pytest --broker ...` goes through the same controller from inside the user's session
(`conformance.run.plugin`).

The roles, each in its own module: the controller (`controller`: Plan, Outcome, the checks before and after),
the hooks pytest calls in every process (`hooks`), the case runner of each process that runs cases and what
crosses to a worker (`runner`), the order of the cases on the workers (`order`). Nothing travels through files
but the results and the brokers' credentials (`targets.Brokers.crossing`): brokers are started (and fail, with
their exit codes) before pytest runs; what happened inside pytest is read off the hooks object (a Ctrl-C
through `pytest_keyboard_interrupt`, a stop by --maxfail) and off `pytest.main`'s exit status and captured
output.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from ..errors import RunBroken, UsageError
from ..verdict import exit_code  # noqa: F401  (a finished run's exit code; console and tests import it here)
from . import interrupts
from .controller import Controller, Outcome, Plan  # noqa: F401  (the commands import Plan and Outcome here)
from .directory import RunDirectory
from .items import SUITE_DIR
from ..options import RunOptions


def execute(plan: Plan, console=None) -> Outcome:
    """Run `plan`: start the brokers, run every case on every target, record and report each result; stop the
    brokers. Raises ConformanceError for what stops a run before it starts (its exit code says what),
    RunBroken (exit 14) when pytest cannot run the cases, `interrupts.Interrupted` (a KeyboardInterrupt) after
    Ctrl-C, SIGTERM or SIGHUP (the finished cases are kept and shown, the run marked stopped, its brokers
    stopped once no case runs any more: conformance/run/interrupts.py)."""
    with interrupts.Stop() as stop:
        controller = Controller.start(plan, console, stop=stop)
        try:
            return _execute(controller, stop)
        finally:
            controller.close()


def _execute(controller: Controller, stop: interrupts.Stop) -> Outcome:
    plan, run, hooks, console = controller.plan, controller.run, controller.hooks, controller.console
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            with stop.armed():
                status = pytest.main(_argv(plan, controller.options, run), plugins=[hooks])
        except KeyboardInterrupt:       # before pytest's session began or after it ended
            status = pytest.ExitCode.INTERRUPTED
    interrupted = hooks.interrupted or stop.signum is not None
    late = interrupted and run.record_count() >= plan.scheduled      # every case had finished already
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
    missing = controller.unreported(interrupted=interrupted, stopped_early=hooks.stopped_early())
    if missing is not None:
        # pytest ended as if all went well, yet cases never reported (e.g. its workers could not import the
        # suite): the run itself broke, and no verdict of the missing cases may read as green
        (run.path / "pytest.log").write_text(output.getvalue(), "utf-8")
        raise RunBroken(f"{missing} ({_first_error(output.getvalue())}); pytest's output is in "
                        f"{run.path / 'pytest.log'}, the results so far beside it")
    if late:
        # the signal came while pytest wound down after the last case: the run is complete, and says so
        interrupted = False
        if console is not None:
            console.note(f"{interrupts.name(stop.signum)} came after every case had finished: the run is complete")
    outcome = controller.finish(stopped=stop.reason if interrupted else
                                ("pytest stopped early (e.g. --maxfail)" if hooks.stopped_early() else None),
                                reread=interrupted or late)
    if console is not None:
        console.end(outcome, interrupted=interrupted)
    if interrupted:
        raise stop.error(len(outcome.records), run.path)
    return outcome


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
