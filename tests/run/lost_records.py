"""A pytest plugin for tests/run/test_one_controller.py (`-p lost_records`): the controller never hears of a
case's record, as when a worker dies between running a case and reporting it."""

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if hasattr(report, "amqp_record"):
        del report.amqp_record
