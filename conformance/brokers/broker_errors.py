"""The signals the broker layer gives the layers above it: a hook that failed (ERROR) and a hook the broker
lacks (UNSUPPORTED). Kept apart so that every broker module can raise them without import cycles; this
module imports nothing above `conformance.errors`. The runner (`conformance.runner.run_case`) turns
`HookUnsupported` into the verdict `unsupported` and `HookFailed` into `error`.
"""

from __future__ import annotations

from ..errors import ConformanceError


class HookFailed(ConformanceError):
    """A profile action (command or management call) failed; the case that needed it reports error."""


class HookUnsupported(Exception):
    """The broker (its profile) has no such hook: the case that needs it is UNSUPPORTED, never failed,
    never skipped. A broker-level fact, not a verdict: the runner maps it to one."""

    def __init__(self, hook: str, profile: str):
        self.hook = hook
        self.profile = profile
        super().__init__(f"the broker profile {profile} has no {hook!r} hook; add one to the profile to run this case")
