"""Shared test settings: hypothesis profiles ("ci" is the default: derandomized, modest; "deep" runs longer)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local Spark session per test process (the history and report tests share it)."""
    from conformance.history.spark import session
    return session(log_file=tmp_path_factory.mktemp("spark") / "spark.log")


@pytest.fixture(scope="session")
def reference_reports(tmp_path_factory):
    """A reports directory with two real runs against reference brokers (no managed broker needed):
    run 1: ref-a@1.0 (well-behaved) and ref-b@2.0 (credit applied cumulatively);
    run 2: ref-a@1.1 (drain ignored: a regression of 2.6.8/2) and ref-b@2.0 again."""
    from conformance.options import RunOptions
    from conformance.reference.broker import Faults
    from conformance.reference.runs import ReferenceBuild, write_reference_run
    reports = tmp_path_factory.mktemp("reference-reports")
    cases = ["2.6.7/3", "2.6.8/1", "2.6.8/2", "2.7.4/1"]
    fast = RunOptions(quiet_period=0.2)          # the reference broker runs in this process: it answers at once
    write_reference_run(reports, [ReferenceBuild("ref-a", "1.0"),
                                  ReferenceBuild("ref-b", "2.0", Faults(cumulative_credit=True))], cases,
                        run_id="run-1", options=fast)
    write_reference_run(reports, [ReferenceBuild("ref-a", "1.1", Faults(ignore_drain=True)),
                                  ReferenceBuild("ref-b", "2.0", Faults(cumulative_credit=True))], cases,
                        run_id="run-2", options=fast)
    return reports


@pytest.fixture(scope="module")
def reference_broker():
    """The well-behaved reference broker (conformance.reference) on loopback, one per test module."""
    from conformance.reference.handle import ReferenceBrokerHandle
    broker = ReferenceBrokerHandle()
    yield broker
    broker.stop()


@pytest.fixture
def own_reference_broker():
    """A well-behaved reference broker of the test's own (a run that may leave state on it), stopped after it."""
    from conformance.reference.handle import ReferenceBrokerHandle
    broker = ReferenceBrokerHandle()
    yield broker
    broker.stop()
