"""One case against one broker: `run_case` (kept here for its callers; it lives in
`conformance.casekit.executor`, beside the vocabulary whose findings it judges)."""

from __future__ import annotations

from .casekit.executor import broker_lock, run_case  # noqa: F401
from .options import RunOptions  # noqa: F401  (the one definition; importable here as before)
