"""What `check` does with what it cannot judge: a capture of one direction only, non-AMQP streams, a
directory where some inputs are no capture, transcripts with bad entries, files it may not read. Each is
reported once, in one line, with its documented exit code; nothing is judged on what was not captured."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from capwriter import CLIENT, SERVER, Conversation, publisher, tcp_packet, write_pcap

from conformance import errors
from conformance.cli import main
from conformance.traffic.check import judge_all
from conformance.wire import AMQP_HEADER, Begin, Flow, Open, encode_frame

ROOT = Path(__file__).resolve().parents[2]
RDC = "2.7.4/receiver-delivery-count"


def check(capsys, *paths, reports) -> tuple[int, str, str]:
    rc = main(["check", *map(str, paths), "--reports-dir", str(reports)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def _one_direction(packets: list[bytes], keep: tuple) -> list[bytes]:
    """The packets whose source is `keep` (what `tcpdump src host ...` or a one-way mirror port captures)."""
    src = lambda p: (".".join(str(b) for b in p[26:30]), int.from_bytes(p[34:36], "big"))   # noqa: E731
    return [p for p in packets if src(p) == keep]


# -- one-sided captures ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kept, side", [(SERVER, "server"), (CLIENT, "client")])
def test_a_capture_of_one_direction_is_reported_one_sided_and_not_judged(tmp_path, capsys, kept, side):
    """Both directions give one finding (the broker's flow without delivery-count); one direction alone gives
    none: the broker's transfers are not judged against flows the capture never saw, nor the client's."""
    both = publisher().packets()
    write_pcap(tmp_path / "both.pcap", both)
    write_pcap(tmp_path / "half.pcap", _one_direction(both, kept))
    assert [f.requirement_id for f in judge_all([tmp_path / "both.pcap"]).findings] == [RDC]
    rc, out, err = check(capsys, tmp_path / "half.pcap", reports=tmp_path / "r")
    assert rc == errors.EXIT_CAPTURE_ONE_SIDED == 25
    assert err.count("\n") == 1 and "holds one direction only of its 1 AMQP connection" in err
    assert f"only the {side}'s packets were captured" in err
    one_sided = [x for x in out.splitlines() if x.startswith("one-sided ")]
    assert len(one_sided) == 1 and "not judged" in one_sided[0] and not any("MUST" in x for x in out.splitlines())


def test_one_sided_connections_beside_judged_ones_are_listed_and_recorded(tmp_path, capsys):
    other = ("10.0.0.9", 40009)
    packets = _one_direction(publisher().packets(client=other), ("10.0.0.2", 5672)) + publisher().packets()
    write_pcap(tmp_path / "mixed.pcap", packets)
    rc, out, _ = check(capsys, tmp_path / "mixed.pcap", reports=tmp_path / "r")
    assert rc == errors.EXIT_MUST_FAILED and "1 connection(s) judged" in out and "not judged: 1" in out
    run = next((tmp_path / "r" / "traffic").iterdir())
    conns = [json.loads(x) for x in (run / "connections.jsonl").read_text().splitlines()]
    assert [bool(c["one_sided"]) for c in conns] == [False, True]
    assert json.loads((run / "run.json").read_text())["one_sided"] == [conns[1]["connection"]]
    assert "one-sided" in (run / "report.md").read_text()
    assert "one-sided, not judged" in (run / "report.html").read_text()


def test_a_side_seen_only_by_its_acks_is_captured(tmp_path):
    """A server that sends no byte but whose ACKs are in the capture was captured: its silence is real, and
    the client is judged (here: nothing to find)."""
    conv = Conversation().c(AMQP_HEADER).c(encode_frame(Open(container_id="c")))
    packets = conv.packets(syn=False)
    packets.insert(1, tcp_packet(SERVER, CLIENT, 5001, b"", flags=0x10))       # a bare ACK of the server
    write_pcap(tmp_path / "acks.pcap", packets)
    result = judge_all([tmp_path / "acks.pcap"])
    assert len(result.connections) == 1 and result.connections[0].one_sided is None and result.one_sided == []


def test_a_session_whose_partner_begin_was_not_captured_is_not_judged(tmp_path):
    """Mid-stream: the capture starts after the client's begin; the server's begin answers it and its flow
    sets next-incoming-id, as it must once it saw that begin. Judged as if the client had not begun, that flow
    would be a finding; the session's state is unknown, so nothing is."""
    conv = Conversation()
    for k in range(3):       # whole frames first: the boundary the mid-stream sync needs
        conv.s(encode_frame(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100),
                            channel=k))
        conv.s(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100),
                            channel=k))
    conv.c(encode_frame(Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100)))
    write_pcap(tmp_path / "mid.pcap", conv.packets(syn=False))
    result = judge_all([tmp_path / "mid.pcap"])
    assert result.connections[0].mid_stream and result.connections[0].frames == 7 and result.findings == []


# -- non-AMQP streams -----------------------------------------------------------------------------------------

def _stream(client: bytes, server: bytes, port: int) -> list[bytes]:
    conv = Conversation().c(client)
    if server:
        conv.s(server)
    return conv.packets(client=("10.0.0.1", port))


def test_each_non_amqp_stream_is_skipped_once_whatever_the_server_answered(tmp_path, capsys):
    """A client sending random bytes or an HTTP GET to a broker that answers with its AMQP header and a close
    is no AMQP conversation: skipped, once. A client sending the AMQP header then garbage spoke AMQP: one
    decode-error finding, not skipped."""
    answer = AMQP_HEADER + encode_frame(Open(container_id="b"))
    packets = (_stream(bytes(range(7, 200)), answer, 41001)
               + _stream(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", answer, 41002)
               + _stream(AMQP_HEADER + b"\x00\x00\x00\x10\x02\xbb" + bytes(10), AMQP_HEADER, 41003))
    write_pcap(tmp_path / "hostile.pcap", packets)
    rc, out, _ = check(capsys, tmp_path / "hostile.pcap", reports=tmp_path / "r")
    lines = out.splitlines()
    skipped = [x for x in lines if x.startswith("skipped ")]
    assert len(skipped) == 2 and all("not AMQP 1.0" in x for x in skipped)
    assert ":41001->" in skipped[0] and ":41002->" in skipped[1]
    decode = [x for x in lines if "decode-error" in x]
    assert len(decode) == 1 and ":41003->" in decode[0] and not any(":41003->" in x for x in skipped)
    assert rc == errors.EXIT_MUST_FAILED and "1 connection(s) judged" in out


def test_a_directory_judges_every_capture_it_can_and_lists_the_others(tmp_path, capsys):
    d = tmp_path / "captures"
    d.mkdir()
    write_pcap(d / "a-good.pcap", publisher().packets())
    write_pcap(d / "b-http.pcap", _stream(b"GET / HTTP/1.1\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n", 41004))
    (d / "c-junk.pcap").write_bytes(b"not a capture at all")
    write_pcap(d / "d-half.pcap", _one_direction(publisher().packets(), SERVER))
    rc, out, _ = check(capsys, d, reports=tmp_path / "r")
    assert rc == errors.EXIT_MUST_FAILED, out
    not_judged = [x for x in out.splitlines() if x.startswith("not judged: ")]
    assert [re.search(r"\w-\w+\.pcap", x).group(0) for x in not_judged] == ["b-http.pcap", "c-junk.pcap", "d-half.pcap"]
    assert ["(exit 22 alone)" in not_judged[0], "(exit 24 alone)" in not_judged[1],
            "(exit 25 alone)" in not_judged[2]] == [True, True, True]
    assert "1 connection(s) judged" in out and RDC in out
    run = next((tmp_path / "r" / "traffic").iterdir())
    assert len(json.loads((run / "run.json").read_text())["not_judged"]) == 3
    # none of them judgeable: the first one's error, one line
    (d / "a-good.pcap").unlink()
    rc, out, err = check(capsys, d, reports=tmp_path / "r")
    assert rc == errors.EXIT_CAPTURE_NO_AMQP and err.count("\n") == 1 and "none of the 3 inputs" in err


# -- bad transcripts and unreadable files ---------------------------------------------------------------------

def _transcript(entries) -> str:
    return json.dumps([{"schema": "amqp-conformance/transcript/1", "label": "b", "entries": entries}])


GOOD = {"index": 0, "t": 0.0, "direction": "out", "name": "header", "raw": AMQP_HEADER.hex()}


@pytest.mark.parametrize("entry, words", [
    ({**GOOD, "raw": "zz"}, "raw \"zz\" is not a hex string"),
    ({**GOOD, "raw": "abc"}, "raw \"abc\" is not a hex string"),
    ({**GOOD, "raw": 12}, "raw 12 is not a hex string"),
    (None, "null is no object"),
    ([1, 2], "[1, 2] is no object"),
    ({**GOOD, "direction": "sideways"}, "direction \"sideways\" is neither"),
    ({**GOOD, "direction": None}, "direction null is neither"),
    ({**GOOD, "t": "noon"}, "t \"noon\" is not a number"),
])
def test_a_transcript_with_a_bad_entry_is_one_line_and_exit_24(tmp_path, capsys, entry, words):
    path = tmp_path / "t.json"
    path.write_text(_transcript([GOOD, entry]))
    rc, out, err = check(capsys, path, reports=tmp_path / "r")
    assert rc == errors.EXIT_NOT_A_CAPTURE, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "transcript 0, entry 1" in err and words in err
    assert not (tmp_path / "r").exists()


def test_entries_that_are_no_list_are_one_line_too(tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"entries": {"a": 1}}))
    rc, _, err = check(capsys, path, reports=tmp_path / "r")
    assert rc == errors.EXIT_NOT_A_CAPTURE and "entries that are no list" in err and err.count("\n") == 1


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="root reads any file; util-linux's setpriv drops that")
@pytest.mark.parametrize("kind", ["capture", "transcript"])
def test_a_file_check_may_not_read_is_one_line_and_exit_10(tmp_path, kind):
    """A file check may not read (tshark as root writes 0600 files): one line, exit 10, no traceback. As root,
    the child runs without the capabilities that let root read any file (setpriv)."""
    path = tmp_path / ("c.pcap" if kind == "capture" else "t.json")
    if kind == "capture":
        write_pcap(path, publisher().packets())
    else:
        path.write_text(_transcript([GOOD]))
    path.chmod(0)
    without_root = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    proc = subprocess.run([*without_root, sys.executable, "-m", "conformance.cli", "check", str(path),
                           "--reports-dir", str(tmp_path / "r")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.returncode == errors.EXIT_PERMISSION, proc.stderr
    assert proc.stderr.count("\n") == 1 and "permission denied" in proc.stderr and "Traceback" not in proc.stderr


def test_ctrl_c_on_check_says_nothing_was_written(tmp_path):
    """SIGINT while `check` judges: exit 130, the line says nothing was written, and nothing was."""
    big = tmp_path / "big.pcap"
    write_pcap(big, publisher().packets())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    slow = ("import sys, time; from conformance.cli import main; import conformance.traffic.check as c; "
            "real = c.judge_all; "
            "c.judge_all = lambda *a, **k: (print('judging', flush=True), time.sleep(30), real(*a, **k))[2]; "
            "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", slow, "check", str(big), "--reports-dir", str(tmp_path / "r")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "judging"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    assert err.strip() == "error: interrupted; nothing was written (check writes its run directory once every input " \
                          "is judged)"
    assert not list((tmp_path / "r").glob("traffic/*")) and not list((tmp_path / "r").glob("traffic/.*"))
