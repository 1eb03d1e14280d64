"""What a broker case runs with: the broker, its queues and connections (the record of findings is the
base's, `record.CaseRecord`).

This module owns `CaseContext`, the context of a case whose subject is a broker: fresh queues (`ctx.queue`),
scripted connections (`ctx.session`, `ctx.connect`, see `conformance.casekit.scripts`), broker-wide hooks
(`ctx.alarm`, `ctx.need_hook`), and what a broker adds to the record: `ctx.refusal()` finds the broker's
refusal by configuration (`findings.REFUSALS`) and `ctx.after_refusal` tells which findings came after it; a
case that works around a refusal (e.g. sends non-durable messages where durable ones were refused) takes it
off the record with `ctx.worked_around(conn, why)`. After the case, `judge()` adds the model's findings over
every transcript, a connection dropped without a close frame, and the broken obligations. The findings
(`ctx.require`, `ctx.add_finding`, `ctx.halt`, `ctx.step`, `ctx.oblige`) and the endings (`ctx.passed`,
`ctx.informational`, `ctx.unobservable`) are `CaseRecord`'s.
"""

from __future__ import annotations

import contextlib
import itertools
import time

from ..peer import ExpectationTimeout, Peer, PeerError, summarize
from ..peer.errors import FIN
from ..wire import Close, Detach, End, Error, Transfer
from .findings import REFUSALS, CaseUnsupported, Finding, Refusal, Source
from .record import CaseRecord, frame_index_of
from .scripts import ConnectionScript, ReceiverScript, ScriptError, SessionScript
from .spec import has_need, missing_hook_reason

_counter = itertools.count(1)


class CaseContext(CaseRecord):
    """A case's context when its subject is a broker (`spec.kind == "broker"`)."""

    noun = "broker"

    def __init__(self, spec, broker, options):
        super().__init__(spec, broker, options)
        self.broker = broker
        self.connections: list[ConnectionScript] = []
        self._worked_around: dict[int, str] = {}            # connection number -> why its refusal is not the end
        self._queues: list[str] = []
        self._preloaded: dict[str, list[bytes]] = {}

    def conversations(self) -> list:
        return self.connections

    def broker_peers(self) -> list:
        return [c.peer for c in self.connections]

    # -- queues ------------------------------------------------------------------------------------------

    def queue(self, preload: int = 0, *, body_size: int | None = None, max_length: int | None = None,
              max_length_bytes: int | None = None) -> str:
        """A fresh queue for this case only (deleted afterwards), optionally preloaded with N messages; a limit
        in messages (`max_length`) or bytes (`max_length_bytes`) needs the broker's hook for it."""
        if max_length is not None:
            self.need_hook("queue_length_limit")
        if max_length_bytes is not None:
            self.need_hook("queue_size_limit")
        name = self.broker.unique_queue(f"c{self._slug}")
        limits = {"max_length_bytes": max_length_bytes} if max_length_bytes is not None else {}
        self.broker.create_queue(name, max_length=max_length, **limits)
        self._queues.append(name)
        self._preloaded[name] = []
        if preload:
            self.preload(name, preload, body_size=body_size)
        return name

    def preload(self, queue: str, count: int, *, body_size: int | None = None) -> None:
        start = len(self._preloaded.setdefault(queue, []))
        bodies = []
        for i in range(start, start + count):
            body = f"{queue}#{i}".encode()
            if body_size:
                body = (body + b"." * body_size)[:body_size]
            bodies.append(body)
        self.broker.preload(queue, bodies)
        self._preloaded[queue].extend(bodies)

    def preloaded_bodies(self, queue: str) -> list[bytes]:
        return list(self._preloaded.get(queue, []))

    def address(self, queue: str, role: str) -> str:
        return self.broker.queue_address(queue, role)

    def queue_depth(self, queue: str) -> int | None:
        """Messages in the queue by the broker's management hook (None: the broker cannot tell)."""
        depth = self.broker.queue_depth(queue)
        self.observe(queue_depth=depth)
        return depth

    # -- connections -------------------------------------------------------------------------------------

    def connect(self, **open_fields) -> ConnectionScript:
        peer = Peer.connect(self.broker.address, timeouts=self.timeouts, tls=self.broker.tls)
        conn = ConnectionScript(self, peer, len(self.connections) + 1)
        self.connections.append(conn)
        peer.transcript.label = "broker"
        conn.broker_open = peer.handshake(sasl=self.broker.sasl_mechanism,
                                          container_id=f"amqp-conformance-{self._slug}-{next(_counter)}",
                                          **open_fields)
        return conn

    def session(self, *, max_frame_size: int | None = None, **begin_fields) -> SessionScript:
        """A new connection with one session on it."""
        open_fields = {"max_frame_size": max_frame_size} if max_frame_size else {}
        return self.connect(**open_fields).begin(**begin_fields)

    # -- broker-wide hooks ---------------------------------------------------------------------------------

    def need_hook(self, name: str) -> None:
        """The broker has hook `name` ("a|b": either), else the case is unsupported."""
        if not has_need(self.broker, name):
            raise CaseUnsupported(missing_hook_reason(name))

    @contextlib.contextmanager
    def alarm(self, kind: str):
        self.need_hook(f"{kind}_alarm")
        self.broker.set_alarm(kind, True)
        try:
            yield
        finally:
            self.broker.set_alarm(kind, False)

    def drain_queue(self, queue: str, *links: ReceiverScript) -> list[bytes]:
        """Every body the broker delivered on the given links during the case (also those the case did not wait
        for, e.g. beyond credit: delivered is not lost), then the rest of the queue."""
        reader = self.session(incoming_window=0x7FFFFFFF).attach_receiver(queue)   # a window wider than any queue
        reader.flow(link_credit=10000)
        # a receiving link attached on the queue: its answer comes after the queue took our credit, then the
        # rest arrives with no gap longer than the absence window (not a clock-only silence of 2 quiet periods)
        reader.session.settle_by_barrier(queue, through_queue=True)
        gap = reader.session.absence_window()
        accepted = 0       # transfers accepted so far: consumed as an application consumes, each as it comes
        others = {id(link): link for link in links}
        taken = dict.fromkeys(others, 0)      # the case's other links: transfers accepted so far on each
        seen = sum(len(link.state.transfers) for link in others.values())
        last = time.monotonic()
        while True:
            try:
                reader.peer.expect(Transfer, channel=reader.session.remote_channel, handle=reader.broker_handle,
                                   timeout=gap)
            except ExpectationTimeout:
                # the case's other links that still hold credit take their share of the queue meanwhile (delivered
                # is not lost: their messages count): consumed too, as they come (a broker counts a delivered,
                # unsettled message in the queue's depth: ActiveMQ)
                for key, link in others.items():
                    taken[key] = link.accept_delivered(since=taken[key])
                now_seen = sum(len(link.state.transfers) for link in others.values())
                if now_seen != seen:
                    seen, last = now_seen, time.monotonic()
                # a broker that pages the queue in from its store (ActiveMQ, which pages in only as far as its
                # memory limit allows) may pause longer than the gap while it still holds messages: where the
                # profile reads the queue's depth without a command-line tool, a depth above 0 is waited for,
                # a gap at a time, up to the frame timeout since the last transfer
                if time.monotonic() - last < self.options.frame_timeout and self._still_queued(queue):
                    if self._emptied(queue, reader, *others.values()):
                        break
                    continue
                break
            last = time.monotonic()
            # a broker may hold back the rest until what it delivered is settled (unsettled deliveries keep
            # their memory on ActiveMQ)
            accepted = reader.accept_delivered(since=accepted)
        return [b for link in (*links, reader) for b in link.bodies_from_state()]   # read last: all delivered

    def _emptied(self, queue: str, *links: ReceiverScript) -> bool:
        """Whether the queue is empty once our acceptances are in (a broker that counts delivered, unsettled
        messages in its depth, ActiveMQ, still counts those just accepted): a barrier through the queue on each
        link's session, answered after our dispositions and after what the queue delivered before it, no new
        transfer on any of the links since, and then the broker's own count 0. False at the first doubt (the
        drain then waits for another gap, as before)."""
        before = [len(link.state.transfers) for link in links]
        for link in links:
            if link.peer.closed_by_remote:
                continue
            try:
                link.session.barrier(queue, through_queue=True)
            except (ExpectationTimeout, PeerError):
                return False
        if [len(link.state.transfers) for link in links] != before:
            return False
        return self.queue_depth_now(queue) == 0

    def _still_queued(self, queue: str) -> bool:
        """Whether the broker's own count says `queue` still holds messages (False when the profile cannot tell
        or tells only through a command-line tool, whose start costs more than the wait it would save)."""
        return (self.queue_depth_now(queue) or 0) > 0

    def queue_depth_now(self, queue: str) -> int | None:
        """The broker's own count of the messages in `queue`, where its profile reads it without a command-line
        tool (None otherwise, or when the call fails: a failing management call proves nothing either way)."""
        try:
            return self.broker.queue_depth(queue, quick=True)
        except Exception:
            return None

    # -- refusals by the broker's configuration ------------------------------------------------------------

    def refusals(self, conn: ConnectionScript) -> list[Refusal]:
        """The broker's detach / end / close on `conn` whose error condition is a refusal outside the case's
        subject (`findings.REFUSALS` less `CaseSpec.answers`), in arrival order."""
        answers = set(getattr(self.spec, "answers", ()))
        arrived = list(conn.peer.arrived)
        found = []
        for position, item in enumerate(arrived):
            body = getattr(item, "body", None)
            if not isinstance(body, (Detach, End, Close)):
                continue
            condition = Peer.error_condition(item)
            if condition is None or condition not in REFUSALS or condition in answers:
                continue
            err = body.error
            description = str(err.description) if isinstance(err, Error) and err.description is not None else None
            found.append(Refusal(condition, description, body.NAME, conn.number, frame_index_of(conn, item, -1),
                                 position, summarize(item)))
        return found

    def refusal(self) -> Refusal | None:
        """The first refusal on a connection whose refusal the case did not work around (None: none)."""
        for conn in self.connections:
            if conn.number in self._worked_around:
                continue
            found = self.refusals(conn)
            if found:
                return found[0]
        return None

    def worked_around(self, conn: ConnectionScript, why: str) -> None:
        """The case got around the refusals on `conn` (recorded in the observations with `why`): they end
        nothing, and what was found after them stands."""
        self._worked_around[conn.number] = why
        self.observations.setdefault("refusals_worked_around", []).append(
            {"connection": conn.number, "why": why, "refusals": [r.to_record() for r in self.refusals(conn)]})

    def after_refusal(self, finding: Finding, refusal: Refusal) -> bool:
        """Whether `finding` was recorded once `refusal` had arrived (a model finding: at a later frame of
        the refusal's connection). A broken obligation never is: the spec forbids that refusal."""
        if finding.source is Source.OBLIGATION:
            return False
        if finding.source is Source.MODEL:
            return finding.connection == refusal.connection and (finding.frame_index or 0) > refusal.frame_index
        then = self._recorded_at.get(id(finding), {})
        return then.get(refusal.connection, 0) > refusal.position

    # -- the broker -------------------------------------------------------------------------------------

    def broker_alive(self) -> bool:
        """Whether the broker process still runs (a broker that cannot tell counts as alive; one whose process
        table cannot be read does not, so no finding rests on it)."""
        try:
            return bool(self.broker.alive())
        except OSError:
            return False

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, ScriptError):
            return str(exc)
        return super().describe_error(exc)

    # -- after the case: the whole exchange ------------------------------------------------------------------

    def judge(self) -> None:
        """Add the model's findings over every transcript and the obligations the broker broke."""
        self.judge_model(self.connections)
        for conn in self.connections:
            if conn.peer.ending == FIN and not conn.peer.received(Close) and self.broker_alive():
                entries = conn.peer.transcript.snapshot()
                self.add_finding("2.4.3/close-frame-first", "the broker dropped the connection without a close frame "
                                 "(the broker process is still running)", expected="close(...) before the socket "
                                 "closes", actual="the socket closed", conn=conn,
                                 frame_index=entries[-1].index if entries else None, source=Source.MODEL)
        self.judge_obligations("the broker")

    # -- after the case --------------------------------------------------------------------------------

    def close(self, *, cut: bool = False) -> None:
        """Drop the case's connections and delete its queues. `cut`: a connection of the case was cut or
        stalled (the case is `error`; on a broker that stopped answering each delete would wait a frame timeout
        and more; the queues are left behind)."""
        for conn in self.connections:
            conn.peer.close()
        if cut:
            return
        for name in self._queues:
            with contextlib.suppress(Exception):
                self.broker.delete_queue(name)

    def ladders(self) -> list[str]:
        out = []
        for c in self.connections:
            sender_side = any(l.is_sender for s in c.sessions for l in s.links) and not any(
                not l.is_sender for s in c.sessions for l in s.links)
            out.append(f"connection {c.number}\n" + c.peer.transcript.ladder(peer_is_receiver=not sender_side))
        return out

    def subject_identity(self) -> tuple[str | None, str | None]:
        """The broker's product and version from its open's properties (else its profile's)."""
        product, version = self.broker.product, self.broker.version
        for c in self.connections:
            props = c.broker_open.properties if c.broker_open is not None else None
            if props:
                product = str(props.get("product", product)) if props.get("product") else product
                version = str(props.get("version", version)) if props.get("version") else version
                break
        return product, version
