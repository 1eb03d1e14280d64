"""The reference peers: a small in-process AMQP 1.0 broker and a client (`client.py`), each with switchable
faults, for the suite's own tests.

`broker` is a sans-IO broker (bytes in, bytes out) that honours link and session flow control exactly as
the spec says unless a fault is switched on; `listener` runs it on a loopback socket. Conformance cases are
shown to pass against the well-behaved engine and to fail against the engine with the one fault that breaks
their requirement. It is a fake for testing the suite, never a verdict source about real brokers.
"""
