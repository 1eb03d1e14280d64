"""`amqp-conformance run` against servers that are not AMQP brokers, or that break framing before anything
runs: one line, its own exit code, bounded by --frame-timeout, no run directory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hostile_servers import HostileServer, frame_size, http_400, http_400_after_eof

from conformance.cli import main
from conformance.errors import EXIT_MALFORMED_FRAME, EXIT_NOT_AMQP


def one_line_run(url: str, tmp_path: Path, capsys) -> tuple[int, str, float]:
    t0 = time.monotonic()
    code = main(["run", "2.6.8/1", "--broker", url, "--frame-timeout", "1", "--reports-dir", str(tmp_path)])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not (tmp_path / "runs").exists()
    return code, err, elapsed


@pytest.mark.parametrize("answer", [http_400, http_400_after_eof], ids=["answers-at-once", "answers-at-eof"])
def test_a_web_server_as_the_broker_is_exit_15(answer, tmp_path, capsys):
    with HostileServer(answer) as server:
        code, err, elapsed = one_line_run(server.url, tmp_path, capsys)
    assert code == EXIT_NOT_AMQP, err
    assert f"{server.url} is not an AMQP 1.0 server: it answered \"HTTP/1.0 400" in err
    assert elapsed < 4


def test_a_frame_size_of_4_gib_is_exit_11_at_once(tmp_path, capsys):
    with HostileServer(frame_size(0xFFFFFFFF)) as server:
        code, err, elapsed = one_line_run(server.url, tmp_path, capsys)
    assert code == EXIT_MALFORMED_FRAME and "exceeds max-frame-size 512" in err
    assert elapsed < 2, "rejected when the frame header arrives, not after the frame timeout"
