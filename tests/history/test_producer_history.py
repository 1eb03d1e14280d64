"""The producer facts of a run (observations.producer) survive the history: ingested as the `observations`
column (JSON text), they reach the report model's cells and its "Producer flow control" section."""

from __future__ import annotations

from conformance.history.analysis import build_model
from conformance.history.store import RECORD_COLUMNS, RECORD_SCHEMA, History
from conformance.report import render_markdown, validate_model
from conformance.options import RunOptions
from conformance.reference.broker import BrokerConfig
from conformance.reference.runs import ReferenceBuild, write_reference_run


def test_observations_is_the_last_column():
    assert RECORD_SCHEMA.endswith(", observations STRING") and RECORD_COLUMNS[-1] == "observations"


def test_producer_facts_reach_the_report(spark, tmp_path):
    reports = tmp_path / "reports"
    write_reference_run(reports, [ReferenceBuild("ref-p", "1.0", config=BrokerConfig(withdraw_on_full=True))],
                        ["2.6.7/14", "2.6.7/3"], run_id="run-p", options=RunOptions(quiet_period=0.2))
    history = History(tmp_path / "history")
    history.ingest(spark, [reports])
    model = build_model(spark, history)
    validate_model(model)
    cell = {(c["case_id"], c["column"]): c for c in model["cells"]}
    producer = cell["2.6.7/14", "ref-p@1.0"]["producer"]
    assert producer["means"] == "link-credit withdrawn" and producer["at_message"] == 11 and producer["lost"] == 0
    assert "producer" not in cell["2.6.7/3", "ref-p@1.0"]
    assert "| ref-p 1.0 | 2.6.7/14 | 10 messages | link-credit withdrawn (drain) | message 11, depth 10 |" \
        in render_markdown(model)
