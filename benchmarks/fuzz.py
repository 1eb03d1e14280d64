"""Coverage-guided fuzzing (atheris, libFuzzer) of the frame decoder and of the peer's inbound path.

Each input is fed to both targets:
- decoder: `FrameDecoder` (in two chunks, cut where the input says), `decode_frame` and `decode_value` on the
  raw bytes. Only `DecodeError` may escape.
- inbound: what the peer's reader does with bytes from a broker (`conformance.peer.inbound.Inbound`, sans-IO)
  on a connection that has a session (channel 0) with a receiving link (handle 0) and a sending link
  (handle 1): a valid AMQP header, then the input; every item is recorded in a transcript, summarised as a
  ladder line and observed by the session/link bookkeeping; a decode error is turned into the peer's error
  (`MalformedInput`, or `NotAmqp`). Nothing may escape: in the peer, an exception there kills the reader
  thread and every later wait times out instead of saying what happened.

Usage: .venv/bin/python benchmarks/fuzz.py [--runs N] [--seed S] [--crashes DIR]    (default N = 1,000,000)

Prints one JSON object: executions, seconds, coverage (libFuzzer's covered edges and features), crashes (each
with the target, the exception and the input in hex; inputs are also written to --crashes DIR), and the
exit code is 1 when there was a crash. The fuzzing runs in a child process (libFuzzer ends its process when
the runs are done); the parent reads libFuzzer's closing lines and the crash file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

CRASH_LIMIT = 50          # crashes recorded in full; more are counted only


def _seeds() -> list[bytes]:
    """Valid broker-side byte streams to start from: handshake frames, flows, transfers, detach, end, close."""
    from conformance.wire import (
        Attach, Begin, Close, Detach, End, Error, Flow, Open, SaslMechanisms, SaslOutcome, Source, Symbol,
        Target, Transfer, encode_frame, heartbeat,
    )
    from conformance.wire.frames import SASL_FRAME
    frames = [
        encode_frame(Open(container_id="broker", max_frame_size=65536, idle_time_out=1000)),
        encode_frame(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=2048, outgoing_window=2048)),
        encode_frame(Attach(name="r", handle=0, role=False, source=Source(address="q"), target=Target(),
                            initial_delivery_count=0)),
        encode_frame(Attach(name="s", handle=1, role=True, source=Source(), target=Target(address="q"))),
        encode_frame(Flow(next_incoming_id=0, incoming_window=2048, next_outgoing_id=0, outgoing_window=2048,
                          handle=1, delivery_count=0, link_credit=100)),
        encode_frame(Transfer(handle=0, delivery_id=0, delivery_tag=b"\0\0\0\0", message_format=0), 0,
                     b"\x00Su\xa0\x05hello"),
        encode_frame(Transfer(handle=0, delivery_id=1, delivery_tag=b"\0\0\0\1", more=True), 0, b"x" * 40),
        encode_frame(Detach(handle=0, closed=True, error=Error(condition=Symbol("amqp:internal-error")))),
        encode_frame(End()),
        encode_frame(Close(error=Error(condition=Symbol("amqp:connection:forced"), description="bye"))),
        heartbeat(),
    ]
    sasl = [encode_frame(SaslMechanisms(sasl_server_mechanisms=[Symbol("ANONYMOUS")]), frame_type=SASL_FRAME),
            encode_frame(SaslOutcome(code=0), frame_type=SASL_FRAME)]
    return [b"\x00" + b"".join(frames[:5]), b"\x01" + b"".join(frames), b"\x02" + b"".join(sasl)] + \
        [bytes([i]) + f for i, f in enumerate(frames)]


def child(runs: int, seed: int, crash_file: str, corpus: str) -> None:
    import atheris

    with atheris.instrument_imports(include=["conformance"]):
        from conformance.peer.errors import MalformedInput, NotAmqp
        from conformance.peer.inbound import Inbound
        from conformance.peer.ladder import summarize
        from conformance.peer.state import PeerState
        from conformance.peer.transcript import Transcript
        from conformance.wire import (
            AMQP_HEADER, Attach, Begin, DecodeError, Frame, FrameDecoder, Open, Source, Target, decode_frame,
            decode_value,
        )

    setup = [Frame(0, Open(container_id="peer")),
             Frame(0, Begin(next_outgoing_id=0, incoming_window=2048, outgoing_window=2048)),
             Frame(0, Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target())),
             Frame(0, Attach(name="s", handle=1, role=False, source=Source(), target=Target(address="q"),
                             initial_delivery_count=0))]
    crashes = 0

    def crashed(target: str, data: bytes) -> None:
        nonlocal crashes
        crashes += 1
        exc_type, exc, _ = sys.exc_info()
        with open(crash_file, "a") as fh:
            fh.write(json.dumps({"target": target, "exception": f"{exc_type.__name__}: {exc}"[:300],
                                 "where": traceback.format_exc(limit=-3)[-600:], "input": data.hex()}) + "\n")

    def decoder(data: bytes, cut: int) -> None:
        try:
            dec = FrameDecoder()
            dec.feed(data[:cut])
            dec.feed(data[cut:])
        except DecodeError:
            pass
        if len(data) >= 8:
            try:
                decode_frame(data)
            except DecodeError:
                pass
        try:
            decode_value(data, 0, len(data))
        except DecodeError:
            pass

    def inbound(data: bytes, cut: int) -> None:
        state = PeerState()
        for frame in setup:
            state.observe_out(frame)
        reader = Inbound(state)
        reader.sent(setup[0].body)                    # our open: no max-frame-size, so the largest SIZE
        transcript = Transcript(label="broker")
        stream = AMQP_HEADER + data
        for part in (stream[:cut + 8], stream[cut + 8:]):
            fed = reader.feed(part)
            for item in fed.items:
                transcript.add("in", item, item.raw)
                summarize(item)
            if fed.error is not None:
                if hasattr(fed.error, "data"):
                    str(NotAmqp("amqp://x", fed.bad))
                else:
                    str(MalformedInput(fed.error, fed.bad, []))
                transcript.add("in", fed.bad, fed.bad, note=str(fed.error))
                break
        transcript.to_json()
        transcript.ladder(peer_is_receiver=True)

    def one(data: bytes) -> None:
        if not data:
            return
        cut = data[0] % (len(data) + 1)
        body = data[1:]
        for name, target in (("decoder", decoder), ("inbound", inbound)):
            try:
                target(body, min(cut, len(body)))
            except Exception:
                crashed(name, data)

    atheris.Setup([sys.argv[0], f"-runs={runs}", f"-seed={seed}", "-max_len=4096", "-print_final_stats=1",
                   corpus], one)
    atheris.Fuzz()


def main(argv: list[str]) -> int:
    runs, seed, crash_dir = 1_000_000, 1, None
    args = list(argv)
    try:
        while args:
            flag = args.pop(0)
            if flag == "--runs":
                runs = int(args.pop(0).replace("_", ""))
            elif flag == "--seed":
                seed = int(args.pop(0))
            elif flag == "--crashes":
                crash_dir = Path(args.pop(0))
            else:
                raise ValueError(flag)
        if runs <= 0:
            raise ValueError(runs)
    except (ValueError, IndexError):
        print("error: usage: benchmarks/fuzz.py [--runs N (> 0)] [--seed S] [--crashes DIR]", file=sys.stderr)
        return 2
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("error: atheris is not installed; run ./dev test once (it installs the test extras)", file=sys.stderr)
        return 8
    with tempfile.TemporaryDirectory(prefix="amqp-fuzz-") as tmp:
        corpus = Path(tmp, "corpus")
        corpus.mkdir()
        for i, s in enumerate(_seeds()):
            (corpus / f"seed-{i}").write_bytes(s)
        crash_file = Path(tmp, "crashes.jsonl")
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, __file__, "--child", str(runs), str(seed), str(crash_file),
                               str(corpus)], capture_output=True, text=True, errors="replace")
        seconds = time.monotonic() - t0
        log = proc.stderr
        crashes = [json.loads(line) for line in crash_file.read_text().splitlines()] if crash_file.exists() else []
    done = re.search(r"Done (\d+) runs in (\d+) second", log)
    cov = re.findall(r"cov: (\d+) ft: (\d+)", log)
    executions = int(done.group(1)) if done else None
    if crash_dir is not None and crashes:
        crash_dir.mkdir(parents=True, exist_ok=True)
        for i, c in enumerate(crashes[:CRASH_LIMIT]):
            (crash_dir / f"crash-{i}-{c['target']}").write_bytes(bytes.fromhex(c["input"]))
    result = {
        "executions": executions,
        "seconds": round(seconds, 1),
        "executions_per_s": round(executions / seconds) if executions else None,
        "coverage": {"edges": int(cov[-1][0]), "features": int(cov[-1][1])} if cov else None,
        "corpus_seeds": len(_seeds()),
        "crashes": len(crashes),
        "crash_samples": crashes[:5],
        "targets": ["decoder", "inbound"],
        "seed": seed,
        "fuzzer_exit": proc.returncode,
    }
    if executions is None:
        result["fuzzer_log_tail"] = log[-2000:]
    print(json.dumps(result, indent=2))
    return 0 if executions is not None and not crashes else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        sys.exit(main(sys.argv[1:]))
