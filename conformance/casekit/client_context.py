"""What a client case runs with: the suite plays the broker (a server-role peer, scripted exactly) and a
client library, run through its public API by its driver, is the subject.

This module owns `ClientCaseContext` (the context of a case whose subject is a `conformance.clients.
ClientSubject`: only what a client can be asked, no queues, alarms or broker hooks) and `ClientConnection`,
the scripted broker's side of one client connection. A case asks the application for something
(`ctx.app(op, ...)`: the driver's command; its answer is what the application saw, taken from the library's
own callbacks and return values), opens links through it (`ctx.receiver(credit)`: the application's
receiver, our `SendingEnd`; `ctx.sender()`: its sender, our `ReceivingEnd`; client_links.py), scripts every
frame the broker sends (`link.flow`, `link.transfer`, ...) and judges what the client sends with the broker
cases' verbs (`ctx.require(..., frame=)`, `link.expect_transfers(n, requirement=...)`); after the case the model
judges every frame the client sent (the transcript's "in" direction), and the findings decide the verdict by
the catalogue's levels, as for brokers. The broker's begin answers come on their own: whenever the script
waits for a frame, a client's begin is answered first (libraries begin a session at connect or at the first
link).

A driver that does not answer within its command's own timeout plus --frame-timeout, or that exits, is a
`DriverError`: the case is `error` (no verdict rests on it) and the subject starts a fresh driver for the next
case. So is a driver that left unanswered a drain its library handed the application (`check_drains`): that
is our driver's bug, never the library's verdict.
"""

from __future__ import annotations

import contextlib
import time

from ..clients.driver import DriverError
from ..peer import PeerServer, matches
from ..peer.errors import ExpectationTimeout, PeerError, UnexpectedFrame
from ..wire import Attach, Begin, Close, Detach, End
from .client_links import ReceivingEnd, SendingEnd
from .findings import CaseUnsupported, SuiteError
from .record import CaseRecord

INITIAL_DELIVERY_COUNT = 2**32 - 5      # the scripted broker's sender starts here: the serial wrap is near
INCOMING_WINDOW = 2048                  # the scripted broker's session incoming-window unless a case says
SLICE = 0.05                            # a wait that also watches the application's answer looks at it this often


class DriverLeftDrain(DriverError):
    """The library handed a drain to the application and our driver did not answer it (a driver bug)."""


class ClientConnection:
    """The broker's side of one client connection (a server-role `Peer`)."""

    def __init__(self, ctx: "ClientCaseContext", peer, number: int, incoming_window: int):
        self.ctx, self.peer, self.number = ctx, peer, number
        self.incoming_window = incoming_window
        self.sessions: dict[int, int] = {}        # client channel -> our channel
        self.links: list = []

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
            peer.begin(channel, remote_channel=frame.channel, next_outgoing_id=0,
                       incoming_window=self.incoming_window, outgoing_window=2048)
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
                                         matches(f, (), None, None, fields) and (where is None or where(f))))
            if isinstance(frame.body, Begin) and Begin not in kinds:
                self._answer_begin(frame)
                continue
            return frame

    def await_frame(self, kinds, *, timeout: float | None = None, **fields):
        """`expect`, or None when nothing matching came within the bound or the connection ended (judges
        nothing: the caller says what the absence means)."""
        try:
            return self.expect(kinds, timeout=timeout, **fields)
        except PeerError:
            return None

    def expect_until(self, kinds, pending, *, timeout: float | None = None, proves=None, **fields):
        """`expect` bounded by `timeout` (default: the frame timeout), and shortened by a round trip through
        the application: once its command `pending` is answered and `proves(answer)` says the library has
        read what we sent before the awaited frame was due (default: any answer), the client gets one quiet
        period more, then its absence is the answer (ExpectationTimeout, which names the round trip)."""
        wait = self.ctx.options.frame_timeout if timeout is None else timeout
        start = time.monotonic()
        deadline, proven = start + wait, False
        while True:
            left = deadline - time.monotonic()
            try:
                return self.expect(kinds, timeout=max(0.0, min(left, SLICE)), **fields)
            except ExpectationTimeout as exc:
                if left <= SLICE:
                    how = (f" (the application's {pending.op} came back {'having' if proven else 'without'} "
                           "proving the library read what came before)") if pending.done() else ""
                    raise ExpectationTimeout(exc.description + how, time.monotonic() - start, exc.arrived) from None
            if not proven and pending.done() and (proves is None or proves(pending.result(0))):
                proven = True
                deadline = min(deadline, time.monotonic() + self.ctx.options.quiet_period)

    def await_frame_until(self, kinds, pending, *, timeout: float | None = None, proves=None, **fields):
        """`expect_until`, or None when nothing matching came or the connection ended (judges nothing)."""
        try:
            return self.expect_until(kinds, pending, timeout=timeout, proves=proves, **fields)
        except PeerError:
            return None

    def expect_nothing(self, kinds=None, *, quiet: float | None = None, **fields) -> list:
        return self.peer.expect_nothing(kinds, quiet=quiet, **fields)

    def settle_down(self, kinds, rounds: int = 10) -> None:
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
        deadline = time.monotonic() + self.ctx.options.frame_timeout + extra
        while not pending.done():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with contextlib.suppress(PeerError):
                frame = self.peer.expect(Begin, timeout=min(left, 0.05))
                self._answer_begin(frame)
        return self.ctx.answer(pending, 0.0)

    def expect_attach(self, *, initial_delivery_count: int = INITIAL_DELIVERY_COUNT, pending=None, **fields):
        """The client's attach, answered: our `SendingEnd` when it receives (our attach carries
        `initial_delivery_count`), our `ReceivingEnd` when it sends. Our attach mirrors its settle modes. With
        `pending` (the application's command that opens the link), a driver that answers it `unsupported` instead
        of attaching ends the case as unsupported at once (`ClientCaseContext.answer`)."""
        frame = self._attach_or_refusal(pending) if pending is not None else self.expect(Attach)
        channel = self.our_channel(frame.channel)
        session = self.peer.state.sessions[channel]
        body = frame.body
        link = (SendingEnd if body.role else ReceivingEnd)(self, frame, session.next_free_handle())
        self.links.append(link)
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
        deadline = time.monotonic() + self.ctx.options.frame_timeout
        while True:
            try:
                return self.expect(Attach, timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            except PeerError:
                if pending.done():
                    self.ctx.answer(pending, 0.0)       # raises CaseUnsupported when the API offers no way
                if time.monotonic() >= deadline:
                    return self.expect(Attach, timeout=0)

    def seconds_between(self, first, second) -> float:
        """Seconds between two frames of this connection's transcript (ours or the client's)."""
        times = {id(e.item): e.t for e in self.peer.transcript.snapshot()}
        return times.get(id(second), 0.0) - times.get(id(first), 0.0)

    def answer_closing(self, pending, bound: float) -> None:
        """While the application closes: answer the client's detach, end and close (a library may wait for
        each answer), until its close command is answered or `bound` seconds passed."""
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
            ours = self.sessions.get(frame.channel)
            session = self.peer.state.sessions.get(ours) if ours is not None else None
            if isinstance(body, End) and session is not None and not session.ended_by_us:
                self.peer.end(ours)
            elif isinstance(body, Detach) and session is not None:
                link = next((l for l in self.links if l.client_handle == int(body.handle)
                             and l.client_channel == frame.channel), None)
                if link is not None and not link.state.detached_by_us:
                    self.peer.detach(ours, link.handle)


class ClientCaseContext(CaseRecord):
    """A case's context when its subject is a client library (`spec.kind == "client"`)."""

    noun = "client library"

    def __init__(self, spec, subject, options):
        super().__init__(spec, subject, options)
        self.server: PeerServer | None = None
        self.clients: list[ClientConnection] = []
        self.app_log: list[dict] = []
        self.drains: list[dict] = []             # drains the library handed the application, as the driver says
        self._driver_failed = False

    def conversations(self) -> list:
        return self.clients

    def answer_window(self) -> float:
        """How long the scripted broker waits for an answer a correct client sends at once (echo, a drained
        flow, the end for an unattached handle): two quiet periods, at least 1 s, at most --frame-timeout. The
        client is a local process on loopback; its silence past this is the finding."""
        return min(self.options.frame_timeout, max(1.0, 2 * self.options.quiet_period))

    # -- the application (the driver) --------------------------------------------------------------------

    @property
    def library(self):
        return self.subject.lib

    def app(self, op: str, **args):
        """Ask the application to do `op` (the driver's command); returns its `Pending` answer."""
        try:
            pending = self.subject.driver().request(op, **args)
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
        self.drains += answer.get("drains") or []
        self.app_log.append({"op": pending.op, **{k: v for k, v in pending.args.items()},
                             "answer": {k: v for k, v in answer.items() if k != "id"}})
        if answer.get("unsupported"):      # the library's API offers the application no way to do this
            raise CaseUnsupported(f"{self.subject.product} {self.subject.version} offers the application no way "
                                  f"to do what the case needs: {answer['unsupported']}")
        return answer

    def do(self, op: str, **args) -> dict:
        return self.answer(self.app(op, **args))

    def app_events(self) -> dict:
        """What the library handed the application since the driver's last answer (`poll`: drains it was
        asked to answer and how it answered them, errors it was told of)."""
        return self.do("poll")

    def check_drains(self) -> None:
        """A drain the library handed the application that our driver left unanswered is our driver's bug:
        `DriverLeftDrain` (the case is `error`, no verdict on the library)."""
        left = [d for d in self.drains if not d.get("answered")]
        if left:
            self._driver_failed = False          # the driver works; it is wrong, not hung
            raise DriverLeftDrain(f"the driver left unanswered a drain its library handed the application "
                                  f"({left[0].get('handed')}); fix its driver ({self.library.driver or self.subject.name})")

    # -- the scripted broker ---------------------------------------------------------------------------------

    def connect(self, *, incoming_window: int = INCOMING_WINDOW, prefetch: int | None = None) -> ClientConnection:
        """The application connects to our scripted broker; its connection, after the handshake. Our begin
        answers carry `incoming_window`; `prefetch`: the credit window the next receiver will use, for a library
        configured per connection (Qpid JMS: jms.prefetchPolicy.all in the connection URI)."""
        if self.server is None:
            self.server = PeerServer(timeouts=self.timeouts)
        extra = {"prefetch": prefetch} if prefetch is not None else {}
        pending = self.app("connect", url=self.server.url, timeout_ms=int(self.options.connect_timeout * 1000),
                           **extra)
        peer = self.server.accept(self.options.connect_timeout + 30.0 * (self.subject.starts <= 1))
        peer.transcript.label = "client"
        conn = ClientConnection(self, peer, len(self.clients) + 1, incoming_window)
        self.clients.append(conn)
        peer.server_handshake(mechanisms=("ANONYMOUS",), container_id="amqp-conformance-scripted-broker")
        conn.serve_until(pending)
        return conn

    def receiver(self, credit: int, *, address: str = "q") -> SendingEnd:
        """The application connects and opens a receiver on `address` with `credit` (its credit window or
        prefetch; 0: it pulls); our attach answers it. Our end of the link (`link.conn` its connection)."""
        conn = self.connect(prefetch=credit)
        opened = self.app("receiver", address=address, credit=credit)
        link = conn.expect_attach(pending=opened)
        self.answer(opened)
        return link

    def sender(self, *, address: str = "q", incoming_window: int = INCOMING_WINDOW) -> ReceivingEnd:
        """The application connects and opens a sender on `address`; our begin carries `incoming_window`."""
        conn = self.connect(incoming_window=incoming_window)
        opened = self.app("sender", address=address)
        link = conn.expect_attach()
        self.answer(opened)
        return link

    # -- after the case ------------------------------------------------------------------------------------

    def judge(self) -> None:
        """The model over every frame the client sent (direction "in" of our transcripts), and obligations."""
        self.judge_model(self.clients)
        self.judge_obligations("the client")
        lib = self.library
        self.observe(subject_kind="client", application=self.app_log, driver_starts=self.subject.starts,
                     library={"name": lib.name, "version": self.subject.version, "language": lib.language,
                              "registry": lib.registry, "package": lib.package, "driver": lib.driver,
                              "summary": lib.summary, "flow_api": lib.flow_api})
        if self.drains:
            self.observe(drains_handed_to_the_application=self.drains)

    def close(self, *, cut: bool = False) -> None:
        """The application closes its connection (bounded); a driver that failed is replaced for the next case.
        (`cut` is always False here: the executor checks connections to a broker under test only.)"""
        if not self._driver_failed and self.clients:
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

    def ladders(self) -> list[str]:
        out = []
        for c in self.clients:
            receiver = any(isinstance(l, SendingEnd) for l in c.links)     # the client receives what we send
            side = "left" if receiver else "right"      # the ladder draws the link's receiver on the left
            out.append(f"connection {c.number} (the client on the {side})\n"
                       + c.peer.transcript.ladder(peer_is_receiver=not receiver))
        return out

    def subject_identity(self) -> tuple[str | None, str | None]:
        return self.subject.product, self.subject.version

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, DriverError):
            return f"driver: {exc}"
        if isinstance(exc, SuiteError):
            return str(exc)
        return super().describe_error(exc)


__all__ = ["ClientCaseContext", "ClientConnection", "DriverLeftDrain", "INITIAL_DELIVERY_COUNT", "INCOMING_WINDOW"]
