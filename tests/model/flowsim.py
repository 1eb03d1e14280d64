"""Test helpers for the flow-control model: a scripted transcript builder, and a sans-IO simulation of our
receiving peer and a broker sender joined by two FIFO queues (frames in flight), recording the transcript
in the order our peer sees it. The simulated broker follows 2.5.6/2.6.7 unless told to break a rule."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from conformance.model import FlowOracle, LinkEndpoint, SessionEndpoint
from conformance.wire import Attach, Begin, Flow, Frame, Source, Target, Transfer

MASK = 0xFFFFFFFF


class Script:
    """Feeds hand-written frames to one oracle; session fields of flows are filled from the oracle's view."""

    def __init__(self, judge: str = "in", in_flight: str = "tolerate"):
        self.oracle = FlowOracle(judge, in_flight=in_flight)
        self.delivery_ids = {"in": 0, "out": 0}

    def out(self, body, channel: int = 0):
        return self.oracle.observe("out", Frame(channel, body))

    def inn(self, body, channel: int = 0):
        return self.oracle.observe("in", Frame(channel, body))

    def ids(self, body, channel: int = 0, direction: str = "in"):
        return [v.requirement_id for v in (self.inn if direction == "in" else self.out)(body, channel)]

    def our_flow(self, channel: int = 0, **fields) -> Flow:
        ep = self.oracle.session(channel, "out")
        values = dict(next_incoming_id=ep.next_incoming_id, incoming_window=ep.incoming_window,
                      next_outgoing_id=ep.next_outgoing_id, outgoing_window=ep.outgoing_window)
        values.update(fields)
        return Flow(**values)

    def broker_flow(self, channel: int = 0, **fields) -> Flow:
        ep = self.oracle.session(channel, "in")
        values = dict(next_incoming_id=ep.next_incoming_id, incoming_window=ep.incoming_window,
                      next_outgoing_id=ep.next_outgoing_id, outgoing_window=ep.outgoing_window)
        values.update(fields)
        return Flow(**values)

    def transfer(self, handle: int, direction: str = "in", first: bool = True, **fields) -> Transfer:
        if first:
            fields.setdefault("delivery_id", self.delivery_ids[direction])
            if not fields.get("more"):
                self.delivery_ids[direction] += 1
        return Transfer(handle=handle, **fields)


def receiver_link(initial: int = 0xFFFFFFFB, our_window: int = 100, broker_next_outgoing: int = 7,
                  judge: str = "in", in_flight: str = "tolerate", pipelined_flow: Flow | None = None) -> Script:
    """Our peer (channel 0, handle 0) receives from the broker (channel 0, handle 3)."""
    s = Script(judge, in_flight)
    s.out(Begin(next_outgoing_id=0, incoming_window=our_window, outgoing_window=100))
    s.inn(Begin(remote_channel=0, next_outgoing_id=broker_next_outgoing, incoming_window=400, outgoing_window=400))
    s.out(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    if pipelined_flow is not None:
        s.out(pipelined_flow)
    s.inn(Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                 initial_delivery_count=initial))
    return s


def sender_link(initial: int = 0xFFFFFFFE, broker_window: int = 100, judge: str = "in") -> Script:
    """Our peer (channel 0, handle 1) sends to the broker (channel 0, handle 5)."""
    s = Script(judge)
    s.out(Begin(next_outgoing_id=0xFFFFFFF0, incoming_window=100, outgoing_window=100))
    s.inn(Begin(remote_channel=0, next_outgoing_id=0, incoming_window=broker_window, outgoing_window=400))
    s.out(Attach(name="s", handle=1, role=False, source=Source(), target=Target(address="q"),
                 initial_delivery_count=initial))
    s.inn(Attach(name="s", handle=5, role=True, source=Source(), target=Target(address="q")))
    return s


# -- the simulation ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Faults:
    overdraft: bool = False          # sends while its link-credit is <= 0
    ignore_window: bool = False      # sends while our incoming-window is exhausted
    keep_credit: bool = False        # its flows show the credit as granted, not decreased by transfers
    ignore_drain: bool = False       # never advances delivery-count on drain


class Simulation:
    """Our receiving peer and a broker sender with frames in flight both ways."""

    def __init__(self, initial_dc: int, peer_first_id: int, broker_first_id: int, faults: Faults = Faults(),
                 judge: str = "both"):
        self.faults = faults
        self.oracle = FlowOracle(judge)
        self.transcript: list = []
        self.found: list = []
        self.to_broker: deque = deque()
        self.to_peer: deque = deque()
        self.peer_link = LinkEndpoint.receiver()
        self.peer_session = SessionEndpoint.begin(peer_first_id, 0, 100)
        self.broker_link = LinkEndpoint.sender(initial_dc)
        self.broker_session = SessionEndpoint.begin(broker_first_id, 1000, 1000)
        self.messages = 0
        self.delivery_id = 0
        self.granted: tuple | None = None           # (delivery-count, credit) of the flow the broker applied
        # handshake, delivered at once
        self._peer_sends(Begin(next_outgoing_id=peer_first_id, incoming_window=0, outgoing_window=100))
        self._deliver_to_broker()
        self._broker_sends(Begin(remote_channel=0, next_outgoing_id=broker_first_id, incoming_window=1000,
                                 outgoing_window=1000))
        self._deliver_to_peer()
        self._peer_sends(Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
        self._deliver_to_broker()
        self._broker_sends(Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                                  initial_delivery_count=initial_dc))
        self._deliver_to_peer()

    # -- frames --------------------------------------------------------------------------------------------

    def _record(self, direction: str, body) -> None:
        frame = Frame(0, body)
        self.transcript.append((direction, frame))
        self.found += self.oracle.observe(direction, frame)

    def _peer_sends(self, body) -> None:
        self._record("out", body)
        self.to_broker.append(body)

    def _broker_sends(self, body) -> None:
        self.to_peer.append(body)

    # -- our peer ------------------------------------------------------------------------------------------

    def grant(self, credit: int, drain: bool, window: int) -> None:
        self.peer_link.set_credit(credit, drain)
        self.peer_session.set_windows(window, 100)
        self._peer_sends(Flow(next_incoming_id=self.peer_session.next_incoming_id, incoming_window=window,
                              next_outgoing_id=self.peer_session.next_outgoing_id, outgoing_window=100, handle=0,
                              delivery_count=self.peer_link.delivery_count, link_credit=credit, drain=drain))

    def _deliver_to_peer(self) -> bool:
        if not self.to_peer:
            return False
        body = self.to_peer.popleft()
        self._record("in", body)
        if isinstance(body, Begin):
            self.peer_session.on_remote_begin(body.next_outgoing_id, body.incoming_window, body.outgoing_window)
        elif isinstance(body, Attach):
            self.peer_link.on_sender_attach(body.initial_delivery_count)
        elif isinstance(body, Transfer):
            self.peer_session.on_receive_transfer()
            self.peer_link.on_transfer_frame(body.more, body.aborted)
        elif isinstance(body, Flow):
            self.peer_session.on_remote_flow(body.next_incoming_id, body.incoming_window, body.next_outgoing_id,
                                             body.outgoing_window)
            self.peer_link.on_sender_flow(body.delivery_count, body.link_credit, body.available)
        return True

    # -- the broker ----------------------------------------------------------------------------------------

    def _deliver_to_broker(self) -> bool:
        if not self.to_broker:
            return False
        body = self.to_broker.popleft()
        if isinstance(body, Begin):
            self.broker_session.on_remote_begin(body.next_outgoing_id, body.incoming_window, body.outgoing_window)
        elif isinstance(body, Flow):
            self.broker_session.on_remote_flow(body.next_incoming_id, body.incoming_window, body.next_outgoing_id,
                                               body.outgoing_window)
            if body.handle is not None:
                self.broker_link.on_receiver_flow(body.delivery_count, body.link_credit, body.drain)
                self.granted = (self.broker_link.delivery_count, self.broker_link.link_credit)
                self._maybe_drain()
        return True

    def _maybe_drain(self) -> None:
        if self.broker_link.drain and self.messages == 0 and self.broker_link.link_credit > 0 \
                and not self.faults.ignore_drain:
            self.broker_link.on_drain_exhausted()
            self.broker_flow()

    def add_messages(self, n: int) -> None:
        self.messages += n

    def broker_tick(self, frames: int) -> None:
        """Send one message of `frames` transfer frames if credit and window allow (or a fault says so)."""
        link_ok = self.broker_link.may_send() > 0 or self.faults.overdraft
        window = self.broker_session.may_send() or 0
        window_ok = window >= frames or self.faults.ignore_window
        if self.messages and link_ok and window_ok:
            self.messages -= 1
            for i in range(frames):
                more = i < frames - 1
                self.broker_session.on_send_transfer()
                self._broker_sends(Transfer(handle=3, delivery_id=self.delivery_id if i == 0 else None,
                                            more=more or None))
            self.broker_link.on_transfer_frame(False, False)
            self.delivery_id = (self.delivery_id + 1) & MASK
            if self.messages == 0:
                self._maybe_drain()

    def broker_flow(self) -> None:
        credit = max(self.broker_link.link_credit, 0)
        if self.faults.keep_credit and self.granted is not None:
            credit = max(self.granted[1], 0)
        s = self.broker_session
        self._broker_sends(Flow(next_incoming_id=s.next_incoming_id, incoming_window=s.incoming_window,
                                next_outgoing_id=s.next_outgoing_id, outgoing_window=s.outgoing_window, handle=3,
                                delivery_count=self.broker_link.delivery_count, link_credit=credit,
                                available=self.messages, drain=self.broker_link.drain))

    # -- running a script ----------------------------------------------------------------------------------

    def step(self, action: tuple) -> None:
        kind = action[0]
        if kind == "grant":
            self.grant(*action[1:])
        elif kind == "to_broker":
            self._deliver_to_broker()
        elif kind == "to_peer":
            self._deliver_to_peer()
        elif kind == "tick":
            self.broker_tick(action[1])
        elif kind == "broker_flow":
            self.broker_flow()
        elif kind == "messages":
            self.add_messages(action[1])

    def settle(self) -> None:
        """Deliver everything in flight, then the broker reports its state once more."""
        while self._deliver_to_broker():
            pass
        self.broker_flow()
        while self._deliver_to_peer():
            pass
