"""Exploring a receiver link with random flow scripts, judged step by step by the flow-control model.

A script is a list of steps on one receiver link of one connection to a queue preloaded with messages:
grant credit, stop, drain, echo, consume, and a flow with a stale delivery-count. `ReceiverExplorer` applies
them through the scripted peer (exactly the frames each step names, nothing else), lets the broker's
unsolicited frames land (a bounded settle), and feeds every new frame of the transcript to the model's
`FlowOracle`; the first MUST or SHOULD it finds broken raises `Violated`. The random scripts themselves are
drawn by hypothesis in the suite's own tests (tests/cases/test_stateful_receiver.py); a failing script is
saved as a reproducer (`save_reproducer`, JSON under `<reports-dir>/reproducers/`) and `replay` runs it again,
against any broker, as an ordinary check (`amqp-conformance replay`).

It is not a conformance case and does not pose as one: no case spec, no verdict; it speaks to the broker
through the peer and the broker handle, as cases do.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
from pathlib import Path

from .. import catalogue
from ..peer import Precluded, settle
from ..peer.barrier import begin_end_round_trip
from ..model import FlowOracle
from ..peer import ExpectationTimeout, Peer, Timeouts
from ..options import RunOptions, default_reports_dir
from ..wire import Attach, Begin, Close, Detach, End, Transfer, serial_add

CHANNEL, HANDLE = 0, 0
BARRIER_CHANNEL = 1      # a session begun and ended after each step: its answer orders what the step caused
SETTLE_S = 0.05          # how long the broker's own frames are given to land after each step
_names = itertools.count(1)


class Violated(AssertionError):
    """The model found a MUST or SHOULD broken; the message names the requirement and the frame."""


class ExploreError(Exception):
    """The exploration could not be set up (the broker refused the queue or the link)."""


def reproducers_dir(reports_dir: Path | None = None) -> Path:
    """Where reproducers go: `<reports-dir>/reproducers` (the reports directory of the run options)."""
    return Path(reports_dir if reports_dir is not None else default_reports_dir()) / "reproducers"


class ReceiverExplorer:
    """One connection, one receiver link on a preloaded queue; steps are applied and judged one by one."""

    def __init__(self, broker, options: RunOptions, preload: int = 300):
        self.broker = broker
        self.steps: list[list] = []
        self.received: list = []
        self.queue = broker.unique_queue("explore")
        self.peer: Peer | None = None
        self._oracle = FlowOracle()
        self._judged = 0
        try:
            broker.create_queue(self.queue)
            broker.preload(self.queue, [f"{self.queue}#{i}".encode() for i in range(preload)])
            self.peer = Peer.connect(broker.address, tls=broker.tls,
                                     timeouts=Timeouts(frame=options.frame_timeout, quiet=options.quiet_period,
                                                       connect=options.connect_timeout))
            self.peer.handshake(sasl=broker.sasl_mechanism,
                                container_id=f"amqp-conformance-explore-{next(_names)}")
            self.peer.begin(CHANNEL)
            self.peer.expect(Begin)
            self.peer.attach_receiver(f"explore-receiver-{self.queue}", broker.queue_address(self.queue, "source"),
                                      channel=CHANNEL, handle=HANDLE)
            reply = self.peer.expect((Attach, Detach, End, Close))
            if not isinstance(reply.body, Attach):
                raise ExploreError(f"the broker refused a receiver on {self.queue}: {reply.name}")
        except BaseException:
            self.close()
            raise

    @property
    def link(self):
        """The peer's view of the link (delivery-count, link-credit, the broker's handle)."""
        return self.peer.state.link(CHANNEL, HANDLE)

    def apply(self, step: list) -> None:
        kind, *args = step
        self.steps.append(step)
        peer, link = self.peer, self.link
        if kind == "grant":
            peer.flow(CHANNEL, handle=HANDLE, link_credit=args[0])
        elif kind == "stop":
            peer.flow(CHANNEL, handle=HANDLE, link_credit=0)
        elif kind == "drain":
            peer.flow(CHANNEL, handle=HANDLE, link_credit=args[0], drain=True)
        elif kind == "echo":
            peer.flow(CHANNEL, handle=HANDLE, link_credit=max(link.link_credit, 0), echo=True)
        elif kind == "stale":
            back, credit = args
            peer.flow(CHANNEL, handle=HANDLE, link_credit=credit,
                      delivery_count=serial_add(int(link.delivery_count), -back))
        elif kind == "consume":
            remote_channel = peer.state.session(CHANNEL).remote_channel
            for _ in range(args[0]):
                try:
                    frame = peer.expect(Transfer, channel=remote_channel, handle=link.remote_handle, timeout=SETTLE_S)
                except ExpectationTimeout:
                    break
                self.received.append(frame)
        else:
            raise ValueError(f"unknown step {kind!r}")
        self._barrier()
        settle(peer, SETTLE_S)        # judge a transcript that no longer changes: same script, same verdict
        self.check()

    def _barrier(self) -> None:
        """A round trip after the step: the broker answers our begin only after it processed the step, so what
        the step made it send has arrived, on a loaded machine too (same script, same transcript). A broker
        that closes or does not answer leaves the judging to `check`, as without the barrier."""
        peer = self.peer
        try:
            theirs = begin_end_round_trip(peer, BARRIER_CHANNEL)
            peer.expect(End, channel=theirs, unless=lambda f: isinstance(f.body, Close))
        except (Precluded, ExpectationTimeout):
            pass

    def check(self) -> None:
        """Feed the frames that arrived or left since the last check to the model; raise on a MUST or SHOULD."""
        entries = self.peer.transcript.snapshot()
        new, self._judged = entries[self._judged:], len(entries)
        for entry in new:
            if getattr(entry.item, "body", None) is None:
                continue
            for v in self._oracle.observe(entry.direction, entry.item):
                if catalogue.get(v.requirement_id).level in ("MUST", "SHOULD"):
                    raise Violated(f"{v.requirement_id} ({v.level}) at frame {v.frame_index}: {v.detail}")

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
        try:
            self.broker.delete_queue(self.queue)
        except Exception:  # cleanup of a queue must not hide what the exploration found
            pass


def save_reproducer(steps: list, error: str, directory: Path | None = None) -> Path:
    """Write a failing script as `receiver-<time>.json` into `directory` (default: reproducers_dir())."""
    directory = Path(directory) if directory is not None else reproducers_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    path = directory / f"receiver-{stamp}.json"
    path.write_text(json.dumps({"kind": "receiver-link", "violation": error, "steps": steps}, indent=1))
    return path


def load_reproducer(path: Path) -> list:
    """The steps of a saved reproducer (ValueError / KeyError / OSError for anything else)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("kind") != "receiver-link" or not isinstance(data.get("steps"), list):
        raise ValueError("not a receiver-link reproducer")
    return data["steps"]


def replay(path: Path, broker, options: RunOptions) -> None:
    """Run a saved reproducer again; raises Violated when the broker still breaks the requirement."""
    steps = load_reproducer(path)
    explorer = ReceiverExplorer(broker, options)
    try:
        for step in steps:
            explorer.apply(step)
        explorer.apply(["consume", 50])
    finally:
        explorer.close()
