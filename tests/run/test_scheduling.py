"""How cases are scheduled around the broker: nothing waits that need not."""

from __future__ import annotations

import contextlib

from conformance.brokers import BrokerHandle, load_profile
from conformance.casekit import executor
from conformance.cases import load_all
from conformance.run.options import RunOptions
from conformance.verdict import Verdict

HOOK_CASES = {"2.5.6/4": "memory_alarm", "2.5.6/5": "disk_alarm", "2.5.6/6": "memory_alarm",
              "2.6.7/14": "queue_length_limit"}


def test_a_case_needing_a_missing_hook_is_unsupported_before_the_lock_or_a_connection(monkeypatch):
    """The alarm and queue-limit cases on a profile without hooks: no broker lock asked for, no connection
    opened (the URL has nothing listening), the same verdict and one-line reason as before."""
    @contextlib.contextmanager
    def no_lock(*args, **kwargs):
        raise AssertionError("the broker lock was asked for")
        yield

    monkeypatch.setattr(executor, "broker_lock", no_lock)
    handle = BrokerHandle("nothing", "amqp://127.0.0.1:1", load_profile("qpid-proton-c"))
    cases = load_all()
    for case_id, hook in HOOK_CASES.items():
        assert hook in cases[case_id].needs
        result = executor.run_case(cases[case_id], handle, RunOptions(frame_timeout=1.0, connect_timeout=1.0))
        assert result.verdict is Verdict.UNSUPPORTED, (case_id, result.reason)
        assert result.reason == f"the broker profile has no {hook!r} hook; add one to the profile to run this case"
        assert result.transcripts == [] and result.findings == []
