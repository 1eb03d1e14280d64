"""The pytest plugin of the run pipeline: the suite's command-line options and its items, one per case x target.

This is the pytest face of the run pipeline (`conformance.run`), beside the engine that loads it (`-p`, in
the controller and in every pytest-xdist worker). `amqp-conformance run` uses it through `pytest.main` with
its own hooks object (`conformance.run.hooks.RunHooks`); people who run the suite as a pytest plugin get it
through the pytest11 entry point `conformance.pytest_plugin`, which hands on this module's hooks:

    pytest --pyargs conformance.suite --broker qpid-proton-c [--broker URL --profile P] [--case 2.6.8]
           [--run-dir DIR] [--quiet-period S] [--frame-timeout S] [--connect-timeout S] [-n 2]
           [--expect FILE [--flaky-from REPORT.json] [--strict-flaky]]

With --broker given (and no hooks object passed in), the options become a `Plan` (`plan_of`, with the checks
`amqp-conformance run` makes) and go through the same controller as `run` does
(`conformance.run.controller.Controller`, from inside this session): it starts the managed brokers once, in the
controller, hands each pytest-xdist worker its targets (`pytest_configure_node`), finishes the run when the
session ends (a session whose cases did not all report fails) and stops the brokers, also on Ctrl-C; with
--run-dir it writes a run directory as `amqp-conformance run` does. The
defaults of the duration options are those of `conformance.options.RunOptions`. With --expect FILE, pytest's
outcomes are the gate's (conformance.run.gate): an unexpected result fails, an expected fail is an xfail, and
the terminal summary lists what was not as expected.

Collection: the package `conformance/suite` is the anchor (`pytest_collect_directory`); its collector
(`conformance.run.items.Suite`) makes a `CaseItem` per selected case x target, with the case's own file and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.options import FIELDS, add_broker_arguments
from conformance.run.items import SUITE_DIR, Suite, pipeline_of


def pytest_addoption(parser):
    group = parser.getgroup("amqp-conformance")
    add_broker_arguments(group.addoption, many=True, note="without it the suite's items need a broker")
    group.addoption("--case", action="append", default=[], metavar="ID|SECTION|REQUIREMENT",
                    help="only these cases (repeatable); default: all")
    for name in ("quiet_period", "frame_timeout", "connect_timeout"):
        f = FIELDS[name]
        group.addoption(f.metadata["flag"], type=float, default=None, metavar="SECONDS", help=f.metadata["help"])
    group.addoption("--run-dir", default=None, metavar="DIR",
                    help="write case results into this run directory (created if missing)")
    group.addoption("--expect", default=None, metavar="FILE",
                    help="an expectations file (TOML): only results it does not expect fail (docs/ci.md)")
    group.addoption("--flaky-from", default=None, metavar="REPORT.json",
                    help="with --expect: the history's report.json; cases it knows as flaky do not fail")
    group.addoption("--strict-flaky", action="store_true", default=False,
                    help="with --expect: an unexpected result on a flaky cell fails too")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if pipeline_of(config) is not None:               # amqp-conformance run passed its own
        return
    from conformance.run.hooks import RunHooks
    from conformance.run.runner import WORKER_INPUT, CaseRunner
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and WORKER_INPUT in workerinput:
        hooks = RunHooks(CaseRunner.from_worker_input(workerinput[WORKER_INPUT], config.getoption("--run-dir")))
    elif workerinput is None and config.getoption("--broker"):
        from conformance.errors import ConformanceError
        from conformance.run.controller import Controller
        run_dir = config.getoption("--run-dir")
        try:
            hooks = Controller.start(plan_of(config), run_dir=Path(run_dir) if run_dir else None,
                                     inside_pytest=True).hooks
        except ConformanceError as exc:
            raise pytest.UsageError(exc.message) from None
    else:
        return
    config.pluginmanager.register(hooks, "amqp-conformance-pipeline")


def plan_of(config):
    """The run's Plan from pytest's options, checked as `amqp-conformance run` checks its own (exit 2 bad
    option, 3 unknown case, 16 bad expectations file, 2 unknown broker or bad URL, as pytest usage errors)."""
    from argparse import Namespace

    from conformance.options import RunOptions
    from conformance.run import gate
    from conformance.run.controller import Plan
    from conformance.run.selection import select_cases
    from conformance.run.targets import resolve
    given = {name: config.getoption(FIELDS[name].metadata["flag"]) for name in
             ("frame_timeout", "quiet_period", "connect_timeout")}
    # what run.json records: pytest's own -n (pytest-xdist's, a number by now; 0 without workers)
    numprocesses = config.getoption("numprocesses", default=None)
    distributed = isinstance(numprocesses, int) and config.getoption("dist", default="no") != "no"
    given["workers"] = numprocesses if distributed else 0
    options = RunOptions(**{k: v for k, v in given.items() if v is not None})
    cases = select_cases(config.getoption("--case") or None)
    checked = gate.from_args(Namespace(expect=config.getoption("--expect"), flaky_from=config.getoption("--flaky-from"),
                                       strict_flaky=config.getoption("--strict-flaky")))
    specs = resolve(config.getoption("--broker"), config.getoption("--profile"))
    return Plan(cases, specs, options, selection={"cases": config.getoption("--case")}, gate=checked)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    if path.resolve() == SUITE_DIR:
        return Suite.from_parent(parent, path=path)
    return None
