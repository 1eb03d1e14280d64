"""Fixtures of the run pipeline's tests: a reference broker reachable by URL, in this process."""

import pytest

from conformance.reference.listener import ReferenceBroker


@pytest.fixture
def reference_url():
    """amqp://127.0.0.1:<port> of a well-behaved reference broker (profile generic: preload over AMQP, no hooks)."""
    with ReferenceBroker() as broker:
        yield broker.url


@pytest.fixture
def failing_preload_profile(tmp_path):
    """A profile whose preload command always fails: every case that preloads a queue ends in error."""
    path = tmp_path / "broken-preload.toml"
    path.write_text('[broker]\nproduct = "reference"\n\n[addressing]\nsource = "{queue}"\ntarget = "{queue}"\n\n'
                    '[queues]\ncreate = "auto"\npreload = ["false"]\npurge = "drain"\n')
    return path
