"""amqp-conformance: a conformance test suite for AMQP 1.0 link and session flow control."""

__version__ = "0.1.0"
