"""The reference client: our peer in the client role, speaking the driver protocol of clients/PROTOCOL.md, with
switchable faults (the fault catalogue's kind "client"), so that every client case is shown able to fail.

`python -m conformance.reference.client [--fault NAME]...` is a driver program like the libraries' (the suite
starts it through `ClientSubject(..., argv=...)`). One thread: it reads a command when stdin has one, takes
the frames that arrived, answers what a correct client answers (echo, drain, a flow on an unattached handle,
the broker's end and close), and moves the current command on (sending within credit and the session window,
a get with a timeout that drains when the time is up). Each fault breaks exactly one requirement.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from dataclasses import dataclass, fields

from ..catalogue import faults as fault_catalogue
from ..peer import ConnectionLost, ExpectationTimeout, Peer, PeerError
from ..peer.connection import Timeouts
from ..wire import AmqpValue, Attach, Begin, Close, Detach, End, Flow, Transfer, encode_message
from ..wire.decode import decode_all
from ..wire.serial import serial_add, serial_diff

TICK = 0.01          # how long one turn of the loop waits for a frame


@dataclass(frozen=True)
class ClientFaults:
    receiver_count_zero: bool = False       # 2.7.4/receiver-delivery-count: the receiver's flows say delivery-count 0
    ignore_credit: bool = False             # 2.6.7/no-send-without-credit: sends whatever credit says
    ignore_session_window: bool = False     # 2.5.6/remote-incoming-window-decrement
    ignore_drain: bool = False              # 2.6.7/drain-advance: an idle sender leaves a drain unanswered
    ignore_echo: bool = False               # 2.7.4/echo
    ignore_unattached_handle: bool = False  # 2.7.4/unattached-handle
    credit_uint32: bool = False             # 2.6.7/no-send-without-credit: its credit computed in uint32, so a
                                            # withdrawal crossing its transfers wraps to ~2^32 (go-amqp, proton-c)
    late_without_echo: bool = False         # 2.6.7/no-send-without-credit: never answers echo, and a withdrawal
                                            # behind its delivery-count is ignored: it sends on to the old limit
    hang: bool = False                      # not a catalogue fault: the driver stops answering (`--hang`)
    leave_drain: bool = False               # not a catalogue fault: a driver bug (`--leave-drain`): the drain is
                                            # handed to the application, which leaves it unanswered

    @classmethod
    def named(cls, *names: str) -> "ClientFaults":
        switches = {}
        for name in names:
            entry = fault_catalogue.get(name)
            if entry.kind != "client":
                raise KeyError(name)
            switches.update(entry.client)
        return cls(**switches)


class ReferenceClient:
    def __init__(self, faults: ClientFaults):
        self.faults = faults
        self.peer: Peer | None = None
        self.rx = None          # our receiver's handle
        self.tx = None          # our sender's handle
        self.window = 0
        self.inbox: list[str] = []
        self.errors: list[str] = []
        self.current = None     # [op, id, args, deadline, progress]
        self.attached: set[int] = set()
        self.drains: list[dict] = []   # drains handed to the application since the last answer
        self.no_manual_credit = False  # --no-manual-credit: a receiver needs a credit window (unsupported)
        self.flow_on_attach = False    # --flow-on-attach: a flow for each link right after its attach
        self.limit = None       # our sender's delivery-limit as the broker's flows set it (late_without_echo)

    # -- frames from the broker ------------------------------------------------------------------------------

    def on_frame(self, frame) -> None:
        body, peer = frame.body, self.peer
        if isinstance(body, Attach):
            self.attached.add(int(body.handle))
        elif isinstance(body, Flow) and body.handle is not None:
            if int(body.handle) not in self.attached:
                if not self.faults.ignore_unattached_handle:
                    peer.end(0, error="amqp:session:unattached-handle")
                    self.errors.append("session ended: unattached-handle")
                return
            link = peer.state.link(0, self.tx) if self.tx is not None else None
            mine = self.tx is not None and link is not None and link.remote_handle == int(body.handle)
            if mine:
                self._credit(link, body)
            if mine and body.drain and not self._sending():
                handed = {"handed": "a drain on the idle sender", "answered": None}
                self.drains.append(handed)
                if not self.faults.leave_drain and not self.faults.ignore_drain:
                    link.delivery_count = serial_add(link.delivery_count, max(link.link_credit, 0))
                    link.link_credit = 0
                    self.flow_out(self.tx, drain=True, link_credit=0)
                    handed["answered"] = "flow(drain=true, link-credit=0)"
                elif self.faults.ignore_drain:          # the library's fault: it never hands it on
                    self.drains.remove(handed)
            elif body.echo and not self.faults.ignore_echo and not self.faults.late_without_echo:
                handle = self.tx if mine else self.rx
                if mine:
                    self.flow_out(handle, link_credit=max(link.link_credit, 0))
                else:
                    self.flow_out(handle)
        elif isinstance(body, Transfer):
            for section in decode_all(frame.payload or b""):
                if isinstance(section, AmqpValue):
                    self.inbox.append(str(section.value))
            if not body.settled:                  # settled as its settle mode expects: accepted
                peer.disposition(0, first=int(body.delivery_id), role=True, settled=True)
            if self.window and self.rx is not None:
                self.flow_out(self.rx, link_credit=self.window)
        elif isinstance(body, End):
            self.errors.append(f"session ended: {Peer.error_condition(frame)}")
            peer.end(0)
        elif isinstance(body, Close):
            self.errors.append(f"connection closed: {Peer.error_condition(frame)}")

    def _credit(self, link, flow) -> None:
        """Our sender's credit from the broker's flow (the books computed 2.6.7's formula, signed); the
        faults compute it as the libraries that break it do."""
        if self.faults.credit_uint32:
            link.link_credit &= 0xFFFFFFFF
            return
        if self.faults.late_without_echo and self.limit is not None and flow.delivery_count is not None \
                and serial_diff(int(flow.delivery_count), link.delivery_count) > 0:
            link.link_credit = serial_diff(link.delivery_count, self.limit)     # a stop behind us: ignored
            return
        self.limit = serial_add(link.delivery_count, max(link.link_credit, 0))

    def flow_out(self, handle, **fields):
        link = self.peer.state.link(0, handle)
        if link is not None and link.is_receiver:
            if self.faults.receiver_count_zero:
                fields["delivery_count"] = 0
            fields.setdefault("link_credit", max(link.link_credit, 0))
        elif link is not None:
            fields.setdefault("delivery_count", link.delivery_count)
        return self.peer.flow(0, handle=handle, **fields)

    def _sending(self) -> bool:
        return self.current is not None and self.current[0] == "send"

    # -- commands --------------------------------------------------------------------------------------------

    def start(self, req: dict) -> None:
        op, rid = req.get("op"), req.get("id")
        timeout = req.get("timeout_ms", 5000) / 1000.0 * max(1, req.get("count", 1))
        self.current = [op, rid, req, time.monotonic() + timeout, {"sent": 0, "got": [], "drained": False}]
        self.started = time.monotonic()
        try:
            if op == "connect":                # a new connection: nothing of the last one stays
                self.rx = self.tx = None
                self.window, self.inbox, self.errors, self.attached = 0, [], [], set()
                self.peer = Peer.connect(req["url"], timeouts=Timeouts(frame=5.0, connect=5.0))
                self.peer.handshake(sasl="ANONYMOUS")
                self.peer.begin(0)
                self.peer.expect(Begin)
                return self.done({})
            if op == "receiver":
                if self.no_manual_credit and not req.get("credit"):      # an API with a credit window only
                    return self.done({"ok": False, "unsupported": "the reference client was started with "
                                      "--no-manual-credit: no receiver without a credit window"})
                self.window = int(req.get("credit") or 0)
                self.rx = self.peer._handle(0, None)
                self.peer.attach_receiver(f"rx-{self.rx}", req.get("address"), handle=self.rx)
                self.on_frame(self.peer.expect(Attach, handle=lambda h: h is not None))
                if self.flow_on_attach:
                    self.flow_out(self.rx, link_credit=0)
                if self.window:
                    self.flow_out(self.rx, link_credit=self.window)
                return self.done({"api": f"reference receiver, window {self.window}"})
            if op == "sender":
                self.tx = self.peer._handle(0, None)
                self.peer.attach_sender(f"tx-{self.tx}", req.get("address"), handle=self.tx)
                self.on_frame(self.peer.expect(Attach, handle=lambda h: h is not None))
                if self.flow_on_attach:
                    self.flow_out(self.tx, link_credit=0)
                return self.done({})
            if op == "receive":
                if not self.window and not self.inbox:
                    self.flow_out(self.rx, link_credit=1)
                return
            if op == "stop":
                self.window = 0
                self.flow_out(self.rx, link_credit=0, echo=True)
                return self.done({"api": "flow(link-credit=0, echo=true)"})
            if op == "send":
                return
            if op == "poll":
                return self.done({})
            if op == "close":
                self.peer.close_connection()
                try:
                    self.peer.expect(Close, timeout=2.0)
                except PeerError:
                    pass
                self.peer.close()
                return self.done({})
            self.fail(f"unknown op {op}")
        except PeerError as exc:
            self.fail(f"{type(exc).__name__}: {exc}")

    def step(self) -> None:
        """Move the current command on."""
        if self.current is None:
            return
        op, _, req, deadline, progress = self.current
        now = time.monotonic()
        if op == "receive":
            if self.inbox:
                progress["got"].append(self.inbox.pop(0))
                if len(progress["got"]) >= req.get("count", 1):
                    return self.done({"messages": progress["got"], "timeout": False})
                if not self.window:
                    self.flow_out(self.rx, link_credit=1)
                return
            if self.errors:
                return self.fail("; ".join(self.errors))
            if now > deadline and not progress["drained"] and not self.window:
                progress["drained"] = True
                self.flow_out(self.rx, drain=True)
                self.current[3] = now + req.get("timeout_ms", 1000) / 1000.0
                return
            if now > deadline:
                return self.done({"messages": progress["got"], "timeout": True})
            if progress["drained"]:
                link = self.peer.state.link(0, self.rx)
                if link is not None and link.link_credit <= 0 and link.remote_flow is not None \
                        and link.remote_flow.drain:
                    return self.done({"messages": progress["got"], "timeout": True})
        elif op == "send":
            link = self.peer.state.link(0, self.tx)
            session = self.peer.state.sessions[0]
            while progress["sent"] < req.get("count", 1):
                credit_ok = link.link_credit > 0 or self.faults.ignore_credit
                window = session.remote_incoming_window
                window_ok = window is None or window > 0 or self.faults.ignore_session_window
                if not (credit_ok and window_ok):
                    break
                payload = encode_message(AmqpValue(f"m{progress['sent']}"))
                self.peer.transfer(0, self.tx, payload, settled=True)
                progress["sent"] += 1
            if progress["sent"] >= req.get("count", 1):
                return self.done({"sent": progress["sent"]})
            if self.errors:
                return self.fail("; ".join(self.errors), sent=progress["sent"])
            if now > deadline:
                return self.fail("no credit to send", sent=progress["sent"])

    def done(self, answer: dict) -> None:
        self.answer({"ok": True, **answer})

    def fail(self, error: str, **extra) -> None:
        self.answer({"ok": False, "error": error[:400], **extra})

    def answer(self, answer: dict) -> None:
        if self.faults.hang:
            self.current = None
            return
        rid = self.current[1] if self.current else None
        self.current = None
        answer["ms"] = round((time.monotonic() - self.started) * 1000)
        if self.errors and answer.get("ok"):
            answer["events"] = list(self.errors)
        if self.drains:
            answer["drains"], self.drains = self.drains, []
        print(json.dumps({"id": rid, **answer}), flush=True)

    # -- the loop --------------------------------------------------------------------------------------------

    def run(self) -> None:
        print(json.dumps({"id": 0, "ok": True, "ready": True, "library": "amqp-conformance-reference-client",
                          "version": "1.0"}), flush=True)
        while True:
            if self.current is None:
                ready, _, _ = select.select([sys.stdin], [], [], TICK if self.peer is not None else 1.0)
                if ready:
                    line = sys.stdin.readline()
                    if not line or json.loads(line).get("op") == "exit":
                        break
                    self.start(json.loads(line))
            if self.peer is not None and not self.peer.closed_by_remote:
                try:
                    self.on_frame(self.peer.expect(None, timeout=TICK))
                except ExpectationTimeout:
                    pass
                except (ConnectionLost, PeerError) as exc:
                    self.errors.append(str(exc)[:200])
                    self.peer = None if self.current is None else self.peer
            self.step()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance.reference.client")
    names = [f.name for f in fault_catalogue.of_kind("client")]
    parser.add_argument("--fault", action="append", default=[], choices=names)
    parser.add_argument("--hang", action="store_true", help="answer no command (a hung library)")
    parser.add_argument("--leave-drain", action="store_true",
                        help="a driver bug: the drain handed to the application is left unanswered")
    parser.add_argument("--no-manual-credit", action="store_true",
                        help="answer `unsupported` to a receiver with no credit window (a library without one)")
    parser.add_argument("--flow-on-attach", action="store_true",
                        help="send a flow for each link right after its attach (link-credit 0), before anything else "
                             "(as azure-servicebus's _pyamqp does): a flow that answers nothing asked later")
    args = parser.parse_args(argv)
    faults = ClientFaults.named(*args.fault)
    extra = {"hang": args.hang, "leave_drain": args.leave_drain}
    faults = ClientFaults(**{**{f.name: getattr(faults, f.name) for f in fields(ClientFaults)}, **extra})
    client = ReferenceClient(faults)
    client.no_manual_credit = args.no_manual_credit
    client.flow_on_attach = args.flow_on_attach
    client.run()


if __name__ == "__main__":
    main()


def subject(*faults: str, hang: bool = False, leave_drain: bool = False, no_manual_credit: bool = False,
            flow_on_attach: bool = False, name: str | None = None):
    """The reference client (with the given catalogue faults) as a run's subject, like a client library."""
    from ..clients import ClientSubject, Library
    flags = ((["--hang"] if hang else []) + (["--leave-drain"] if leave_drain else [])
             + (["--no-manual-credit"] if no_manual_credit else [])
             + (["--flow-on-attach"] if flow_on_attach else []))
    label = name or "+".join(("reference-client", *faults, *(f[2:] for f in flags)))
    lib = Library("amqp-conformance-reference-client", "1.0", "Python", "none", "", "", "our peer as a client",
                  "the reference client answers a drain on its idle sender itself")
    argv = [sys.executable, "-m", "conformance.reference.client", *[x for f in faults for x in ("--fault", f)]]
    return ClientSubject(lib, argv=argv + flags, name=label, version="1.0", ready_timeout=30.0)
