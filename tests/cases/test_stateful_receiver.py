"""A hypothesis stateful test drives a receiver link with random flow scripts; the model is the oracle.
Against the correct reference broker nothing is ever flagged; against a broker that adds credit instead of
setting it, hypothesis finds, shrinks and saves a reproducer, which replays the violation."""

import json

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from conformance.explore import ReceiverExplorer, Violated, replay, save_reproducer
from conformance.options import RunOptions
from conformance.reference.broker import Faults
from conformance.reference.handle import ReferenceBrokerHandle

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.1)


def machine_for(broker, saved: list, directory):
    class ReceiverLink(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.explorer = ReceiverExplorer(broker, OPTIONS)

        def _step(self, step):
            try:
                self.explorer.apply(step)
            except Violated as exc:
                saved.append(save_reproducer(self.explorer.steps, str(exc), directory))
                raise

        @rule(n=st.integers(0, 12))
        def grant(self, n):
            self._step(["grant", n])

        @rule()
        def stop(self):
            self._step(["stop"])

        @rule(n=st.integers(0, 6))
        def drain(self, n):
            self._step(["drain", n])

        @rule()
        def echo(self):
            self._step(["echo"])

        @rule(k=st.integers(1, 10))
        def consume(self, k):
            self._step(["consume", k])

        @rule(back=st.integers(0, 4), credit=st.integers(0, 8))
        def stale(self, back, credit):
            self._step(["stale", back, credit])

        def teardown(self):
            self.explorer.close()

    return ReceiverLink


SETTINGS = settings(max_examples=15, stateful_step_count=12, deadline=None, derandomize=True)


def test_random_flow_scripts_against_a_correct_broker(tmp_path, own_reference_broker):
    broker = own_reference_broker
    saved = []
    run_state_machine_as_test(machine_for(broker, saved, tmp_path), settings=SETTINGS)
    assert not saved


def test_a_broker_adding_credit_is_found_shrunk_saved_and_replayed(tmp_path):
    faulty = ReferenceBrokerHandle(Faults(cumulative_credit=True))
    saved = []
    try:
        with pytest.raises(Violated):
            run_state_machine_as_test(machine_for(faulty, saved, tmp_path),
                                      settings=settings(SETTINGS, max_examples=60))
        assert saved, "a reproducer is saved"
        reproducer = saved[-1]                      # the last one written is the shrunk script
        data = json.loads(reproducer.read_text())
        assert "2.6.7" in data["violation"] and data["steps"]
        with pytest.raises(Violated):
            replay(reproducer, faulty, OPTIONS)
    finally:
        faulty.stop()
    good = ReferenceBrokerHandle()
    try:
        replay(reproducer, good, OPTIONS)           # the same script is clean on a correct broker
    finally:
        good.stop()
