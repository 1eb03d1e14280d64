"""How a run stops on a signal: Ctrl-C, SIGTERM and SIGHUP all end it the one way Ctrl-C always has.

This module owns the signal handling of a run's controller and of its pytest-xdist workers; nothing else in
the pipeline installs a handler. `Stop` is what the controller holds around a whole run (the brokers' start,
the cases, the brokers' stop): the first SIGINT, SIGTERM or SIGHUP raises KeyboardInterrupt in the main thread,
which pytest answers by ending the session (`RunHooks.pytest_keyboard_interrupt`) and pytest-xdist by shutting
its workers down; only once pytest has returned, so once no case runs any more, are the brokers stopped. So
a run stopped by `kill PID`, a cancelled CI job or a closed terminal records what finished, is marked
stopped with the signal's name in run.json, records no broker death of its own making (the old behaviour:
the nodes were stopped from the handler while workers still ran cases against them, and a worker's
rabbitmqctl started an epmd again that nobody stopped), and exits 128 + the signal's number (SIGINT 130,
SIGTERM 143, SIGHUP 129); one that came after every case had finished leaves a complete run (the engine checks
results.jsonl). Later signals, while the run winds down and its nodes stop, are noted on stderr and otherwise
ignored (SIGKILL remains, and leaves the nodes for `brokers down`). SIGINT is taken even when the
run was started with it ignored (a script's background job), as `observe` does, like tcpdump.

A worker (`in_worker`) turns SIGTERM and SIGHUP into KeyboardInterrupt too, so a signal sent to the whole
process group (`timeout`, a CI runner) ends each worker as Ctrl-C in a terminal does.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal: its exit code (128 + the signal's number) and the line `run` prints."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum
        self.message = message


def name(signum: int | None) -> str:
    if signum is None or signum == signal.SIGINT:
        return "Ctrl-C"
    return signal.Signals(signum).name


class Stop:
    """The controller's handlers for the span of a run (a context manager; the previous handlers come back
    at its end). `signum`: the signal that stopped the run, None while none came."""

    def __init__(self, say=None):
        self.signum: int | None = None
        self._armed = False
        self._previous: dict = {}
        self._say = say or (lambda text: print(text, file=sys.stderr, flush=True))

    def __enter__(self) -> "Stop":
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _handle(self, signum, _frame) -> None:
        if self.signum is None:
            self.signum = signum
            if self._armed:
                raise KeyboardInterrupt
            return                      # between the armed steps: taken when the next one begins
        self._say(f"{name(signum)} again: the run is already stopping (its brokers are being stopped); "
                  "SIGKILL would leave them running")

    @contextlib.contextmanager
    def armed(self):
        """A step a signal may cut short (starting the brokers, pytest running the cases): the first signal
        raises KeyboardInterrupt in it, or at its start when it came before. Outside, signals are only noted
        (writing run.json, stopping the brokers: never cut in the middle)."""
        if self.signum is not None:
            raise KeyboardInterrupt
        self._armed = True
        try:
            yield self
        finally:
            self._armed = False

    @property
    def reason(self) -> str:
        """What run.json's `stopped` says."""
        return "interrupted (Ctrl-C)" if self.signum in (None, signal.SIGINT) else f"stopped by {name(self.signum)}"

    def error(self, records: int | None = None, run_path=None) -> Interrupted:
        """The Interrupted to raise: after the cases began (what was kept, where), or before (nothing ran)."""
        signum = self.signum if self.signum is not None else signal.SIGINT
        how = "interrupted" if signum == signal.SIGINT else f"stopped by {name(signum)}"
        if run_path is None:
            return Interrupted(signum, f"{how} while the brokers started: no case ran, nothing was written; the "
                                       "nodes started meanwhile were stopped")
        return Interrupted(signum, f"{how}; the {records} case(s) that finished are kept in {run_path}, which is "
                                   "marked stopped in run.json; the run's brokers were stopped")


def in_worker() -> None:
    """A pytest-xdist worker: SIGTERM and SIGHUP end it as SIGINT does (KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        if sig != signal.SIGINT:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, signal.default_int_handler)
