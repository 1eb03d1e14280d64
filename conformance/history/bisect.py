"""Bisecting broker builds: the first build of an ordered series where a case stops passing.

A build is a managed broker (`rabbitmq-4.0`), a URL, or a command that starts a broker (with `{port}` in it
and a URL to reach it). `bisect` looks up every build's verdict in the history first and runs the case only
on the builds the search needs and the history lacks; each run is written as an ordinary run directory, so
the history learns it. `run_one` is the `git bisect run` mode's step: 0 good, 1 bad, 125 cannot test.

Sockets and processes live here (starting command builds); the search itself is `search()`, pure.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import ConformanceError, UsageError

GOOD, BAD, SKIP = "good", "bad", "skip"
BISECT_GOOD, BISECT_BAD, BISECT_SKIP = 0, 1, 125


@dataclass(frozen=True)
class Build:
    """One point of the series: `label` names it in results and the history."""

    label: str
    broker: str | None = None        # managed broker name
    url: str | None = None           # amqp://... ({port} is filled in for command builds)
    command: str | None = None       # starts the broker; {port} is filled in
    profile: str | None = None
    ready_timeout: float = 30.0


def load_builds(path: Path) -> list[Build]:
    """Builds from a TOML file: [[build]] tables with label and broker, url, or command + url."""
    try:
        data = tomllib.loads(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no builds file at {path}; pass a TOML file with [[build]] entries") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc}); see docs/history.md for the format") from None
    builds = []
    for i, row in enumerate(data.get("build", [])):
        unknown = set(row) - {"label", "broker", "url", "command", "profile", "ready_timeout"}
        if unknown:
            raise UsageError(f"{path}: build {i + 1} has unknown keys {sorted(unknown)}")
        builds.append(_checked(Build(label=row.get("label") or row.get("broker") or "",
                                     broker=row.get("broker"), url=row.get("url"), command=row.get("command"),
                                     profile=row.get("profile"), ready_timeout=float(row.get("ready_timeout", 30)))))
    if len(builds) < 1:
        raise UsageError(f"{path} lists no [[build]] entries")
    return builds


def build_from_arg(value: str) -> Build:
    """`--build` value: a managed broker name or a URL (label = the value)."""
    from .. import brokers
    if "://" in value:
        return _checked(Build(label=value.split("@")[-1], url=value))
    brokers.resolve(value)       # UsageError for an unknown name
    return Build(label=value, broker=value)


def _checked(build: Build) -> Build:
    if not build.label:
        raise UsageError("every build needs a label (or a broker name)")
    if sum(x is not None for x in (build.broker, build.command)) > 1 or not (build.broker or build.url):
        raise UsageError(f"build {build.label}: give either broker = NAME, url = URL, or command = ... with url")
    return build


# -- the search (pure) ---------------------------------------------------------------------------------------

@dataclass
class SearchStep:
    index: int
    outcome: str      # good / bad / skip
    source: str       # history / run


@dataclass
class SearchResult:
    first_bad: int | None
    steps: list[SearchStep] = field(default_factory=list)
    note: str = ""


def search(count: int, probe: Callable[[int], tuple[str, str]]) -> SearchResult:
    """The first index whose outcome is bad, assuming good...good bad...bad; `probe(i)` returns
    (outcome, source). Skipped points are stepped around, as `git bisect skip` does."""
    result = SearchResult(first_bad=None)
    seen: dict[int, str] = {}

    def look(i: int) -> str:
        if i not in seen:
            outcome, source = probe(i)
            seen[i] = outcome
            result.steps.append(SearchStep(i, outcome, source))
        return seen[i]

    first, last = 0, count - 1
    if look(first) == BAD:
        result.first_bad, result.note = first, "the first build already fails; nothing before it to compare"
        return result
    if look(last) != BAD:
        result.note = "the last build does not fail the case" if seen[last] == GOOD else \
            "the last build could not be tested"
        return result
    good, bad = first, last
    while bad - good > 1:
        mid = (good + bad) // 2
        candidates = sorted(range(good + 1, bad), key=lambda i: (abs(i - mid), i))
        outcome = SKIP
        for i in candidates:
            outcome = look(i)
            if outcome != SKIP:
                mid = i
                break
        if outcome == SKIP:
            result.note = f"builds {good + 2}..{bad} could not be tested; the first bad one is among them"
            break
        if outcome == GOOD:
            good = mid
        else:
            bad = mid
    result.first_bad = bad
    return result


def outcome_of(verdict: str) -> str:
    if verdict in ("pass", "informational"):
        return GOOD
    if verdict in ("fail", "non-strict"):
        return BAD
    return SKIP


# -- running a case on a build ----------------------------------------------------------------------------------

class StartedBuild:
    """A running broker of a build: a managed node, a URL, or a process started by the build's command."""

    def __init__(self, build: Build):
        self.build = build
        self.process: subprocess.Popen | None = None
        self.handle = None

    def __enter__(self):
        from .. import brokers
        build = self.build
        if build.broker:
            spec = brokers.resolve(build.broker, build.profile)
            self.handle = brokers.start(spec)
            return self
        url = build.url
        if build.command:
            from ..brokers.managed import free_port
            port = free_port()
            url = url.replace("{port}", str(port))
            self.process = subprocess.Popen(shlex.split(build.command.replace("{port}", str(port))),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                            start_new_session=True)
            self._wait_ready(url, build.ready_timeout)
        spec = brokers.BrokerSpec(build.label, url, build.profile or "generic")
        self.handle = brokers.start(spec)
        return self

    def _wait_ready(self, url: str, timeout: float) -> None:
        from ..peer import parse_url
        address = parse_url(url)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                err = (self.process.stderr.read() or b"").decode(errors="replace").strip().splitlines()
                raise ConformanceError(f"build {self.build.label}: its command exited with "
                                       f"{self.process.returncode} ({err[-1] if err else 'no output'})", exit_code=7)
            try:
                with socket.create_connection((address.host, address.port), timeout=0.5):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise ConformanceError(f"build {self.build.label}: nothing listens on {address.host}:"
                                           f"{address.port} after {timeout:.0f} s", exit_code=7) from None
                time.sleep(0.1)  # bounded-wait-ok: polling a starting process's port with a deadline

    def __exit__(self, *exc):
        if self.handle is not None and getattr(self.handle, "managed", None) is not None:
            self.handle.managed.stop()
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def run_case_on(build: Build, case_id: str, reports_dir: Path, options=None) -> dict:
    """Run one case on one build; the result is recorded in a new run directory and returned as a record.
    A build that cannot be started gives an `error` record (bisect: skip)."""
    from ..cases import select
    from ..results import RunDirectory
    from ..runner import RunOptions, run_case
    from ..verdict import CaseResult, Verdict
    spec = select([case_id])
    if len(spec) != 1:
        raise UsageError(f"{case_id!r} names {len(spec)} cases; bisect one case id (e.g. 2.6.8/2)")
    spec = spec[0]
    run = RunDirectory.create(reports_dir, brokers={build.label: {"url": None, "profile": build.profile}},
                              options={"cases": [case_id], "bisect": True})
    try:
        with StartedBuild(build) as started:
            result = run_case(spec, started.handle, options or RunOptions())
            run.update_meta(brokers={build.label: {"product": started.handle.product,
                                                   "version": started.handle.version}})
    except ConformanceError as exc:
        result = CaseResult(spec.id, spec.title, spec.section, spec.level, list(spec.requirements), Verdict.ERROR,
                            f"the build could not be tested: {exc.message}", build.label)
    result.broker = build.label
    run.record(result)
    run.finish()
    return {"run_id": run.run_id, **result.to_record()}
