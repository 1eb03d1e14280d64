"""Sans-IO flow-control model: endpoint state per 2.5.6 and 2.6.7, and the oracle that judges transcripts.

Pure and deterministic: frames in, state and violations out. No sockets, threads or clocks.
"""

from .endpoints import LinkEndpoint, SessionEndpoint
from .oracle import FlowOracle, Violation

__all__ = ["LinkEndpoint", "SessionEndpoint", "FlowOracle", "Violation"]
