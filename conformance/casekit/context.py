"""What a case runs with: the broker, its queues and connections, and the record of what it found.

This module owns `CaseContext`: fresh queues (`ctx.queue`), scripted connections (`ctx.session`,
`ctx.connect`, see `conformance.casekit.scripts`), broker-wide hooks (`ctx.alarm`, `ctx.need_hook`), and
the case's record: `ctx.require(...)` / `ctx.add_finding(...)` add a finding and let the case go on,
`ctx.halt(...)` adds one and stops the case body (the step needs a frame that never came), `ctx.step()`
lets a scenario go on past a halted step, `ctx.oblige(...)` opens an obligation. After the case, `judge()`
adds the model's findings over every transcript and the broken obligations. How a case ends normally:
`ctx.passed(reason)`, `ctx.informational(reason)` (behaviour the spec leaves open, recorded), or
`ctx.unobservable(requirement, because)` (the subject needs a behaviour this broker does not show).
`ctx.refusal()` finds the broker's refusal by configuration (`findings.REFUSALS`) and `ctx.after_refusal`
tells which findings came after it; a case that works around a refusal (e.g. sends non-durable messages
where durable ones were refused) takes it off the record with `ctx.worked_around(conn, why)`.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from typing import Any, Callable

from .. import catalogue
from ..model import transcript_violations
from ..peer import ExpectationTimeout, Peer, PeerError, Timeouts, summarize
from ..peer.errors import FIN
from ..wire import Close, Detach, End, Error, Transfer
from .findings import (
    REFUSALS, CaseHalted, CaseUnsupported, Finding, Obligation, Outcome, OutcomeKind, Refusal, Source, SuiteError,
)
from .scripts import ConnectionScript, ReceiverScript, ScriptError, SessionScript
from .spec import has_need, missing_hook_reason

_counter = itertools.count(1)


class CaseContext:
    def __init__(self, spec, broker, options):
        self.spec = spec
        self.broker = broker
        self.options = options
        self.observations: dict[str, Any] = {}
        self.findings: list[Finding] = []
        self.obligations: list[Obligation] = []
        self.connections: list[ConnectionScript] = []
        self._recorded_at: dict[int, dict[int, int]] = {}   # id(finding) -> frames arrived per connection then
        self._worked_around: dict[int, str] = {}            # connection number -> why its refusal is not the end
        self._queues: list[str] = []
        self._preloaded: dict[str, list[bytes]] = {}
        self._slug = re.sub(r"[^a-z0-9]+", "-", spec.id.lower()).strip("-")

    # -- timeouts ----------------------------------------------------------------------------------------

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(frame=self.options.frame_timeout, quiet=self.options.quiet_period,
                        connect=self.options.connect_timeout)

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
        peer = Peer.connect(self.broker.url, timeouts=self.timeouts, tls=self.broker.tls)
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
                    continue
                break
            last = time.monotonic()
            # a broker may hold back the rest until what it delivered is settled (unsettled deliveries keep
            # their memory on ActiveMQ)
            accepted = reader.accept_delivered(since=accepted)
        return [b for link in (*links, reader) for b in link.bodies_from_state()]   # read last: all delivered

    def _still_queued(self, queue: str) -> bool:
        """Whether the broker's own count says `queue` still holds messages (False when the profile cannot tell
        or tells only through a command-line tool, whose start costs more than the wait it would save)."""
        try:
            return (self.broker.queue_depth(queue, quick=True) or 0) > 0
        except Exception:       # a failing management call proves nothing either way
            return False

    # -- findings ------------------------------------------------------------------------------------------

    def add_finding(self, requirement: str, reason: str, *, expected: str | None = None, actual: str | None = None,
               conn: ConnectionScript | None = None, frame_index: int | None = None,
               source: Source = Source.CASE) -> Finding:
        """Record that the broker broke `requirement`; the case goes on."""
        catalogue.get(requirement)
        if conn is not None and frame_index is None:
            entries = conn.peer.transcript.snapshot()
            frame_index = entries[-1].index if entries else None
        finding = Finding(requirement, reason, expected, actual, frame_index,
                          conn.number if conn is not None else None, source)
        self.findings.append(finding)
        self._recorded_at[id(finding)] = {c.number: len(c.peer.arrived) for c in self.connections}
        return finding

    def halt(self, requirement: str, reason: str, *, expected: str | None = None, actual: str | None = None,
             conn: ConnectionScript | None = None) -> None:
        """Record the finding and stop the case body: the next steps need what never came."""
        raise CaseHalted(self.add_finding(requirement, reason, expected=expected, actual=actual, conn=conn))

    def require(self, condition: bool, requirement: str, reason: str, *, expected: str | None = None,
                actual: str | None = None) -> bool:
        """Record a finding on `requirement` unless `condition` holds; the case goes on. Returns condition."""
        if not condition:
            self.add_finding(requirement, reason, expected=expected, actual=actual)
        return bool(condition)

    @contextlib.contextmanager
    def step(self):
        """A step whose halt does not end the scenario: its finding stays recorded, the case goes on."""
        try:
            yield
        except CaseHalted:
            pass

    def found(self, requirement: str) -> bool:
        return any(f.requirement == requirement for f in self.findings)

    def oblige(self, requirement: str, what: str, conn: ConnectionScript, channel: int | None,
               answers: Callable[[Any], bool]) -> None:
        """Open an obligation on the frame just sent: the broker must answer it (`answers(frame)`)."""
        if not catalogue.get(requirement).obligation:
            raise SuiteError(f"{requirement} is not an obligation in the catalogue")
        sent = [e.index for e in conn.peer.transcript.snapshot() if e.direction == "out" and not e.auto]
        # the frame just sent (an answer may already have arrived after it: the scan starts at our frame)
        self.obligations.append(Obligation(requirement, what, conn, channel, answers, sent[-1] if sent else -1))

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
            found.append(Refusal(condition, description, body.NAME, conn.number, _transcript_index(conn, item),
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

    # -- how a case ends -----------------------------------------------------------------------------------

    def observe(self, **values: Any) -> None:
        self.observations.update(values)

    def passed(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(OutcomeKind.PASSED, reason, observations)

    def informational(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(OutcomeKind.RECORDED, reason, observations)

    def unobservable(self, requirement: str, because: str, **observations: Any) -> Outcome:
        """The subject cannot be judged on this broker: observing it needs a behaviour it does not show."""
        return Outcome(OutcomeKind.UNOBSERVABLE, f"{requirement} not observable on this broker, because {because}",
                       observations, requirement)

    def broker_alive(self) -> bool:
        """Whether the broker process still runs (a broker that cannot tell counts as alive; one whose process
        table cannot be read does not, so no finding rests on it)."""
        try:
            return bool(self.broker.alive())
        except OSError:
            return False

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, PeerError):
            return f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ScriptError):
            return str(exc)
        return f"internal error: {type(exc).__name__}: {exc}"

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

    def judge_model(self, connections) -> None:
        """The model's findings over every frame the other side sent on `connections` (the first per
        requirement: a requirement the case named already is not repeated)."""
        for conn in connections:
            seen = {f.requirement for f in self.findings}
            for v, frame, index in transcript_violations(conn.peer.transcript.snapshot()):
                if v.requirement_id in seen:
                    continue
                seen.add(v.requirement_id)
                self.add_finding(v.requirement_id, f"frame {index}: {v.detail}", expected=v.sentence[:120],
                                 actual=summarize(frame), conn=conn, frame_index=index, source=Source.MODEL)

    def judge_obligations(self, who: str) -> None:
        """An answer the spec obliges the other side (`who`: "the broker", "the client") to give, left open
        when it ended the session or closed the connection: a finding on that obligation's requirement."""
        for ob in self.obligations:
            if self.found(ob.requirement):
                continue
            broken = _ended_while_open(ob)
            if broken is not None:
                frame, index = broken
                self.add_finding(ob.requirement, f"{who} {_ending(frame)} while {ob.what} was unanswered",
                                 expected=f"an answer to {ob.what}", actual=summarize(frame), conn=ob.connection,
                                 frame_index=index, source=Source.OBLIGATION)

    # -- after the case --------------------------------------------------------------------------------

    def close(self, *, delete_queues: bool = True) -> None:
        """Drop the case's connections and delete its queues. `delete_queues` False: a connection of the case
        was cut or stalled (the case is `error`; on a broker that stopped answering each delete would wait a
        frame timeout and more; the queues are left behind)."""
        for conn in self.connections:
            conn.peer.close()
        if not delete_queues:
            return
        for name in self._queues:
            with contextlib.suppress(Exception):
                self.broker.delete_queue(name)

    def transcripts_json(self) -> list[dict]:
        return [c.peer.transcript.to_json() for c in self.connections]

    def ladders(self) -> list[str]:
        out = []
        for c in self.connections:
            sender_side = any(l.is_sender for s in c.sessions for l in s.links) and not any(
                not l.is_sender for s in c.sessions for l in s.links)
            out.append(f"connection {c.number}\n" + c.peer.transcript.ladder(peer_is_receiver=not sender_side))
        return out

    def broker_identity(self) -> tuple[str | None, str | None]:
        product, version = self.broker.product, self.broker.version
        for c in self.connections:
            props = c.broker_open.properties if c.broker_open is not None else None
            if props:
                product = str(props.get("product", product)) if props.get("product") else product
                version = str(props.get("version", version)) if props.get("version") else version
                break
        return product, version


def _transcript_index(conn: ConnectionScript, item: Any) -> int:
    for entry in conn.peer.transcript.snapshot():
        if entry.item is item:
            return entry.index
    return -1


def _ended_while_open(ob: Obligation) -> tuple[Any, int] | None:
    """The broker's end (of the obligation's session) or close carrying an error that came before any
    answer to the obligation, with its transcript index; None when answered first or never ended so."""
    for entry in ob.connection.peer.transcript.snapshot():
        if entry.direction != "in" or entry.index <= ob.frame_index:
            continue
        frame = entry.item
        body = getattr(frame, "body", None)
        if body is None:
            continue
        if ob.answers(frame):
            return None
        ends = isinstance(body, Close) or (isinstance(body, End) and (ob.channel is None or frame.channel == ob.channel))
        if ends and Peer.error_condition(frame) is not None:
            return frame, entry.index
    return None


def _ending(frame) -> str:
    what = "closed the connection" if isinstance(frame.body, Close) else "ended the session"
    return f"{what} with {Peer.error_condition(frame)}"
