"""A short coverage-guided fuzzing run (benchmarks/fuzz.py, atheris) of the frame decoder and the peer's
inbound path: no crash (only DecodeError may escape the decoder; nothing may escape the inbound path), and
the JSON it prints says what it did. The closing note of issue #14 has one run of 1,000,000 executions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"


def test_a_short_fuzz_run_finds_no_crash(tmp_path):
    proc = subprocess.run([sys.executable, str(FUZZ), "--runs", "5000", "--crashes", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    assert result["crashes"] == 0, result["crash_samples"]
    assert result["executions"] == 5000 and result["coverage"]["edges"] > 100
    assert proc.returncode == 0


def test_a_bad_budget_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, str(FUZZ), "--runs", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
