"""The signals the broker layer gives cases: a hook that failed (ERROR) and a hook the profile lacks
(UNSUPPORTED). Kept apart so that every broker module can raise them without import cycles."""

from __future__ import annotations

from ..casekit.findings import CaseUnsupported
from ..errors import ConformanceError


class HookFailed(ConformanceError):
    """A profile action (command or management call) failed; the case that needed it reports error."""


class HookUnsupported(CaseUnsupported):
    """The profile has no such hook: the case that needs it is UNSUPPORTED (never failed, never skipped).
    It is a CaseConclusion, so raising it inside a case ends the case with that verdict."""

    def __init__(self, hook: str, profile: str):
        self.hook = hook
        self.profile = profile
        super().__init__(f"the broker profile {profile} has no {hook!r} hook; add one to the profile to run this case")
