"""benchmarks/suite.py prints the JSON its README describes (one quick run of one case; not a timed test)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.broker
def test_suite_benchmark_prints_its_json_shape(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "suite.py"), "--broker", "qpid-proton-c",
                           "--repeat", "2", "--reports-dir", str(tmp_path), "2.7.3/1", "2.5.6/4"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    b = out["brokers"]["qpid-proton-c"]
    assert b["runs"] == 2 and len(b["wall_s"]["each"]) == 2
    assert b["workers"] == [2] and out["workers"] == "run's default"          # no -n: run's own default
    assert b["wall_s"]["min"] <= b["wall_s"]["median"] <= b["wall_s"]["max"]
    assert b["start_s"] > 0 and b["own_node"] is False               # proton has no alarm hooks
    assert set(b["fixed_s"]) == {"before_first_case", "after_last_case"}
    assert set(b["waited_s"]) == {"timeout", "quiet"} and b["case_sum_s"] >= 0
    assert [s["case"] for s in b["slowest"]][:2] and len(b["slowest"]) == 2
    assert b["verdicts"] == [{"2.7.3/1": "pass", "2.5.6/4": "unsupported"}] * 2 and b["verdicts_identical"]
    assert set(b["targets"]) >= {"median_wall_met", "case_median_met", "cases_over"}


def test_suite_benchmark_refuses_an_unknown_broker():
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "suite.py"), "--broker", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown managed broker 'nope'")
