"""`amqp-conformance run` end to end against a reference broker by URL: what the console shows (verdict lines,
the verdict table, no pytest chatter; plain in CI; --json for scripts), the run directory (scheduled pairs,
finished), and the exit codes: 14 for a case in error over 1 for a MUST failure over 0; before anything runs,
bad options are exit 2 and an unresponsive server is exit 4 within --frame-timeout."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import EXIT_BROKER_UNREACHABLE, EXIT_CASE_ERROR, EXIT_MUST_FAILED, EXIT_OK, EXIT_USAGE
from conformance.run.engine import exit_code

ESC = "\x1b["


def run_dirs(reports: Path) -> list[Path]:
    return sorted((reports / "runs").iterdir()) if (reports / "runs").is_dir() else []


def test_a_run_prints_verdicts_not_pytest(tmp_path, reference_url, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    code = main(["run", "2.6.8", "--broker", reference_url, "--reports-dir", str(tmp_path), "-n", "0"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, out + err
    lines = out.splitlines()
    case_lines = [line for line in lines if line.split()[:1] in (["pass"], ["fail"], ["informational"])
                  and len(line.split()) >= 5]
    assert [line.split()[1] for line in case_lines] == ["2.6.8/1", "2.6.8/2", "2.6.8/3"]
    assert all("127.0.0.1:" in line and line.split()[4] == "s" for line in case_lines)
    assert ESC not in out, "plain lines in CI"
    for chatter in ("passed", "PASSED", "=====", "test_case[", "collected", "xdist"):
        assert chatter not in out + err
    table = out[out.index("\ncase "):]
    assert "2.6.8/2" in table and "verdicts" in table and "exit 0: no MUST-level case failed" in out
    [run] = run_dirs(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert meta["scheduled"] == 3 and meta["finished_at"] and meta["options"]["cases"] == ["2.6.8"]
    assert len((run / "results.jsonl").read_text().splitlines()) == 3
    assert (run / "junit.xml").exists() and any((run / "allure-results").iterdir())


def test_json_prints_only_records_on_stdout(tmp_path, reference_url, capsys):
    code = main(["run", "2.6.8/1", "2.7.4/1", "--json", "--broker", reference_url, "--reports-dir", str(tmp_path),
                 "-n", "0"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    records = [json.loads(line) for line in out.splitlines()]         # every line is one JSON object
    assert sorted(r["case_id"] for r in records) == ["2.6.8/1", "2.7.4/1"]
    assert all(r["verdict"] == "pass" and "requirement_ids" in r for r in records)
    assert "2.6.8/1" in err and "exit 0" in err                        # the human lines went to stderr


def test_a_case_in_error_makes_the_run_exit_14(tmp_path, reference_url, failing_preload_profile, capsys):
    code = main(["run", "2.6.8/1", "2.7.4/4", "--broker", reference_url, "--profile", str(failing_preload_profile),
                 "--reports-dir", str(tmp_path), "-n", "0"])
    out = capsys.readouterr().out
    records = [json.loads(line) for line in (run_dirs(tmp_path)[0] / "results.jsonl").read_text().splitlines()]
    assert "error" in {r["verdict"] for r in records}, records
    assert code == EXIT_CASE_ERROR, out
    assert "exit 14:" in out and any(line.startswith("error ") for line in out.splitlines())


@pytest.mark.parametrize("verdicts, code", [
    ([], EXIT_OK),
    ([("pass", "MUST"), ("informational", "MAY"), ("unsupported", "MUST")], EXIT_OK),
    ([("non-strict", "SHOULD"), ("fail", "SHOULD")], EXIT_OK),
    ([("pass", "MUST"), ("fail", "MUST")], EXIT_MUST_FAILED),
    ([("fail", "MUST"), ("error", "MUST")], EXIT_CASE_ERROR),
    ([("error", "SHOULD"), ("pass", "MUST")], EXIT_CASE_ERROR),
])
def test_exit_code_precedence(verdicts, code):
    assert exit_code([{"verdict": v, "level": level} for v, level in verdicts]) == code


@pytest.mark.parametrize("flag, value", [
    ("--frame-timeout", "-1"), ("--frame-timeout", "0"), ("--frame-timeout", "nan"), ("--frame-timeout", "inf"),
    ("--quiet-period", "-1"), ("--quiet-period", "nan"), ("--quiet-period", "0"), ("--connect-timeout", "-inf"),
    ("-n", "-1"), ("-n", "many"),
])
def test_a_bad_option_is_exit_2_with_one_line_before_anything_runs(tmp_path, flag, value, capsys):
    assert main(["run", "2.6.8/1", flag, value, "--reports-dir", str(tmp_path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and flag in err, err
    assert not run_dirs(tmp_path), "no run directory, so no run.json with NaN in it"


def test_the_same_options_are_refused_by_every_command(tmp_path, capsys):
    for argv in (["selfcheck", "--broker", "qpid-proton-c"], ["bisect", "2.6.8/2", "--build", "qpid-proton-c",
                                                                "--build", "rabbitmq-4.0"],
                 ["replay", "x.json"]):
        assert main([*argv, "--quiet-period", "nan", "--reports-dir", str(tmp_path)]) == EXIT_USAGE, argv
        assert "--quiet-period nan: give a finite number of seconds greater than 0" in capsys.readouterr().err


def test_run_json_is_strict_json(tmp_path, reference_url):
    assert main(["run", "2.6.8/1", "--broker", reference_url, "--reports-dir", str(tmp_path), "-n", "0",
                 "--frame-timeout", "1e-0", "--quiet-period", "0.2"]) == EXIT_OK
    meta = json.loads((run_dirs(tmp_path)[0] / "run.json").read_text(),
                      parse_constant=lambda c: pytest.fail(f"run.json holds {c}"))
    assert meta["options"]["frame_timeout"] == 1.0 and math.isfinite(meta["options"]["quiet_period"])


@pytest.fixture
def silent_server():
    """Accepts TCP connections and never says a word (a hung broker, or not an AMQP server at all)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted, stop = [], threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"amqp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=2)
    for conn in accepted:
        conn.close()
    server.close()


def test_the_check_before_the_run_is_bounded_by_the_frame_timeout(tmp_path, silent_server, capsys):
    t0 = time.monotonic()
    code = main(["run", "2.6.8/1", "--broker", silent_server, "--frame-timeout", "0.5",
                 "--reports-dir", str(tmp_path)])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == EXIT_BROKER_UNREACHABLE, err
    assert elapsed < 3, f"waited {elapsed:.1f} s, not the 0.5 s of --frame-timeout"
    assert err.startswith("error: ") and err.count("\n") == 1 and "0.5 s (--frame-timeout)" in err
    assert not run_dirs(tmp_path)


def test_a_run_stopped_early_is_marked_unfinished(tmp_path, capsys):
    from conformance.reference.broker import Faults
    from conformance.reference.listener import ReferenceBroker
    with ReferenceBroker(faults=Faults(ignore_drain=True)) as broker:
        code = main(["run", "2.6.8", "--broker", broker.url, "--reports-dir", str(tmp_path), "-n", "0",
                     "--", "--maxfail=1"])
    out = capsys.readouterr().out
    assert code == EXIT_MUST_FAILED, out
    [run] = run_dirs(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    recorded = len((run / "results.jsonl").read_text().splitlines())
    assert recorded < meta["scheduled"] == 3
    assert meta["finished_at"] is None and "stopped early" in meta["stopped"]["reason"]
    assert f"{recorded} of 3 scheduled cases finished" in out


def test_a_run_whose_cases_never_report_is_broken_not_green(tmp_path, reference_url, capsys, monkeypatch):
    """pytest ending "all well" with cases that never reported (its workers could not import the suite, as a
    half-written checkout does) is exit 14 naming how many finished, never exit 0 on an empty table."""
    import conformance.run.engine as engine
    monkeypatch.setattr(engine.pytest, "main", lambda *args, **kwargs: pytest.ExitCode.OK)
    code = main(["run", "2.6.8", "--broker", reference_url, "--reports-dir", str(tmp_path), "-n", "0"])
    out, err = capsys.readouterr()
    assert code == 14, out + err
    assert "0 of 3 scheduled cases finished" in err and "Traceback" not in out + err
    [run] = run_dirs(tmp_path)
    assert (run / "pytest.log").exists() and not json.loads((run / "run.json").read_text()).get("finished_at")


def test_without_n_a_run_takes_the_profiles_workers(tmp_path, own_reference_broker, capsys):
    """`run` without -n uses `[broker] workers` of the brokers' profiles (the least; 2 when none says), and -n
    overrides it: run.json records the workers the run had."""
    from conformance.brokers import BrokerSpec, parse_url
    from conformance.run.targets import default_workers
    url = own_reference_broker.url
    mine = tmp_path / "three.toml"
    mine.write_text('[broker]\nproduct = "Mine"\nworkers = 3\n[sasl]\nmechanism = "ANONYMOUS"\n')
    address = parse_url(url)
    assert default_workers([BrokerSpec("a", address, str(mine))]) == 3
    assert default_workers([BrokerSpec("a", address, str(mine)), BrokerSpec("b", address, "activemq")]) == 3
    assert default_workers([BrokerSpec("a", address, str(mine)), BrokerSpec("b", address, "generic")]) == 2
    assert default_workers([BrokerSpec("activemq-6.3.1", None, "activemq")]) == 4
    for given, workers in ((None, 3), ("0", 0)):
        reports = tmp_path / f"n-{given}"
        argv = ["run", "2.6.8/1", "--broker", url, "--profile", str(mine), "--reports-dir", str(reports)]
        code = main(argv + (["-n", given] if given else []))
        out, err = capsys.readouterr()
        assert code == EXIT_OK, out + err
        [run] = run_dirs(reports)
        assert json.loads((run / "run.json").read_text())["options"]["workers"] == workers
