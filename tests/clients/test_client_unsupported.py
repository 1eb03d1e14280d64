"""A library whose API offers the application no way to do what a case needs (a driver answering `unsupported`):
the case is `unsupported` with the driver's reason, never a fail or an error, and the next case runs on the same
driver. Shown with the reference client started with --no-manual-credit (a library with a credit window only)."""

from __future__ import annotations

from conformance.casekit.executor import run_case
from conformance.cases import load_clients
from conformance.options import RunOptions
from conformance.reference.client import subject
from conformance.verdict import Verdict

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.2, connect_timeout=5.0)


def test_a_receiver_the_api_lacks_is_unsupported_and_the_run_goes_on():
    cases = load_clients()
    s = subject(name="reference-client-window-only", no_manual_credit=True)
    try:
        pull = run_case(cases["2.6.8/101"], s, OPTIONS)               # needs a receiver with no credit window
        assert pull.verdict is Verdict.UNSUPPORTED, pull.reason
        assert "--no-manual-credit" in pull.reason and "offers the application no way" in pull.reason
        window = run_case(cases["2.6.7/101"], s, OPTIONS)             # a credit window: runs as before
        assert window.verdict is Verdict.PASS, window.reason
        assert s.starts == 1                                           # unsupported is no driver failure
    finally:
        s.discard()
