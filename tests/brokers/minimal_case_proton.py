"""The minimal case with python-qpid-proton as the receiving client (the reference client, not our peer):
attach a receiver, grant credit 1, receive the one preloaded message. Collected only when named on the
command line with --broker options (tests/brokers/test_managed.py runs it with -n 2 over all managed brokers)."""

from proton.utils import BlockingConnection


def test_minimal_receive_with_proton_blocking_receiver(conformance_broker, conformance_queue):
    broker = conformance_broker
    broker.preload(conformance_queue, 1, body=b"minimal-case")
    mechs = {"PLAIN": "PLAIN", "ANONYMOUS": "ANONYMOUS"}.get(broker.sasl_mechanism or "", None)
    connection = BlockingConnection(broker.url, timeout=20, allowed_mechs=mechs, allow_insecure_mechs=True)
    try:
        receiver = connection.create_receiver(broker.queue_address(conformance_queue, "source"), credit=1)
        message = receiver.receive(timeout=20)
        if receiver.fetcher.unsettled:          # brokers that send pre-settled (qpid-proton-c) leave nothing to settle
            receiver.accept()
        body = message.body
        assert (body if isinstance(body, bytes) else bytes(body)) == b"minimal-case"
        assert broker.product and broker.version, "the broker's product and version are recorded"
        print(f"RESULT {broker.name} product={broker.product} version={broker.version}")
    finally:
        connection.close()
