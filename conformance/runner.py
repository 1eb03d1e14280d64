"""Runs one conformance case against one broker and turns what happened into a CaseResult.

This module owns the verdict rules that are not the case's own: a conclusion raised by the case keeps its
verdict; a peer failure (timeout in setup, connection lost, malformed frame) or a crash is ERROR; broker-wide
cases (alarms) hold an exclusive lock on the broker so nothing else runs beside them, across pytest-xdist
workers too (ordinary cases hold a shared lock).
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

from .brokers.broker_errors import HookUnsupported
from .cases.base import CaseConclusion, CaseSpec, Outcome
from .run.options import RunOptions  # noqa: F401  (the one definition; importable here as before)
from .verdict import CaseResult, Verdict


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
    from .cases.context import CaseContext

    options = options or RunOptions()
    started = _dt.datetime.now(_dt.timezone.utc).isoformat()
    t0 = time.monotonic()
    result = CaseResult(case_id=spec.id, title=spec.title, section=spec.section, level=spec.level,
                        requirement_ids=list(spec.requirements), verdict=Verdict.ERROR, reason="",
                        broker=broker.name, started_at=started)
    ctx = None
    try:
        with broker_lock(broker.lock_key, spec.exclusive):
            ctx = CaseContext(spec, broker, options)
            try:
                for hook in spec.needs:
                    ctx.need_hook(hook)
                outcome = spec.func(ctx)
                if outcome is None:
                    outcome = Outcome(Verdict.PASS, "every checked requirement held")
                result.verdict, result.reason = outcome.verdict, outcome.reason
                result.observations.update(outcome.observations)
            except CaseConclusion as c:
                result.verdict, result.reason = c.verdict, c.reason
                result.violated, result.expected, result.actual = c.requirement, c.expected, c.actual
                result.observations.update(c.observations)
            except HookUnsupported as exc:  # the broker lacks a hook the case needs: a fact, not a failure
                result.verdict, result.reason = Verdict.UNSUPPORTED, str(exc)
            except Exception as exc:  # the run itself broke
                result.verdict = Verdict.ERROR
                result.reason = ctx.describe_error(exc)
                if not _is_peer_error(exc):
                    result.observations["traceback"] = traceback.format_exc(limit=8)
            finally:
                if result.verdict not in (Verdict.ERROR, Verdict.UNSUPPORTED):
                    broke = _transport_broke(ctx, options)  # after the case, before it drops its connections
                    if broke:           # a verdict resting on a cut or stalled connection says nothing
                        result.observations["verdict_before_transport_check"] = result.verdict.value
                        result.verdict, result.reason = Verdict.ERROR, broke
                        result.violated = result.expected = result.actual = None
                ctx.close()
    except TimeoutError as exc:
        result.verdict, result.reason = Verdict.ERROR, str(exc)
    except Exception as exc:
        result.verdict, result.reason = Verdict.ERROR, f"could not set up the case: {exc}"
    if ctx is not None:
        _unless_the_broker_died(result, ctx, broker, options)
    result.duration_s = round(time.monotonic() - t0, 3)
    if ctx is not None:
        result.observations.update(ctx.observations)
        result.transcripts = ctx.transcripts_json()
        result.ladders = ctx.ladders()
        ident = ctx.broker_identity()
        result.broker_product, result.broker_version = ident
    if result.verdict is Verdict.ERROR:
        with contextlib.suppress(Exception):
            if not broker.alive():
                result.broker_log_tail = broker.log_tail(40)
    return result


def _transport_broke(ctx, options: RunOptions) -> str | None:
    from .brokers.liveness import cut_or_stalled
    return cut_or_stalled([c.peer for c in ctx.connections], options.frame_timeout)


def _unless_the_broker_died(result: CaseResult, ctx, broker, options: RunOptions) -> None:
    """A connection lost because the broker died is `error`, never a verdict (brokers/liveness.py decides);
    the verdict the case would have given is kept in the observations."""
    from .brokers.liveness import died_during
    try:
        died = died_during([c.peer for c in ctx.connections], broker, options.frame_timeout, result.verdict.value)
    except Exception:              # run_case never raises; the case's own verdict stands
        return
    if died is None:
        return
    if result.verdict is Verdict.ERROR:
        result.reason = f"{died} ({result.reason})"
        return
    result.observations["verdict_before_broker_died"] = f"{result.verdict.value}: {result.reason}"
    result.violated = result.expected = result.actual = None
    result.verdict, result.reason = Verdict.ERROR, died


def _is_peer_error(exc: BaseException) -> bool:
    try:
        from .peer import PeerError
    except ImportError:
        return False
    return isinstance(exc, PeerError)
