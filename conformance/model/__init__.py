"""Sans-IO flow-control model: endpoint state per 2.5.6 and 2.6.7, and the oracle that judges transcripts.

Pure and deterministic: frames in, state and violations out. No sockets, threads or clocks, ever.
"""

from .endpoints import LinkEndpoint, SessionEndpoint, credit_left
from .oracle import RULES, FlowOracle, LinkView, Violation, emitted_requirement_ids, transcript_violations

__all__ = ["LinkEndpoint", "SessionEndpoint", "credit_left", "FlowOracle", "LinkView", "Violation", "RULES",
           "emitted_requirement_ids", "transcript_violations"]
