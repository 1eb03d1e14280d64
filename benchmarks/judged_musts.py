"""Which catalogue MUSTs were judged on which broker in finished run directories. Prints one JSON object.

A MUST counts as judged on a broker when a case ran there to a verdict (not error / unsupported) and
- a finding names it; or
- the case declares it among its own requirements and passed, failed or was non-strict (the whole script ran),
  or recorded an outcome of the behaviour it watches (observation "outcome", e.g. 2.6.7/12, 2.5.6/2); or
- it is a rule of the flow-control model and the broker sent the frames the rule judges (its transcripts):
  transfers, flows as sender / as receiver / without handle, a sender attach, any end or close.
A MUST with `observable = false` is listed with the catalogue's reason instead.

Usage: .venv/bin/python benchmarks/judged_musts.py RUN_DIR [RUN_DIR ...]   (reports/runs/<run-id>/)
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from conformance import catalogue
from conformance.cases import load_all
from conformance.wire import Attach, Close, End, Flow, FrameDecoder, Transfer

# model rule -> the kind of broker frame it judges
MODEL_FRAMES = {"2.6.7/no-send-without-credit": "transfer", "2.5.6/remote-incoming-window-decrement": "transfer",
                "2.7.5/delivery-id-first": "transfer", "2.6.7/credit-decrease-on-send": "sender-flow",
                "2.7.4/sender-delivery-count-set": "sender-flow", "2.6.7/credit-formula": "sender-flow",
                "2.6.7/drain-advance": "sender-flow", "2.7.4/receiver-delivery-count": "receiver-flow",
                "2.7.4/link-fields-need-handle": "session-flow", "2.7.4/next-incoming-id-set": "flow",
                "2.7.3/initial-delivery-count-sender": "attach-sender", "2.4.3/close-frame-first": "end"}


def broker_frames(transcripts: list) -> set[str]:
    kinds: set[str] = set()
    for transcript in transcripts:
        sending: dict[int, set] = defaultdict(set)      # the broker's channel -> handles it sends on
        for entry in transcript["entries"]:
            if entry["direction"] != "in" or entry.get("frame_type") != "amqp":
                continue
            decoded = FrameDecoder().feed(bytes.fromhex(entry["raw"]))
            body = getattr(decoded[0], "body", None) if decoded else None
            channel = decoded[0].channel if decoded else None
            if isinstance(body, Attach) and body.role is False:
                kinds.add("attach-sender")
                sending[channel].add(body.handle)
            elif isinstance(body, Transfer):
                kinds.add("transfer")
            elif isinstance(body, Flow):
                kinds.add("flow")
                kinds.add("session-flow" if body.handle is None else
                          "sender-flow" if body.handle in sending[channel] else "receiver-flow")
            elif isinstance(body, (End, Close)):
                kinds.add("end")
    return kinds


def judged(run_dirs: list[Path]) -> dict[str, set[str]]:
    cases = load_all()
    musts = [r.id for r in catalogue.load().values() if r.level == "MUST" and r.observable]
    out: dict[str, set[str]] = {rid: set() for rid in musts}
    for run in run_dirs:
        for line in (run / "results.jsonl").read_text("utf-8").splitlines():
            record = json.loads(line)
            if record["verdict"] in ("error", "unsupported") or record["case_id"] not in cases:
                continue
            spec, broker = cases[record["case_id"]], record["broker"]
            path = run / "transcripts" / f"{record['case_id'].replace('/', '_')}__{broker}.json"
            kinds = broker_frames(json.loads(path.read_text("utf-8"))) if path.exists() else set()
            found = {f["requirement"] for f in record["findings"]}
            ran = record["verdict"] in ("pass", "fail", "non-strict") or (
                record.get("outcome") == "recorded" and "outcome" in record.get("observations", {}))
            for rid in musts:
                if rid in found or (rid in spec.requirements and ran) or MODEL_FRAMES.get(rid) in kinds:
                    out[rid].add(broker)
    return out


def main(argv: list[str]) -> int:
    if not argv or any(not (Path(a) / "results.jsonl").exists() for a in argv):
        print("usage: judged_musts.py RUN_DIR [RUN_DIR ...] (directories with a results.jsonl)", file=sys.stderr)
        return 2
    result = judged([Path(a) for a in argv])
    print(json.dumps({"judged": {rid: sorted(b) for rid, b in result.items()},
                      "never_judged": sorted(rid for rid, b in result.items() if not b),
                      "not_observable": {r.id: r.unobservable_because for r in catalogue.load().values()
                                         if r.level == "MUST" and not r.observable}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
