"""What every case context has, whatever its subject: the record of what was found and how the case ended.

This module owns `CaseRecord`, the part of a case's context that does not depend on whether the subject is
a broker (`context.CaseContext`) or a client library (`client_context.ClientCaseContext`): the findings
(`ctx.require(...)` and `ctx.add_finding(...)` add one and let the case go on, `ctx.halt(...)` adds one and
stops the case body, `ctx.step()` lets a scenario go on past a halted step), obligations (`ctx.oblige`),
observations, how a case ends (`ctx.passed`, `ctx.informational`, `ctx.unobservable`), and after the case
the model's judgement of every frame the other side sent (`judge_model`) and the obligations it left open
(`judge_obligations`). A finding names the frame it rests on when there is one (`frame=`): its index in
that connection's transcript is what the report and the bug report show.

A subclass says which connections carry the subject's frames (`conversations()`), answers what the
executor asks of every context in its own terms (`judge`, `close`, `subject_identity`, `ladders`, `noun`)
and adds only what its subject can honour: queues, alarms and broker hooks for brokers; the application and
the scripted broker for client libraries.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable

from .. import catalogue
from ..model import transcript_violations
from ..peer import Peer, PeerError, Timeouts, summarize
from ..wire import Close, End
from .findings import CaseHalted, Finding, Obligation, Outcome, OutcomeKind, Source, SuiteError


class CaseRecord:
    """The record of one case (findings, obligations, observations) and how it ends."""

    def __init__(self, spec, subject, options):
        self.spec = spec
        self.subject = subject
        self.options = options
        self.observations: dict[str, Any] = {}
        self.findings: list[Finding] = []
        self.obligations: list[Obligation] = []
        self._recorded_at: dict[int, dict[int, int]] = {}   # id(finding) -> frames arrived per connection then
        self._slug = re.sub(r"[^a-z0-9]+", "-", spec.id.lower()).strip("-")

    def conversations(self) -> list:
        """The connections whose other side is the subject (each has `.peer` and `.number`)."""
        return []

    def broker_peers(self) -> list:
        """The peers of connections to a broker under test: the executor checks them for a cut or stalled
        connection and a broker that died (none when the subject is not a broker)."""
        return []

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(frame=self.options.frame_timeout, quiet=self.options.quiet_period,
                        connect=self.options.connect_timeout)

    # -- findings ------------------------------------------------------------------------------------------

    def add_finding(self, requirement: str, reason: str, *, expected: str | None = None, actual: str | None = None,
                    conn=None, frame_index: int | None = None, frame=None, source: Source = Source.CASE) -> Finding:
        """Record that the subject broke `requirement`; the case goes on. `frame`: the frame it rests on (its
        transcript index is recorded; `actual` defaults to its summary); else the last frame of `conn`."""
        catalogue.get(requirement)
        if frame is not None and conn is not None and frame_index is None:
            frame_index = frame_index_of(conn, frame)
            actual = actual if actual is not None else summarize(frame)
        if conn is not None and frame_index is None:
            entries = conn.peer.transcript.snapshot()
            frame_index = entries[-1].index if entries else None
        finding = Finding(requirement, reason, expected, actual, frame_index,
                          conn.number if conn is not None else None, source)
        self.findings.append(finding)
        self._recorded_at[id(finding)] = {c.number: len(c.peer.arrived) for c in self.conversations()}
        return finding

    def halt(self, requirement: str, reason: str, *, expected: str | None = None, actual: str | None = None,
             conn=None, frame=None) -> None:
        """Record the finding and stop the case body: the next steps need what never came."""
        raise CaseHalted(self.add_finding(requirement, reason, expected=expected, actual=actual, conn=conn,
                                          frame=frame))

    def require(self, condition: bool, requirement: str, reason: str, *, expected: str | None = None,
                actual: str | None = None, conn=None, frame=None) -> bool:
        """Record a finding on `requirement` unless `condition` holds; the case goes on. Returns condition."""
        if not condition:
            self.add_finding(requirement, reason, expected=expected, actual=actual, conn=conn, frame=frame)
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

    def oblige(self, requirement: str, what: str, conn, channel: int | None,
               answers: Callable[[Any], bool]) -> None:
        """Open an obligation on the frame just sent: the other side must answer it (`answers(frame)`)."""
        if not catalogue.get(requirement).obligation:
            raise SuiteError(f"{requirement} is not an obligation in the catalogue")
        sent = [e.index for e in conn.peer.transcript.snapshot() if e.direction == "out" and not e.auto]
        # the frame just sent (an answer may already have arrived after it: the scan starts at our frame)
        self.obligations.append(Obligation(requirement, what, conn, channel, answers, sent[-1] if sent else -1))

    # -- refusals by configuration (a broker's; see context.CaseContext) -----------------------------------

    def refusal(self):
        """The subject's refusal by configuration that kept the case from its subject (None: none)."""
        return None

    def after_refusal(self, finding: Finding, refusal) -> bool:
        return False

    # -- how a case ends -----------------------------------------------------------------------------------

    def observe(self, **values: Any) -> None:
        self.observations.update(values)

    def passed(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(OutcomeKind.PASSED, reason, observations)

    def informational(self, reason: str, **observations: Any) -> Outcome:
        return Outcome(OutcomeKind.RECORDED, reason, observations)

    def unobservable(self, requirement: str, because: str, **observations: Any) -> Outcome:
        """The subject cannot be judged here: observing it needs a behaviour the subject does not show."""
        return Outcome(OutcomeKind.UNOBSERVABLE, f"{requirement} not observable on this {self.noun}, because "
                       f"{because}", observations, requirement)

    noun = "subject"        # what the subject is called in a reason ("broker", "client library")

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, PeerError):
            return f"{type(exc).__name__}: {exc}"
        return f"internal error: {type(exc).__name__}: {exc}"

    # -- what the executor asks of every context (each subject answers in its own terms) -------------------------

    def judge(self) -> None:
        """After the case: the model's findings over every frame the subject sent, and the obligations it
        broke."""
        raise NotImplementedError

    def close(self, *, cut: bool = False) -> None:
        """After the case: let go of everything it opened. `cut`: a connection of the case was cut or stalled
        (nothing that needs the subject's answer is attempted)."""
        raise NotImplementedError

    def transcripts_json(self) -> list[dict]:
        return [c.peer.transcript.to_json() for c in self.conversations()]

    def ladders(self) -> list[str]:
        """Each conversation drawn as a ladder (the report's and the bug report's)."""
        raise NotImplementedError

    def subject_identity(self) -> tuple[str | None, str | None]:
        """(product, version) of the subject as the record names it."""
        raise NotImplementedError

    # -- after the case: the whole exchange ------------------------------------------------------------------

    def release_holds(self) -> None:
        """Read whatever a hold of a case that ended early kept unread (the transcript and the model must see
        every frame the other side sent)."""
        for conn in self.conversations():
            if conn.peer.holding:
                conn.peer.release_reads(note="held unread when the case body ended")

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


def frame_index_of(conn, frame, default: int | None = None) -> int | None:
    """The index of `frame` (an item received or sent on `conn`) in that connection's transcript."""
    for entry in conn.peer.transcript.snapshot():
        if entry.item is frame:
            return entry.index
    return default


def _ended_while_open(ob: Obligation) -> tuple[Any, int] | None:
    """The other side's end (of the obligation's session) or close carrying an error that came before any
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
