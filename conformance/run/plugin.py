"""The pytest plugin of the run pipeline: the suite's command-line options, its parametrisation and fixtures.

This is the pytest face of the run pipeline (`conformance.run`), beside the engine that loads it (`-p`, in
the controller and in every pytest-xdist worker). `amqp-conformance run` uses it through `pytest.main` with
its own `Pipeline` object; people who run the suite as a pytest plugin get it through the pytest11 entry
point `conformance.pytest_plugin`, which hands on this module's hooks and fixtures:

    pytest --pyargs conformance.suite --broker qpid-proton-c [--broker URL --profile P] [--case 2.6.8]
           [--run-dir DIR] [--quiet-period S] [--frame-timeout S] [--connect-timeout S] [-n 2]

With --broker given (and no pipeline passed in), a Pipeline is made here: it starts the managed brokers once,
in the controller, hands them to pytest-xdist workers (`pytest_configure_node`) and stops them when the
session ends, also on Ctrl-C; with --run-dir it writes a run directory as `amqp-conformance run` does. The
defaults of the duration options are those of `conformance.options.RunOptions`.

Fixtures: `conformance_broker` (the broker handle; tests using it are parametrised over every target),
`conformance_case` (parametrised over the selected cases), `conformance_queue` (a fresh queue on that broker),
`conformance_options` (the RunOptions) and `conformance_run` (the Pipeline: `run_one(case, broker)`).
A test requesting `conformance_broker` when no --broker was given fails with a message saying so.
"""

from __future__ import annotations

import json

import pytest

from conformance.options import FIELDS

NO_BROKER = "no-broker"


def pytest_addoption(parser):
    group = parser.getgroup("amqp-conformance")
    group.addoption("--broker", action="append", default=[], metavar="NAME|URL",
                    help="broker to test: a managed broker name or an amqp[s]:// URL (repeatable)")
    group.addoption("--profile", default=None, metavar="NAME|FILE",
                    help="broker profile for --broker URLs (a profile name or a TOML file)")
    group.addoption("--case", action="append", default=[], metavar="ID|SECTION|REQUIREMENT",
                    help="only these cases (repeatable); default: all")
    for name in ("quiet_period", "frame_timeout", "connect_timeout"):
        f = FIELDS[name]
        group.addoption(f.metadata["flag"], type=float, default=None, metavar="SECONDS", help=f.metadata["help"])
    group.addoption("--run-dir", default=None, metavar="DIR",
                    help="write case results into this run directory (created if missing)")


def _pipeline(config):
    from conformance.run.engine import PIPELINE
    return config.stash.get(PIPELINE, None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if _pipeline(config) is not None:               # amqp-conformance run passed its own
        return
    from conformance.run.engine import WORKER_INPUT, Pipeline
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and WORKER_INPUT in workerinput:
        pipeline = Pipeline.for_worker(json.loads(workerinput[WORKER_INPUT]), config.getoption("--run-dir"))
    elif workerinput is None and config.getoption("--broker"):
        from conformance.errors import ConformanceError
        try:
            pipeline = Pipeline.from_pytest_options(config)
        except ConformanceError as exc:
            raise pytest.UsageError(exc.message) from None
    else:
        return
    config.pluginmanager.register(pipeline, "amqp-conformance-pipeline")


def pytest_generate_tests(metafunc):
    pipeline = _pipeline(metafunc.config)
    if "conformance_broker" in metafunc.fixturenames:
        names = pipeline.labels() if pipeline is not None else [NO_BROKER]
        metafunc.parametrize("conformance_broker", names, indirect=True, ids=names)
    if "conformance_case" in metafunc.fixturenames:
        if pipeline is not None:
            cases = pipeline.cases()
        else:
            from conformance.run.selection import select_cases
            cases = select_cases(metafunc.config.getoption("--case") or None)
        metafunc.parametrize("conformance_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def conformance_broker(request):
    """The broker handle of the target this test is parametrised with (made once per process)."""
    if request.param == NO_BROKER:
        pytest.fail("this test needs a broker: pass --broker NAME|URL (e.g. --broker qpid-proton-c)", pytrace=False)
    return _pipeline(request.config).handle(request.param)


@pytest.fixture
def conformance_queue(conformance_broker, request):
    """A queue name no other test uses, on the parametrised broker; deleted afterwards when the profile can."""
    name = conformance_broker.unique_queue("t")
    conformance_broker.create_queue(name)        # brokers that need queues declared first (RabbitMQ 4.3, Broker-J)
    yield name
    try:
        conformance_broker.delete_queue(name)
    except Exception:  # cleanup of a queue must not turn a verdict into an error
        pass


@pytest.fixture(scope="session")
def conformance_options(pytestconfig):
    pipeline = _pipeline(pytestconfig)
    if pipeline is not None:
        return pipeline.options
    from conformance.options import RunOptions
    return RunOptions()


@pytest.fixture(scope="session")
def conformance_run(pytestconfig):
    """The run pipeline of this session: `conformance_run.run_one(case, broker)` runs and records one case."""
    pipeline = _pipeline(pytestconfig)
    if pipeline is None:
        pytest.fail("no run: pass --broker NAME|URL (e.g. --broker qpid-proton-c)", pytrace=False)
    return pipeline
