"""`check --spark`: the same findings as `check`, judged in Spark tasks; the history's traffic table."""

from __future__ import annotations

import json

from capwriter import publisher, write_pcap, write_pcapng

from conformance.cli import main
from conformance.history.traffic import traffic_counts, write_traffic_findings
from conformance.traffic.check import judge_all
from conformance.traffic.spark import judge_on_spark

RDC = "2.7.4/receiver-delivery-count"


def _captures(tmp_path):
    write_pcap(tmp_path / "a.pcap", publisher().packets() + publisher(False).packets(client=("10.0.0.9", 40009)))
    write_pcapng(tmp_path / "b.pcapng", publisher(product="Other", version="1").packets())
    return [tmp_path / "a.pcap", tmp_path / "b.pcapng"]


def test_spark_judges_like_check_and_fills_the_traffic_table(tmp_path, spark):
    paths = _captures(tmp_path)
    summaries, findings, _ = judge_on_spark(spark, paths, partitions=2)
    local = judge_all(paths)
    key = lambda f: (f["connection"], f["requirement_id"], f["endpoint"], f["frame_index"], f["frame"])
    assert sorted(map(key, findings)) == sorted(key(f.to_json()) for f in local.findings)
    assert len(summaries) == 3 and sum(s["frames"] for s in summaries) == 30
    history = tmp_path / "history"
    assert write_traffic_findings(history, "r1", findings) == 2
    assert write_traffic_findings(history, "r1", findings) == 0          # a run is added once
    counts = traffic_counts(spark, history)
    assert [(c["requirement_id"], c["endpoint"], c["findings"]) for c in counts] == [
        (RDC, "server Other@1", 1), (RDC, "server TestBroker@9.9", 1)]
    assert counts[0]["first"]["frame"].startswith("flow(handle=0")


def test_check_spark_command(tmp_path, capsys, spark):
    paths = _captures(tmp_path)
    rc = main(["check", "--spark", "local[2]", *map(str, paths), "--reports-dir", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert rc == 1 and "3 connection(s) judged on Spark local[2], 30 frames" in out
    run = next((tmp_path / "r" / "traffic").iterdir())
    assert len((run / "findings.jsonl").read_text().splitlines()) == 2
    assert json.loads((run / "run.json").read_text())["spark"] == "local[2]"
    assert (tmp_path / "r" / "history" / "traffic").is_dir()


def test_check_spark_refuses_a_bad_master(tmp_path, capsys):
    write_pcap(tmp_path / "a.pcap", publisher().packets())
    rc = main(["check", "--spark", "yarn", str(tmp_path / "a.pcap")])
    assert rc == 2 and "local[N], spark://HOST:PORT or sc://HOST:PORT" in capsys.readouterr().err


def test_the_report_has_a_traffic_section_from_the_history(tmp_path, spark):
    from conformance.history.analysis import build_model
    from conformance.history.store import History
    from conformance.report.html import render_html
    from conformance.report.markdown import render_markdown
    from conformance.history.synthetic import write_synthetic_runs
    from report_example import example_model
    write_synthetic_runs(tmp_path / "reports", 1)
    History(tmp_path / "history").ingest(spark, [tmp_path / "reports"])
    paths = _captures(tmp_path)
    _, findings, _ = judge_on_spark(spark, paths, partitions=2)
    write_traffic_findings(tmp_path / "history", "r1", findings)
    model = build_model(spark, History(tmp_path / "history"))
    assert [r["endpoint"] for r in model["traffic"]] == ["server Other@1", "server TestBroker@9.9"]
    example = example_model()
    example["traffic"] = model["traffic"]
    page = render_html(example)
    assert '<section id="traffic">' in page and "server TestBroker@9.9" in page and RDC in page
    md = render_markdown(example)
    assert "## Judged traffic" in md and f"| `{RDC}` | MUST | server Other@1 | 1 | 1 |" in md
    assert "Judged traffic" not in render_markdown(example_model())        # nothing judged: no section


def _ring(tmp_path):
    """One connection's packets split over a ring buffer's three files (tshark -b names), plus a lone file."""
    pk = publisher().packets()
    ring = tmp_path / "ring"
    ring.mkdir()
    cuts = [0, 3, 7, len(pk)]
    for k in range(3):
        write_pcapng(ring / f"cap_{k + 1:05d}_2026112515{k:02d}00.pcapng", pk[cuts[k]:cuts[k + 1]])
    return ring


def test_a_ring_buffer_is_one_capture_in_check_and_on_spark(tmp_path, spark):
    ring = _ring(tmp_path)
    whole = tmp_path / "whole.pcapng"
    write_pcapng(whole, publisher().packets())
    local, alone = judge_all([ring]), judge_all([whole])
    assert len(local.connections) == 1 and not local.connections[0].mid_stream
    assert [(f.requirement_id, f.frame_index) for f in local.findings] == \
        [(f.requirement_id, f.frame_index) for f in alone.findings] and local.findings
    summaries, findings, _ = judge_on_spark(spark, [ring], partitions=3)
    key = lambda f: (f["connection"], f["requirement_id"], f["endpoint"], f["frame_index"], f["frame"])
    assert sorted(map(key, findings)) == sorted(key(f.to_json()) for f in local.findings)
    assert [s["frames"] for s in summaries] == [local.connections[0].frames]


def test_check_spark_on_a_truncated_capture_is_one_line(tmp_path, capsys, spark):
    from conformance import errors
    bad = tmp_path / "t.pcap"
    write_pcap(bad, publisher().packets())
    bad.write_bytes(bad.read_bytes()[:-7])
    rc = main(["check", "--spark", "local[2]", str(bad), "--reports-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == errors.EXIT_CAPTURE_TRUNCATED and err.count("\n") == 1 and "cut short" in err
