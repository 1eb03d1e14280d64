"""The report's client matrix: drawn only for columns the history marks as client libraries."""

from __future__ import annotations

from conformance.history.analysis import series_of
from conformance.report.clients import render_client_matrix
from conformance.report.html import render_html
from conformance.report.model import validate_model
from report_example import example_model


def test_client_columns_get_their_own_matrix():
    model = example_model()
    assert render_client_matrix(model) == ""                     # brokers only: nothing more on the page
    column = model["columns"][0]
    column["subject"] = "client"
    column["language"] = "Rust"
    validate_model(model)
    html = render_client_matrix(model)
    assert 'id="client-matrix"' in html and column["broker"] in html
    assert '<span class="lang">Rust</span>' in html                  # the language beside the library
    assert html.count("<tr>") >= 2
    assert 'id="client-matrix"' in render_html(model)


def test_a_client_release_belongs_to_its_library_series():
    assert series_of("go-amqp-1.4.0") == series_of("go-amqp-1.7.0") == "go-amqp"


def test_a_fail_cell_gets_a_bug_report_a_maintainer_can_paste():
    """The bug report of a client cell that broke a MUST: library and release, the requirement quoted with its
    section and level, what was found and the frame, the frames around it with times and the crossing marked,
    what the application was told, and the one command that reproduces it."""
    from conformance.casekit.executor import run_case
    from conformance.cases import load_clients
    from conformance.catalogue import get
    from conformance.options import RunOptions
    from conformance.report.bugreport import render_bug_report, wanted
    from conformance.selftest.client import subject

    faulty = subject("client-credit-uint32")
    try:
        result = run_case(load_clients()["2.6.7/104"], faulty, RunOptions(frame_timeout=2.0, quiet_period=0.2))
    finally:
        faulty.discard()
    assert wanted(result)
    text = render_bug_report(result)
    assert text.startswith("## amqp-conformance-reference-client 1.0: ")
    assert "(AMQP 1.0 §2.6.7, MUST)" in text.splitlines()[0]
    assert f"> {get('2.6.7/no-send-without-credit').text}" in text
    assert "<== the finding" in text and "in our receive buffer, unread" in text
    assert "| `send(count=20, timeout_ms=8000)` |" in text
    assert "amqp-conformance run --client reference-client+client-credit-uint32 2.6.7/104" in text
    passing = subject()
    try:
        assert not wanted(run_case(load_clients()["2.7.4/102"], passing, RunOptions(frame_timeout=2.0)))
    finally:
        passing.discard()
