"""Runs one conformance case against one broker and judges the whole exchange into a CaseResult.

This module owns the order of judging: the case body runs and records findings (a halted step ends the
body, not the judging); then the flow-control model judges every transcript and the open obligations are
checked; then every finding must name a requirement the case declares (else the suite is wrong: ERROR,
naming the case to fix; so is a predicate that raises, a message body that does not decode and an import
that fails in the case); then the verdict is the worst finding by its level (`VERDICT_FOR_LEVEL`), or the
case's own outcome when nothing was found. A peer failure outside a judged step or a crash is ERROR
(unless a MUST was already found broken: that stands, with the error kept in the observations). A verdict
resting on a connection that was reset or stalled, or on a broker that died or stopped answering during the
case (`conformance.brokers.liveness`), is ERROR too: the verdict it would have given stays in the
observations. A hook the broker lacks (`HookUnsupported`) is UNSUPPORTED; a hook the case declares
(`CaseSpec.needs`) is checked first, before the broker lock is asked for or a connection opened, so such a
case costs nothing. A broker that refused a step by its configuration (`findings.REFUSALS`: a detach, end
or close with precondition-failed, not-found, ...) before the case reached its subject is UNSUPPORTED,
quoting the refusal; what was found after it is set aside (`_read_the_refusal`). Broker-wide cases (alarms)
hold an exclusive lock on the broker so nothing else runs beside them, across pytest-xdist workers too
(ordinary cases hold a shared lock).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import tempfile
import time
import traceback
from pathlib import Path

from ..brokers.broker_errors import HookUnsupported
from ..brokers.liveness import cut_or_stalled, died_during
from ..peer import PeerError, PredicateError
from ..options import RunOptions
from ..results import CaseResult
from ..verdict import Verdict
from .findings import (
    CaseConclusion, CaseHalted, Outcome, OutcomeKind, SubjectUnobservable, SuiteError, ordered, verdict_of,
)
from .spec import CaseSpec, has_need, missing_hook_reason


@contextlib.contextmanager
def broker_lock(broker_key: str, exclusive: bool, timeout: float = 600.0):
    """A readers-writer lock per broker across processes: exclusive cases run alone on their broker."""
    lock_dir = Path(os.environ.get("AMQP_CONFORMANCE_LOCKS", tempfile.gettempdir())) / "amqp-conformance-locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() else "_" for ch in broker_key)
    fh = open(lock_dir / f"{safe}.lock", "a+")
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fh, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"waited {timeout:.0f} s for the broker lock of {broker_key}")
                time.sleep(0.05)  # bounded-wait-ok: polling a file lock with a deadline
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def run_case(spec: CaseSpec, broker, options: RunOptions | None = None) -> CaseResult:
    """Run `spec` against `broker` (a `conformance.brokers.Broker`) and return its result; never raises."""

    options = options or RunOptions()
    started = _dt.datetime.now(_dt.timezone.utc).isoformat()
    t0 = time.monotonic()
    result = CaseResult(case_id=spec.id, title=spec.title, section=spec.section, level=spec.level,
                        requirement_ids=list(spec.judged), verdict=Verdict.ERROR, reason="",
                        broker=broker.name, started_at=started)
    result.subject = list(spec.subject)
    ctx = None
    outcome: Outcome | None = None
    error: str | None = None
    broke: str | None = None
    missing = next((hook for hook in spec.needs if not has_need(broker, hook)), None)
    if missing is not None:      # a declared hook the broker lacks: unsupported, nothing asked of the broker
        result.verdict, result.reason = Verdict.UNSUPPORTED, missing_hook_reason(missing)
        result.broker_product, result.broker_version = broker.product, broker.version
        result.waited_s = {"timeout": 0.0, "quiet": 0.0}
        _unless_the_broker_died(result, [], broker, options)     # a dead node's process only: no connection
        result.duration_s = round(time.monotonic() - t0, 3)
        return result
    try:
        with broker_lock(broker.lock_key, spec.exclusive):
            ctx = _context_class(spec)(spec, broker, options)
            try:
                for hook in spec.needs:
                    ctx.need_hook(hook)
                outcome = spec.func(ctx) or ctx.passed("every checked requirement held")
            except CaseHalted:
                pass                      # its finding is recorded; judging goes on
            except SubjectUnobservable as u:
                outcome = ctx.unobservable(u.requirement or spec.subject[0], u.because, **u.observations)
            except CaseConclusion as c:   # unsupported: the broker cannot run the case at all
                outcome = None
                result.verdict, result.reason = c.verdict, c.reason
                result.observations.update(c.observations)
            except HookUnsupported as exc:  # the broker lacks a hook the case needs: a fact, not a failure
                outcome = None
                result.verdict, result.reason = Verdict.UNSUPPORTED, str(exc)
            except (SuiteError, PredicateError) as exc:   # a bug in the suite: never the broker's verdict
                error = f"suite error in case {spec.id}: {exc}"
            except ImportError as exc:    # the case imports something that is not there (our package broken)
                error = f"suite error in case {spec.id}: an import failed: {type(exc).__name__}: {exc}"
                result.observations["traceback"] = traceback.format_exc(limit=8)
            except Exception as exc:  # the run itself broke
                error = ctx.describe_error(exc)
                if not isinstance(exc, PeerError):
                    result.observations["traceback"] = traceback.format_exc(limit=8)
            finally:
                ctx.release_holds()
                if result.verdict is not Verdict.UNSUPPORTED:
                    # after the case, before it drops its connections: were they cut or stalled?
                    broke = cut_or_stalled(ctx.broker_peers(), options.frame_timeout)
                ctx.close(cut=broke is not None)
            if result.verdict is not Verdict.UNSUPPORTED:
                ctx.judge()
                _conclude(result, spec, ctx, outcome, error)
                if broke and result.verdict is not Verdict.ERROR:
                    _no_verdict(result, broke, "verdict_before_transport_check")
    except TimeoutError as exc:
        result.verdict, result.reason = Verdict.ERROR, str(exc)
    except Exception as exc:
        result.verdict, result.reason = Verdict.ERROR, f"could not set up the case: {exc}"
    if ctx is not None:
        _unless_the_broker_died(result, ctx.broker_peers(), broker, options)
    result.duration_s = round(time.monotonic() - t0, 3)
    if ctx is not None:
        peers = [c.peer for c in ctx.conversations()]
        result.waited_s = {"timeout": round(sum(p.timed_out_s for p in peers), 3),
                           "quiet": round(sum(p.quiet_s for p in peers), 3)}
        result.observations.update(ctx.observations)
        skipped = [f"connection {c.number}: {line}" for c in ctx.conversations() for line in c.peer.skipped]
        if skipped:        # steps the case asked for after the broker's close / end: not sent (no finding)
            result.observations["not_sent_after_the_broker_ended"] = skipped
        result.transcripts = ctx.transcripts_json()
        result.ladders = ctx.ladders()
        ident = ctx.subject_identity()
        result.broker_product, result.broker_version = ident
    if result.verdict is Verdict.ERROR:
        with contextlib.suppress(Exception):
            if not broker.alive():
                result.broker_log_tail = broker.log_tail(40)
    return result


def _context_class(spec: CaseSpec):
    """A broker case's CaseContext, or a client case's (the suite plays the broker: casekit/client_context.py)."""
    if spec.kind == "client":
        from .client_context import ClientCaseContext
        return ClientCaseContext
    from .context import CaseContext
    return CaseContext


def _no_verdict(result: CaseResult, why: str, kept_as: str) -> None:
    """The run itself broke under the case: ERROR, keeping the verdict it would have given."""
    result.observations[kept_as] = f"{result.verdict.value}: {result.reason}"
    result.violated = result.expected = result.actual = None
    result.verdict, result.reason = Verdict.ERROR, why


def _unless_the_broker_died(result: CaseResult, peers: list, broker, options: RunOptions) -> None:
    """A connection lost because the broker died is `error`, never a verdict (brokers/liveness.py decides)."""
    try:
        died = died_during(peers, broker, options.frame_timeout, result.verdict.value)
    except Exception:              # run_case never raises; the case's own verdict stands
        return
    if died is None:
        return
    if result.verdict is Verdict.ERROR:
        result.reason = f"{died} ({result.reason})"
        return
    _no_verdict(result, died, "verdict_before_broker_died")


def _conclude(result: CaseResult, spec: CaseSpec, ctx, outcome: Outcome | None, error: str | None) -> None:
    """Set the verdict from the findings (worst first), the outcome, or the error."""
    findings = ordered(ctx.findings)
    undeclared = sorted({f.requirement for f in findings if f.requirement not in spec.judged})
    if undeclared:
        result.verdict = Verdict.ERROR
        result.reason = (f"suite error in case {spec.id}: a finding names {', '.join(undeclared)}, which its @case "
                         "does not declare; declare it (or judge the subject another way)")
        result.findings = [f.to_record() for f in findings]
        return
    refusal = ctx.refusal()
    if refusal is not None:
        findings, error, done = _read_the_refusal(result, ctx, refusal, findings, outcome, error)
        if done:
            return
    result.findings = [f.to_record() for f in findings]
    decided = verdict_of(findings)
    if outcome is not None:
        result.observations.update(outcome.observations)
        result.outcome = outcome.kind.value
    if error is not None and decided is not Verdict.FAIL:
        result.verdict, result.reason = Verdict.ERROR, error
        return
    if error is not None:
        result.observations["error_after_findings"] = error
    if decided is not None:          # the deciding finding: the worst, first recorded among equals
        first = findings[0]
        result.verdict, result.reason = decided, first.reason
        subject_found = any(f.requirement in spec.subject for f in findings)
        if outcome is not None and outcome.kind is not OutcomeKind.PASSED and not (
                subject_found and outcome.kind is OutcomeKind.UNOBSERVABLE):    # what the case said of its subject
            result.reason += f" -- and the case's subject: {outcome.reason}"
        result.violated, result.expected, result.actual = first.requirement, first.expected, first.actual
    elif outcome is None:
        result.verdict, result.reason = Verdict.ERROR, "the case halted without recording a finding (a suite bug)"
    else:
        result.verdict, result.reason = outcome.verdict, outcome.reason


def _read_the_refusal(result: CaseResult, ctx, refusal, findings: list, outcome: Outcome | None,
                      error: str | None) -> tuple[list, str | None, bool]:
    """The broker refused something by its configuration (`findings.REFUSALS`): what the case recorded after
    the refusal is set aside (observations), and a case that did not reach its subject reports the refusal
    (UNSUPPORTED, quoting condition and description). Returns the findings that stand, the error that stands
    (one the refusal caused does not), and whether the verdict is decided."""
    result.observations["refusal"] = refusal.to_record()
    aside = [f for f in findings if ctx.after_refusal(f, refusal)]
    if aside:
        result.observations["set_aside_after_refusal"] = [f.to_record() for f in aside]
        findings = [f for f in findings if all(f is not a for a in aside)]
    if error is not None and not error.startswith(("suite error", "internal error")):
        result.observations["error_after_refusal"] = error
        result.observations.pop("traceback", None)      # a step the refusal cut short, not a suite bug
        error = None
    reached = outcome is not None and outcome.kind is OutcomeKind.PASSED and not aside   # (recorded behaviour
    # or an unobservable subject after a refusal is the refusal's doing: the outcome stays in the observations)
    if error is not None or findings or reached:
        if findings:
            result.observations["then"] = refusal.text()
        return findings, error, False
    result.findings = []
    if outcome is not None:
        result.observations.update(outcome.observations)
        result.observations["outcome_after_refusal"] = f"{outcome.kind.value}: {outcome.reason}"
    result.verdict, result.reason = Verdict.UNSUPPORTED, refusal.reason()
    result.actual = refusal.frame
    return findings, error, True

