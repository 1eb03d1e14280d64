"""A connection lost because the broker died is `error`, never a verdict; one the broker dropped on purpose
while it stays alive keeps its verdict. Case 2.5.6/2 sends past the broker's incoming-window; the reference
broker with `drop_on_window_excess` drops the connection without a close frame (a `fail` of
2.5.4/session-error-end). Made to die at that very moment (its listener closed as it drops), the same case
is `error`, the run exits 14, and the record says why and what the verdict would have been."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from conformance.brokers.liveness import died_during
from conformance.cli import main
from conformance.errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED
from conformance.peer.errors import CLOSE_FRAME, FIN, RESET
from conformance.reference import broker as reference_engine
from conformance.reference.broker import Faults
from conformance.reference.listener import ReferenceBroker


def run_one(case: str, url: str, reports: Path) -> tuple[int, dict]:
    code = main(["run", case, "--broker", url, "--reports-dir", str(reports), "-n", "0", "--frame-timeout", "2",
                 "--quiet-period", "0.2"])
    run = sorted((reports / "runs").iterdir())[-1]
    return code, json.loads((run / "results.jsonl").read_text().splitlines()[0])


def test_a_drop_by_a_live_broker_keeps_its_verdict(tmp_path, capsys):
    with ReferenceBroker(faults=Faults(drop_on_window_excess=True)) as broker:
        code, record = run_one("2.5.6/2", broker.url, tmp_path)
    assert record["verdict"] == "fail" and record["violated"] == "2.5.4/session-error-end", record["reason"]
    assert code == EXIT_MUST_FAILED


def test_the_same_drop_by_a_broker_that_died_is_error(tmp_path, capsys, monkeypatch):
    broker = ReferenceBroker(faults=Faults(drop_on_window_excess=True)).start()
    original = reference_engine.BrokerConnection._on_transfer

    def dies_when_it_drops(self, channel, transfer, payload):
        original(self, channel, transfer, payload)
        if self.closed:                           # the fault dropped the connection: the whole broker goes
            broker._stopping.set()
            broker._listener.close()

    monkeypatch.setattr(reference_engine.BrokerConnection, "_on_transfer", dies_when_it_drops)
    try:
        code, record = run_one("2.5.6/2", broker.url, tmp_path)
    finally:
        broker.stop()
    assert record["verdict"] == "error", record
    assert record["reason"].startswith("the broker died during the case: a connection was closed without a close "
                                       "frame (FIN) and a new connection ")
    assert record["observations"]["verdict_before_broker_died"].startswith("fail: the broker dropped the connection")
    assert code == EXIT_CASE_ERROR


class Lost:
    def __init__(self, ending):
        self.ending = ending


class Handle:
    tls, sasl_mechanism = None, "auto"

    def __init__(self, url, alive=True):
        from conformance.peer import parse_url
        self.address, self._alive, self.pid = parse_url(url), alive, 4242

    def alive(self):
        return self._alive


def test_died_during_asks_only_when_a_connection_was_lost_or_the_process_is_gone():
    closed = socket.create_server(("127.0.0.1", 0))
    dead_url = f"amqp://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    with ReferenceBroker() as live:
        assert died_during([Lost(FIN)], Handle(live.url), 1.0) is None               # dropped on purpose
        assert died_during([Lost(RESET)], Handle(live.url), 1.0) is None
    assert died_during([Lost(None)], Handle(dead_url), 1.0) is None                  # nothing was lost
    assert died_during([Lost(CLOSE_FRAME)], Handle(dead_url), 1.0).startswith(
        "the broker died during the case: a connection was closed after a close frame and a new connection")
    why = died_during([Lost(RESET)], Handle(dead_url), 1.0)
    assert why.startswith("the broker died during the case: a connection was reset (RST) and a new connection "
                          "failed (")
    assert died_during([], Handle(dead_url, alive=False), 1.0) == (
        "the broker died during the case: its process (pid 4242) is gone; no verdict can be drawn from this case")


def test_a_broker_that_hangs_during_a_case_makes_it_error():
    """A hung broker keeps its connections open: nothing was lost, but a fail could come from its silence."""
    silent = socket.create_server(("127.0.0.1", 0))       # accepts (the kernel's backlog), never answers
    url = f"amqp://127.0.0.1:{silent.getsockname()[1]}"
    try:
        assert died_during([], Handle(url), 0.5, "pass") is None             # it never talked to the broker
        assert died_during([Lost(None)], Handle(url), 0.5, "unsupported") is None
        why = died_during([Lost(None)], Handle(url), 0.5, "fail")
        assert died_during([Lost(None)], Handle(url), 0.5, "pass") == why   # silence also passes absence checks
    finally:
        silent.close()
    assert why.startswith("the broker stopped answering during the case: a new connection did not complete the "
                          "AMQP handshake within 0.5 s")
    with ReferenceBroker() as live:
        assert died_during([Lost(None)], Handle(live.url), 1.0, "non-strict") is None



class _Transcript:
    def frames(self, direction, kind):
        return []


class _PeerAnsweringCloseWith:
    """A connection whose broker answers our closing `close` with `ending` (a TCP reset, or a stall)."""

    def __init__(self, ending_before=None, answer=None, silent=False):
        self.ending = ending_before
        self.transcript = _Transcript()
        self.answer = answer
        self.silent = silent
        self.waited = None

    def silent_since_timeout(self):
        return self.silent

    def received(self, kind):
        return False

    def close_connection(self):
        pass

    def expect(self, kind, timeout):
        self.waited = timeout
        raise self.answer


def test_a_reset_answering_our_close_after_the_case_is_not_a_cut():
    """RabbitMQ 3.10 answers our close (after a case that left transfers unread) with a TCP reset: the case
    was over, the connection was not cut under it, so the verdict stands (2.6.7/14 was `error` there)."""
    from conformance.brokers.liveness import cut_or_stalled
    from conformance.peer import ConnectionLost, ExpectationTimeout
    assert cut_or_stalled([_PeerAnsweringCloseWith(answer=ConnectionLost("close", [], how=RESET))], 0.1) is None
    # a reset during the case, or no answer to our close at all, still leaves no verdict
    during = cut_or_stalled([_PeerAnsweringCloseWith(ending_before=RESET)], 0.1)
    assert during and "reset" in during
    stalled = cut_or_stalled([_PeerAnsweringCloseWith(answer=ExpectationTimeout("close", 0.1, []))], 0.1)
    assert stalled and "stalled" in stalled


def test_a_broker_silent_since_a_wait_ran_out_gets_a_second_for_our_close_not_a_frame_timeout():
    from conformance.brokers.liveness import STILL_SILENT, cut_or_stalled
    from conformance.peer import ExpectationTimeout
    silent = _PeerAnsweringCloseWith(answer=ExpectationTimeout("close", 1.0, []), silent=True)
    assert "nor anything since a wait ran out" in cut_or_stalled([silent], 5.0)
    assert silent.waited == STILL_SILENT
    talking = _PeerAnsweringCloseWith(answer=ExpectationTimeout("close", 5.0, []))
    cut_or_stalled([talking], 5.0)
    assert talking.waited == 5.0
