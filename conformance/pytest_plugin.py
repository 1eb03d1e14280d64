"""pytest plugin (entry point pytest11): the suite's options, brokers shared by all workers, and fixtures.

Options: --broker NAME|URL (repeatable), --profile, --case SELECTOR (repeatable), --quiet-period,
--frame-timeout, --run-dir. With pytest-xdist the controller starts every managed broker once and hands
the URLs to the workers (`pytest_configure_node`); it stops them when the run ends, also on Ctrl-C.

Fixtures: `conformance_broker` (a BrokerHandle; tests using it are parametrised over every --broker),
`conformance_queue` (a fresh unique queue name on that broker), `conformance_options`, `conformance_run`.
Tests requesting `conformance_broker` when no --broker was given fail with a message saying so.
"""

from __future__ import annotations

import json
import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("amqp-conformance")
    group.addoption("--broker", action="append", default=[], metavar="NAME|URL",
                    help="broker to test: a managed broker name or an amqp[s]:// URL (repeatable)")
    group.addoption("--profile", default=None, metavar="NAME|FILE",
                    help="broker profile for --broker URLs (a profile name or a TOML file)")
    group.addoption("--case", action="append", default=[], metavar="ID|SECTION|REQUIREMENT",
                    help="only these cases (repeatable); default: all")
    group.addoption("--quiet-period", type=float, default=0.5, metavar="SECONDS",
                    help="how long a case watches that nothing more arrives (default 0.5)")
    group.addoption("--frame-timeout", type=float, default=5.0, metavar="SECONDS",
                    help="bound on every wait for an expected frame (default 5)")
    group.addoption("--run-dir", default=None, metavar="DIR",
                    help="write case results into this run directory (created if missing)")


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    config._amqp_handles = {}
    config._amqp_started = []
    if _is_worker(config):
        config._amqp_records = json.loads(config.workerinput.get("amqp_conformance_brokers", "[]"))
        return
    config._amqp_records = []
    values = list(dict.fromkeys(config.getoption("--broker") or []))    # a broker named twice runs once
    if not values:
        return
    from conformance import brokers
    from conformance.errors import ConformanceError
    try:
        specs = [brokers.resolve(v, config.getoption("--profile")) for v in values]
        for spec in specs:
            handle = start_broker(config, spec)
            config._amqp_handles[spec.name] = handle
            config._amqp_records.append(brokers.describe(handle, spec))
    except ConformanceError as exc:
        _stop_started(config)
        _write_fatal(config, exc)
        raise pytest.UsageError(f"{exc.message}") from None


def start_broker(config, spec):
    """Start (managed) or check (URL) one broker for this run; it is stopped at pytest_unconfigure."""
    from conformance import brokers
    handle = brokers.start(spec)
    config._amqp_started.append(handle)
    return handle


def _write_fatal(config, exc) -> None:
    run_dir = config.getoption("--run-dir")
    if run_dir:
        os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, "fatal.json"), "w") as fh:
            json.dump({"message": exc.message, "exit_code": exc.exit_code}, fh)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # pytest-xdist controller hook
    node.workerinput["amqp_conformance_brokers"] = json.dumps(node.config._amqp_records)


def _stop_started(config) -> None:
    for handle in getattr(config, "_amqp_started", []):
        if handle.managed is not None:
            handle.managed.stop()
    config._amqp_started = []


def pytest_unconfigure(config):
    _stop_started(config)


def pytest_generate_tests(metafunc):
    if "conformance_broker" in metafunc.fixturenames:
        names = [r["name"] for r in metafunc.config._amqp_records] or [NO_BROKER]
        metafunc.parametrize("conformance_broker", names, indirect=True, ids=names)
    if "conformance_case" in metafunc.fixturenames:
        from conformance.cases import select
        cases = select(metafunc.config.getoption("--case") or None)
        metafunc.parametrize("conformance_case", cases, ids=[c.id for c in cases])


NO_BROKER = "no-broker"


@pytest.fixture
def conformance_broker(request):
    """The BrokerHandle of the broker this test is parametrised with (shared per process)."""
    config = request.config
    name = request.param
    if name == NO_BROKER:
        pytest.fail("this test needs a broker: pass --broker NAME|URL (e.g. --broker qpid-proton-c)", pytrace=False)
    handle = config._amqp_handles.get(name)
    if handle is None:
        from conformance import brokers
        record = next(r for r in config._amqp_records if r["name"] == name)
        spec = brokers.BrokerSpec(name, record["url"] if not record["managed"] else None, record["profile"])
        handle = brokers.attach(spec, record)
        config._amqp_handles[name] = handle
    return handle


@pytest.fixture
def conformance_queue(conformance_broker, request):
    """A queue name no other test uses, on the parametrised broker; deleted afterwards when the profile can."""
    name = conformance_broker.unique_queue("t")
    yield name
    try:
        conformance_broker.delete_queue(name)
    except Exception:  # cleanup of a queue must not turn a verdict into an error
        pass


@pytest.fixture(scope="session")
def conformance_options(pytestconfig):
    from conformance.runner import RunOptions
    return RunOptions(frame_timeout=pytestconfig.getoption("--frame-timeout"),
                      quiet_period=pytestconfig.getoption("--quiet-period"))


@pytest.fixture(scope="session")
def conformance_run(pytestconfig):
    run_dir = pytestconfig.getoption("--run-dir")
    if not run_dir:
        return None
    from pathlib import Path

    from conformance.results import RunDirectory
    run = RunDirectory(Path(run_dir))
    (run.path / "transcripts").mkdir(parents=True, exist_ok=True)
    return run
