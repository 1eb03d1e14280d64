"""Shared test settings: hypothesis profiles ("ci" is the default: derandomized, modest; "deep" runs longer)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
