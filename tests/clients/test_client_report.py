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
