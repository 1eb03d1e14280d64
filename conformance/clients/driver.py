"""One driver process: a client library run through its public API, commanded in JSON lines.

`Driver(argv, env, cwd)` starts the program (its own process group), a reader thread queues every answer
line from its stdout, and its stderr goes to a log file (`log_tail()`). `request(op, **args)` writes one
command and returns a `Pending`; `Pending.result(timeout)` waits (bounded) for the answer with that id.
A driver that does not answer within the bound raises `DriverHung`, one whose process ended raises
`DriverCrashed` (both `DriverError`): the case that saw it is `error`, the subject starts a fresh driver for
the next one. `kill()` ends the process group (SIGKILL after a bounded SIGTERM wait).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time


class DriverError(Exception):
    """The driver (not the library's behaviour) failed: no verdict can rest on it."""


class DriverHung(DriverError):
    pass


class DriverCrashed(DriverError):
    pass


class Pending:
    def __init__(self, driver: "Driver", rid: int, op: str):
        self.driver, self.id, self.op = driver, rid, op
        self._answer: dict | None = None

    def done(self) -> bool:
        if self._answer is None:
            self._answer = self.driver._take(self.id, 0)
        return self._answer is not None

    def result(self, timeout: float) -> dict:
        """The driver's answer (a dict with `ok`, and `error` or what the application saw)."""
        if self._answer is None:
            self._answer = self.driver._take(self.id, timeout)
        if self._answer is None:
            if not self.driver.alive():
                raise DriverCrashed(f"the {self.driver.name} driver exited (code {self.driver.returncode}) during "
                                    f"`{self.op}`; its log: {self.driver.log_tail(3)}")
            raise DriverHung(f"the {self.driver.name} driver did not answer `{self.op}` within {timeout:.1f} s")
        return self._answer


class Driver:
    def __init__(self, argv: list[str], *, name: str, env: dict | None = None, cwd: str | None = None,
                 ready_timeout: float = 30.0):
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"amqp-conformance-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=env, cwd=cwd, text=True, bufsize=1, start_new_session=True)
        self._answers: dict[int, dict] = {}
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._lines: queue.Queue = queue.Queue()
        self.hello: dict = {}
        threading.Thread(target=self._read, name=f"driver-{name}", daemon=True).start()
        hello = Pending(self, 0, "start").result(ready_timeout)
        self.hello = hello

    @property
    def returncode(self):
        return self.proc.poll()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self._answers[int(answer.get("id", -1))] = answer
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _take(self, rid: int, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or (not self.alive() and rid not in self._answers):
                    return self._answers.pop(rid, None)
                self._cond.wait(min(left, 0.2))
            return self._answers.pop(rid)

    def request(self, op: str, **args) -> Pending:
        rid = next(self._ids)
        try:
            self.proc.stdin.write(json.dumps({"id": rid, "op": op, **args}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise DriverCrashed(f"the {self.name} driver is gone (code {self.returncode}); its log: "
                                f"{self.log_tail(3)}") from None
        return Pending(self, rid, op)

    def call(self, op: str, timeout: float, **args) -> dict:
        return self.request(op, **args).result(timeout)

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            with open(self.log.name, encoding="utf-8", errors="replace") as fh:
                return "".join(fh.readlines()[-lines:]).strip()
        return ""

    def kill(self, grace: float = 2.0) -> None:
        if self.alive():
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.write(json.dumps({"id": 0, "op": "exit"}) + "\n")
                self.proc.stdin.flush()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=min(grace, 0.5))
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
