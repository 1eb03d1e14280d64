"""What a client case runs with: the suite plays the broker (server-role peer, scripted exactly) and a client
library, run through its public API by its driver, is the subject.

This module owns `ClientCaseContext` (a `CaseContext` whose subject is a `conformance.clients.ClientSubject`)
and `ClientConnection`, the scripted broker's side of one client connection. A case asks the application for
something (`ctx.app(op, ...)`: the driver's command; its answer is what the application saw), scripts every
frame the broker sends (`conn.answer_attach`, `conn.flow`, `conn.transfer`, ...) and judges what the client
sends; after the case the model judges every frame the client sent (the transcript's "in" direction: the
client's frames, as a broker's are in a broker case), and the findings decide the verdict by the catalogue's
levels, as for brokers. The broker's begin answers come on their own: whenever the script waits for a frame,
a client's begin is answered first (the libraries begin a session at connect or at the first link).

A driver that does not answer within its command's own timeout plus --frame-timeout, or that exits, is a
`DriverError`: the case is `error` (no verdict rests on it) and the subject starts a fresh driver for the next
case. `ctx.connections` stays empty on purpose: the broker-liveness checks of the executor concern brokers;
the client's connections are `ctx.clients`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..clients.driver import DriverError
from ..peer import PeerServer, matches, summarize
from ..peer.errors import PeerError, UnexpectedFrame
from ..wire import AmqpValue, Attach, Begin, Close, Detach, Disposition, End, Flow, Transfer, encode_message
from ..wire.serial import serial_add, serial_diff
from .context import CaseContext
from .findings import CaseUnsupported

INITIAL_DELIVERY_COUNT = 2**32 - 5      # the scripted broker's sender starts here: the serial wrap is near


class ClientLink:
    """One link the client attached: its name, its role, our handle and its, our channel."""

    def __init__(self, conn: "ClientConnection", attach_frame, our_handle: int):
        body = attach_frame.body
        self.conn = conn
        self.name = str(body.name)
        self.client_is_receiver = bool(body.role)
        self.client_handle = int(body.handle)
        self.handle = our_handle
        self.channel = conn.our_channel(attach_frame.channel)
        self.client_channel = attach_frame.channel
        self.attach = body

    @property
    def state(self):
        return self.conn.peer.state.link(self.channel, self.handle)

    @property
    def delivery_count(self) -> int | None:
        return self.state.delivery_count


class ClientConnection:
    """The broker's side of one client connection (a server-role `Peer`)."""

    def __init__(self, ctx: "ClientCaseContext", peer, number: int):
        self.ctx, self.peer, self.number = ctx, peer, number
        self.sessions: dict[int, int] = {}        # client channel -> our channel
        self.links: list[ClientLink] = []

    def our_channel(self, client_channel: int) -> int:
        return self.sessions[client_channel]

    def _answer_begin(self, frame) -> None:
        """Our begin; the client's frames that came on its channel before it (a library pipelines begin,
        attach and flow) are then given to the session bookkeeping, which could not place them earlier."""
        channel = len(self.sessions)
        self.sessions[frame.channel] = channel
        peer = self.peer
        with peer._cond:            # nothing is observed between our begin and the replay (the lock is re-entrant)
            arrived = list(peer.arrived)
            peer.begin(channel, remote_channel=frame.channel, **self.ctx.begin_fields)
            start = next((i for i, f in enumerate(arrived) if f is frame), len(arrived))
            for early in arrived[start + 1:]:
                if getattr(early, "channel", None) == frame.channel and getattr(early, "body", None) is not None:
                    peer.state.observe_in(early)

    def expect(self, kinds, *, timeout: float | None = None, where=None, after: int | None = None, **fields):
        """The next frame of `kinds` from the client (fields and `where` as `Peer.expect`), answering begins on
        the way."""
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        while True:
            frame = self.peer.expect((Begin, *kinds) if Begin not in kinds else kinds, timeout=timeout, after=after,
                                     where=lambda f: isinstance(f.body, Begin) or (
                                         _fields_match(f, fields) and (where is None or where(f))))
            if isinstance(frame.body, Begin) and Begin not in kinds:
                self._answer_begin(frame)
                continue
            return frame

    def expect_nothing(self, kinds=None, *, quiet: float | None = None, **fields) -> list:
        return self.peer.expect_nothing(kinds, quiet=quiet, **fields)

    def settle_down(self, kinds=Flow, rounds: int = 10) -> None:
        """Wait until the client has sent no frame of `kinds` for a quiet period (at most `rounds` periods)."""
        for _ in range(rounds):
            mark = self.peer.mark()
            try:
                self.peer.expect_nothing(kinds, after=mark)
                return
            except UnexpectedFrame:
                continue

    def serve_until(self, pending, extra: float = 0.0) -> dict:
        """Answer the client's begins until the application's command `pending` is answered."""
        import time
        deadline = time.monotonic() + self.ctx.options.frame_timeout + extra
        while not pending.done():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with contextlib.suppress(PeerError):
                frame = self.peer.expect(Begin, timeout=min(left, 0.05))
                self._answer_begin(frame)
        return self.ctx.answer(pending, 0.0)

    # -- links --------------------------------------------------------------------------------------------

    def expect_attach(self, *, answer: bool = True, initial_delivery_count: int = INITIAL_DELIVERY_COUNT,
                      pending=None, **fields) -> ClientLink:
        """The client's attach, answered (as sender when it receives: `initial_delivery_count`). With `pending`
        (the application's command that opens the link), a driver that answers it `unsupported` instead of
        attaching ends the case as unsupported at once (`ClientCaseContext.answer`)."""
        frame = self._attach_or_refusal(pending) if pending is not None else self.expect(Attach)
        channel = self.our_channel(frame.channel)
        session = self.peer.state.sessions[channel]
        link = ClientLink(self, frame, session.next_free_handle())
        self.links.append(link)
        if answer:
            body = frame.body
            values = {"name": body.name, "handle": link.handle, "role": not body.role, "source": body.source,
                      "target": body.target, "snd_settle_mode": body.snd_settle_mode,
                      "rcv_settle_mode": body.rcv_settle_mode}
            if body.role:          # the client receives: we send
                values["initial_delivery_count"] = initial_delivery_count
            values.update(fields)
            self.peer.send(Attach(**values), channel)
        link.attached_at = self.peer.mark()       # frames from here on came after our attach was sent
        return link

    def _attach_or_refusal(self, pending):
        import time
        deadline = time.monotonic() + self.ctx.options.frame_timeout
        while True:
            try:
                return self.expect(Attach, timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            except PeerError:
                if pending.done():
                    self.ctx.answer(pending, 0.0)       # raises CaseUnsupported when the API offers no way
                if time.monotonic() >= deadline:
                    return self.expect(Attach, timeout=0)

    def flow(self, link: ClientLink | None = None, channel: int = 0, **fields):
        if link is not None:
            return self.peer.flow(link.channel, handle=link.handle, **fields)
        return self.peer.flow(channel, **fields)

    def transfer(self, link: ClientLink, body: str, **fields):
        payload = encode_message(AmqpValue(body))
        fields.setdefault("settled", True)
        return self.peer.transfer(link.channel, link.handle, payload, **fields)

    def settle(self, frame, channel: int) -> None:
        """Accept and settle a transfer the client sent (as the receiving broker)."""
        if getattr(frame.body, "settled", False):
            return
        self.peer.disposition(channel, first=int(frame.body.delivery_id), role=True, settled=True)

    def expect_transfer(self, link: ClientLink, *, settle: bool = True, timeout: float | None = None):
        frame = self.expect(Transfer, timeout=timeout, handle=link.client_handle)
        if settle:
            self.settle(frame, link.channel)
        return frame

    def take_transfers(self, link: ClientLink, *, settle: bool = True) -> list:
        """Every transfer of the link already received and not yet taken (settled as they are taken)."""
        taken = []
        while True:
            try:
                taken.append(self.expect_transfer(link, settle=settle, timeout=0))
            except PeerError:
                return taken

    def expect_flow(self, link: ClientLink, *, timeout: float | None = None, after: int | None = None, **fields):
        return self.expect(Flow, timeout=timeout, after=after, handle=link.client_handle, **fields)

    def drained(self, link: ClientLink, request=None, *, drain: bool = True):
        """As the sender: nothing to send, so advance delivery-count to the client's limit (its latest flow,
        or `request`) and send flow(link-credit=0), as 2.6.7 asks of a drained sender."""
        flow = request.body if request is not None else link.state.remote_flow
        dc = link.delivery_count
        if flow is not None and flow.link_credit is not None:
            base = flow.delivery_count if flow.delivery_count is not None else dc
            limit = serial_add(int(base), int(flow.link_credit))
            if serial_diff(dc, limit) > 0:
                dc = limit
        sent = self.flow(link, delivery_count=dc, link_credit=0, drain=drain)
        state = link.state                      # our sender's count moved without a transfer: the books say so
        state.delivery_count, state.link_credit = dc, 0
        return sent

    def end(self, link: ClientLink, error: Any = None):
        return self.peer.end(link.channel, error=error)

    def answer_closing(self, pending, bound: float) -> None:
        """While the application closes: answer the client's detach, end and close (a library may wait for
        each answer), until its close command is answered or `bound` seconds passed."""
        import time
        deadline = time.monotonic() + bound
        while not pending.done() and time.monotonic() < deadline and not self.peer.closed_by_remote:
            try:
                frame = self.peer.expect((Detach, End, Close), timeout=0.05)
            except PeerError:
                continue
            body = frame.body
            if isinstance(body, Close):
                self.peer.close_connection()
                return
            if isinstance(body, End):
                ours = self.sessions.get(frame.channel)
                session = self.peer.state.sessions.get(ours) if ours is not None else None
                if session is not None and not session.ended_by_us:
                    self.peer.end(ours)
            elif isinstance(body, Detach) and frame.channel in self.sessions:
                ours = self.sessions[frame.channel]
                link = next((l for l in self.links if l.client_handle == int(body.handle)
                             and l.client_channel == frame.channel), None)
                if link is not None and not link.state.detached_by_us:
                    self.peer.detach(ours, link.handle)

    def arrived_index(self, frame) -> int:
        """The position of a client frame among everything that arrived (comparable with `peer.mark()`)."""
        return next((i for i, f in enumerate(self.peer.arrived) if f is frame), -1)

    def client_frames(self, kind=None) -> list:
        return self.peer.received(kind)


def _fields_match(frame, fields: dict) -> bool:
    return matches(frame, (), None, None, fields)


class ClientCaseContext(CaseContext):
    """A case's context when its subject is a client library (`spec.kind == "client"`)."""

    begin_fields = {"next_outgoing_id": 0, "incoming_window": 2048, "outgoing_window": 2048}

    def __init__(self, spec, subject, options):
        super().__init__(spec, subject, options)
        self.subject = subject
        self.server: PeerServer | None = None
        self.clients: list[ClientConnection] = []
        self.app_log: list[dict] = []
        self._driver_failed = False
        self._closed_by_app = False

    def answer_window(self) -> float:
        """How long the scripted broker waits for an answer a correct client sends at once (echo, a drained
        flow, the end for an unattached handle): two quiet periods, at least 1 s, at most --frame-timeout. The
        client is a local process on loopback; its silence past this is the finding."""
        return min(self.options.frame_timeout, max(1.0, 2 * self.options.quiet_period))

    # -- the application (the driver) --------------------------------------------------------------------

    @property
    def driver(self):
        try:
            return self.subject.driver()
        except DriverError:
            self._driver_failed = True
            raise

    def app(self, op: str, **args):
        """Ask the application to do `op` (the driver's command); returns its `Pending` answer."""
        try:
            pending = self.driver.request(op, **args)
        except DriverError:
            self._driver_failed = True
            raise
        pending.args = args
        return pending

    def answer(self, pending, extra: float | None = None) -> dict:
        """What the application saw, bounded by the command's own timeout plus --frame-timeout."""
        own = (pending.args.get("timeout_ms", 0) * max(1, pending.args.get("count", 1)) / 1000.0
               if extra is None else extra)
        try:
            answer = pending.result(self.options.frame_timeout + own)
        except DriverError:
            self._driver_failed = True
            raise
        self.app_log.append({"op": pending.op, **{k: v for k, v in pending.args.items()},
                             "answer": {k: v for k, v in answer.items() if k != "id"}})
        if answer.get("unsupported"):      # the library's API offers the application no way to do this
            raise CaseUnsupported(f"{self.subject.product} {self.subject.version} offers the application no way "
                                  f"to do what the case needs: {answer['unsupported']}")
        return answer

    def do(self, op: str, **args) -> dict:
        return self.answer(self.app(op, **args))

    # -- the scripted broker ---------------------------------------------------------------------------------

    def open_receiver(self, credit: int, address: str = "q") -> tuple[ClientConnection, ClientLink]:
        """The application connects and opens a receiver on `address` with `credit` (its credit window or
        prefetch; 0: it pulls); the scripted broker answers its attach. Returns the connection and the link."""
        conn = self.connect()
        opened = self.app("receiver", address=address, credit=credit)
        link = conn.expect_attach(pending=opened)
        self.answer(opened)
        return conn, link

    def connect(self, **_ignored) -> ClientConnection:
        """The application connects to our scripted broker; its connection, after the handshake."""
        if self.server is None:
            self.server = PeerServer(timeouts=self.timeouts)
        pending = self.app("connect", url=self.server.url, timeout_ms=int(self.options.connect_timeout * 1000))
        peer = self.server.accept(self.options.connect_timeout + 30.0 * (self.subject.starts <= 1))
        peer.transcript.label = "client"
        conn = ClientConnection(self, peer, len(self.clients) + 1)
        self.clients.append(conn)
        peer.server_handshake(mechanisms=("ANONYMOUS",), container_id="amqp-conformance-scripted-broker")
        conn.serve_until(pending)
        return conn

    # -- findings on the client's frames ---------------------------------------------------------------------

    def finding(self, requirement: str, reason: str, conn: ClientConnection, frame=None, *, expected=None,
                actual=None):
        index = None
        if frame is not None:
            for entry in conn.peer.transcript.snapshot():
                if entry.item is frame:
                    index = entry.index
        actual = actual if actual is not None else (summarize(frame) if frame is not None else None)
        return self.add_finding(requirement, reason, expected=expected, actual=actual, conn=conn,
                                frame_index=index)

    # -- after the case ------------------------------------------------------------------------------------

    def judge(self) -> None:
        """The model over every frame the client sent (direction "in" of our transcripts), and obligations."""
        self.judge_model(self.clients)
        saved, self.connections = self.connections, list(self.clients)
        try:
            self.judge_obligations("the client")
        finally:
            self.connections = saved
        self.observe(subject_kind="client", application=self.app_log, driver_starts=self.subject.starts)

    def close(self, *, delete_queues: bool = True) -> None:
        """The application closes its connection (bounded); a driver that failed is replaced for the next case."""
        if not self._driver_failed and not self._closed_by_app and self.clients:
            with contextlib.suppress(DriverError, PeerError, Exception):
                pending = self.app("close")
                self.clients[-1].answer_closing(pending, self.options.frame_timeout)
                pending.result(self.options.frame_timeout)
        if self._driver_failed:
            self.subject.discard()
        for conn in self.clients:
            conn.peer.close()
        if self.server is not None:
            self.server.close()

    def transcripts_json(self) -> list[dict]:
        return [c.peer.transcript.to_json() for c in self.clients]

    def ladders(self) -> list[str]:
        out = []
        for c in self.clients:
            receiver = any(l.client_is_receiver for l in c.links)
            out.append(f"connection {c.number} (the client on the left)\n"
                       + c.peer.transcript.ladder(peer_is_receiver=not receiver))
        return out

    def broker_identity(self):
        return self.subject.product, self.subject.version

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, DriverError):
            return f"driver: {exc}"
        return super().describe_error(exc)


__all__ = ["ClientCaseContext", "ClientConnection", "ClientLink", "INITIAL_DELIVERY_COUNT", "Detach", "End",
           "Disposition"]
