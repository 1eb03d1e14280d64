"""The minimal case with python-qpid-proton as the receiving client (the reference client, not our peer):
attach a receiver, grant credit 1, receive the one preloaded message. Collected only when named on the
command line with --broker options (tests/brokers/test_managed.py runs it with -n 2 over all managed brokers):
the suite's pytest plugin starts those brokers (`conformance.run.plugin`), this module asks the run for their
handles, one test per broker."""

import contextlib

import pytest
from proton.utils import BlockingConnection

from conformance.run.items import pipeline_of


def pytest_generate_tests(metafunc):
    pipeline = pipeline_of(metafunc.config)
    labels = pipeline.labels() if pipeline is not None else []
    metafunc.parametrize("broker", labels, indirect=True, ids=labels)


@pytest.fixture
def broker(request):
    return pipeline_of(request.config).broker(request.param)


@pytest.fixture
def queue(broker):
    name = broker.unique_queue("t")
    broker.create_queue(name)        # brokers that need queues declared first (RabbitMQ 4.3, Broker-J)
    yield name
    with contextlib.suppress(Exception):
        broker.delete_queue(name)


def test_minimal_receive_with_proton_blocking_receiver(broker, queue):
    broker.preload(queue, 1, body=b"minimal-case")
    mechs = {"PLAIN": "PLAIN", "ANONYMOUS": "ANONYMOUS"}.get(broker.sasl_mechanism or "", None)
    connection = BlockingConnection(broker.url, timeout=20, allowed_mechs=mechs, allow_insecure_mechs=True)
    try:
        receiver = connection.create_receiver(broker.queue_address(queue, "source"), credit=1)
        message = receiver.receive(timeout=20)
        if receiver.fetcher.unsettled:          # brokers that send pre-settled (qpid-proton-c) leave nothing to settle
            receiver.accept()
        body = message.body
        assert (body if isinstance(body, bytes) else bytes(body)) == b"minimal-case"
        assert broker.product and broker.version, "the broker's product and version are recorded"
        print(f"RESULT {broker.name} product={broker.product} version={broker.version}")
    finally:
        connection.close()
