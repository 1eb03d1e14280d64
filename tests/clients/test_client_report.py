"""The report keeps client libraries apart from brokers: columns the history marks as client libraries get their
own section (scores, findings, matrix), with the library's language beside its name."""

from __future__ import annotations

import re

from conformance.history.analysis import describe_column, series_of
from conformance.report import render_html, render_markdown, validate_model
from report_example import example_model


def test_client_columns_get_their_own_section():
    model = example_model()
    assert 'id="client-matrix"' not in render_html(model)           # brokers only: no client section
    column = model["columns"][0]
    column.update(subject="client", language="Go")
    validate_model(model)
    page = render_html(model)
    clients = page[page.index('<section class="block subject" id="clients"'):]
    clients = clients[:clients.index("</section>")]
    assert 'id="client-matrix"' in clients and '<span class="language">Go</span>' in clients
    assert re.findall(r'<th class="broker-col[^"]*" data-column="([^"]*)"', clients) == [column["key"]]
    assert "### Client libraries: 1 release of 1 library" in render_markdown(model)


def test_a_client_release_belongs_to_its_library_series():
    assert series_of("go-amqp-1.4.0") == series_of("go-amqp-1.7.0") == "go-amqp"
    info = describe_column({"broker": "go-amqp-1.4.0", "version": "1.4.0", "product": "go-amqp"}, {})
    assert (info["subject"], info["language"], info["label"], info["run_args"], info["bisect_series"]) == \
        ("client", "Go", "go-amqp 1.4.0", "--client go-amqp-1.4.0", "go-amqp")
    info = describe_column({"broker": "artemis-2.17.0", "version": "2.17.0", "product": "apache-activemq-artemis"}, {})
    assert (info["subject"], info["label"], info["run_args"], info["bisect_series"]) == \
        ("broker", "Artemis 2.17.0", "--broker artemis-2.17.0", "artemis")
    runs = {"r1": {"brokers": {"10.0.0.5:5672": {"url": "amqp://10.0.0.5:5672", "profile": "rabbitmq-4"}}}}
    info = describe_column({"broker": "10.0.0.5:5672", "version": "4.0.5", "product": "RabbitMQ",
                            "last_run_id": "r1"}, runs)
    assert (info["label"], info["run_args"]) == ("RabbitMQ 4.0.5", "--broker amqp://10.0.0.5:5672 --profile rabbitmq-4")
    assert "bisect_series" not in info


def test_a_fail_cell_gets_a_bug_report_a_maintainer_can_paste():
    """The bug report of a client cell that broke a MUST: library and release, the requirement quoted with its
    section and level, what was found and the frame, the frames around it with times and the crossing marked,
    what the application was told, and the one command that reproduces it."""
    from conformance.casekit.executor import run_case
    from conformance.cases import load_clients
    from conformance.catalogue import get
    from conformance.options import RunOptions
    from conformance.report.bugreport import render_bug_report, wanted
    from conformance.reference.client import subject

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
