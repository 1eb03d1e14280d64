"""A broker your own build starts: `run --start CMD --url URL` (a broker team's CI runs its fresh build this way),
and a command build of `bisect` / `bisect-run`.

This module owns that process: the command (split like a shell line, `{port}` filled in with a free loopback
port, also in the URL), started in a session of its own, waited for until the URL's port accepts connections
(bounded; the command exiting first is one line with its last line of output), and stopped with its whole process
group (SIGTERM, then SIGKILL after 10 s) however the run ends. The run then treats it as a broker by URL.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time

from ..errors import BrokerStartFailed, UsageError


class StartedCommand:
    """`with StartedCommand(cmd, url, label=...) as started:` -> `started.address` is where it listens (the URL
    parsed once, its {port} filled in), `started.url` that URL."""

    def __init__(self, command: str, url: str, *, label: str = "broker", ready_timeout: float = 60.0):
        if "{port}" in url and "{port}" not in command:
            raise UsageError("--url has {port} but --start does not: put {port} where your broker takes its port")
        try:
            shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--start {command!r} does not parse as a command line ({exc})") from None
        self.command, self.url_template, self.label, self.ready_timeout = command, url, label, ready_timeout
        self.process: subprocess.Popen | None = None
        self._output = None
        self.url = url
        self.address = None

    def __enter__(self) -> "StartedCommand":
        from ..peer import parse_url
        from .managed import free_port, popen
        port = free_port()
        self.url = self.url_template.replace("{port}", str(port))
        address = self.address = parse_url(self.url)      # UsageError for a malformed URL
        argv = shlex.split(self.command.replace("{port}", str(port)))
        try:
            self._output = tempfile.TemporaryFile()       # a file, not a pipe: a chatty broker never blocks on it
            self.process = popen(argv, stdout=self._output, stderr=subprocess.STDOUT,       # forked under SPAWN_LOCK
                                 start_new_session=True)
        except OSError as exc:
            raise BrokerStartFailed(f"{self.label}: its command could not run {argv[0]!r} ({exc.strerror}); "
                                    "check the command") from None
        try:
            self._wait_ready(address.host, address.port)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, host: str, port: int) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self.process.poll() is not None:
                self._output.seek(0)
                err = self._output.read().decode(errors="replace").strip().splitlines()
                raise BrokerStartFailed(f"{self.label}: its command exited with {self.process.returncode} before "
                                        f"listening ({err[-1] if err else 'no output'})")
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise BrokerStartFailed(f"{self.label}: nothing listens on {host}:{port} {self.ready_timeout:g} s "
                                            "after its command started; check the URL, or give it longer "
                                            "(--ready-timeout)") from None
                time.sleep(0.1)  # bounded-wait-ok: polling a starting process's port with a deadline

    def stop(self) -> None:
        process, self.process = self.process, None
        if self._output is not None:
            self._output.close()
            self._output = None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def __exit__(self, *exc) -> None:
        self.stop()
