"""Exploring a receiver link with random flow scripts (hypothesis), judged by the flow-control model.

`ReceiverScript`-level steps (grant credit, stop, drain, echo, consume, stale delivery-count) are drawn at
random; after every step the oracle (conformance.model) judges the whole transcript. A failing script is
shrunk by hypothesis and saved as a reproducer: a JSON file of steps that `replay()` runs again, against any
broker, as an ordinary check.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from ..cases.context import settle, transcript_violations
from ..peer import ExpectationTimeout
from ..wire import Transfer, serial_add

REPRODUCER_DIR = Path("reports") / "reproducers"


class _Spec:
    id = "explore/1"


class Violated(AssertionError):
    """The model found a MUST or SHOULD broken; the message names the requirement and the frame."""


class ReceiverExplorer:
    """One connection, one receiver link on a preloaded queue; steps are applied and judged one by one."""

    def __init__(self, broker, options, preload: int = 300):
        from ..cases.context import CaseContext
        self.ctx = CaseContext(_Spec(), broker, options)
        queue = self.ctx.queue(preload=preload)
        self.link = self.ctx.session().attach_receiver(queue)
        self.steps: list[list] = []
        self.consumed = 0

    def apply(self, step: list) -> None:
        kind, *args = step
        self.steps.append(step)
        link = self.link
        if kind == "grant":
            link.flow(link_credit=args[0])
        elif kind == "stop":
            link.flow(link_credit=0)
        elif kind == "drain":
            link.flow(link_credit=args[0], drain=True)
        elif kind == "echo":
            link.flow(link_credit=max(link.state.link_credit, 0), echo=True)
        elif kind == "stale":
            back, credit = args
            link.flow(link_credit=credit, delivery_count=serial_add(int(link.delivery_count), -back))
        elif kind == "consume":
            for _ in range(args[0]):
                try:
                    frame = link.peer.expect(Transfer, channel=link.session.remote_channel,
                                             handle=link.broker_handle, timeout=0.05)
                except ExpectationTimeout:
                    break
                link.received.append(frame)
        settle(self.link.peer, 0.05)     # judge a transcript that no longer changes: same script, same verdict
        self.check()

    def check(self) -> None:
        for v, _ in transcript_violations(self.link.peer):
            raise Violated(f"{v.requirement_id} ({v.level}) at frame {v.frame_index}: {v.detail}")

    def close(self) -> None:
        self.ctx.close()


def save_reproducer(steps: list, error: str, directory: Path | None = None) -> Path:
    directory = Path(directory or REPRODUCER_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    path = directory / f"receiver-{stamp}.json"
    path.write_text(json.dumps({"kind": "receiver-link", "violation": error, "steps": steps}, indent=1))
    return path


def replay(path: Path, broker, options) -> None:
    """Run a saved reproducer again; raises Violated when the broker still breaks the requirement."""
    data = json.loads(Path(path).read_text())
    explorer = ReceiverExplorer(broker, options)
    try:
        for step in data["steps"]:
            explorer.apply(step)
        explorer.apply(["consume", 50])
    finally:
        explorer.close()
