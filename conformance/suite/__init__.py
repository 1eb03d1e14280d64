"""The conformance suite as pytest tests: one test per case and broker (collected with --pyargs)."""
