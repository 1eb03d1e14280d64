"""Bisecting broker builds: the first build of an ordered series where a case's verdict changes (a
regression, or a fix).

A build is a managed broker (`rabbitmq-4.0`), a URL, or a command that starts a broker (with `{port}` in it
and a URL to reach it). `bisect` looks up every build's verdict in the history first and runs the case only
on the builds the search needs and the history lacks; each run goes through the run pipeline
(`conformance.run`) as an ordinary run directory, so the history learns it. `bisect-run` is the
`git bisect run` mode's step: 0 good, 1 bad, 125 cannot test.

Command builds are started by `conformance.brokers.command`; the search itself is `search()`, pure.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import ConformanceError, UsageError
from ..results import check_verdict, is_broken, is_untestable
from ..verdict import Verdict

GOOD, BAD, SKIP = "good", "bad", "skip"
# `git bisect run`'s exit codes (its protocol, not the suite's table): good, bad, cannot test, abort (> 127)
BISECT_GOOD, BISECT_BAD, BISECT_SKIP, BISECT_ABORT = 0, 1, 125, 128


@dataclass(frozen=True)
class Build:
    """One point of the series: `label` names it in results and the history."""

    label: str
    broker: str | None = None        # managed broker name
    url: str | None = None           # amqp://... ({port} is filled in for command builds)
    command: str | None = None       # starts the broker; {port} is filled in
    profile: str | None = None
    ready_timeout: float = 30.0
    client: str | None = None        # a client library's label (the suite plays the broker)


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


def _remembered(probe: Callable[[int], tuple[str, str]], seen: dict[int, str], steps: list,
                step) -> Callable[[int], str]:
    """`probe` asked once per index: the outcome is remembered in `seen` and each first look is appended to
    `steps` as `step(index, outcome, source)`."""

    def look(i: int) -> str:
        if i not in seen:
            outcome, source = probe(i)
            seen[i] = outcome
            steps.append(step(i, outcome, source))
        return seen[i]
    return look


def search(count: int, probe: Callable[[int], tuple[str, str]]) -> SearchResult:
    """The first index whose outcome is bad, assuming good...good bad...bad; `probe(i)` returns
    (outcome, source). Skipped points are stepped around, as `git bisect skip` does."""
    result = SearchResult(first_bad=None)
    seen: dict[int, str] = {}
    look = _remembered(probe, seen, result.steps, SearchStep)

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


RAN = "run"         # a step's source when the case ran on a build that started (not: "history", "start", "build")


@dataclass
class ChangeStep:
    index: int
    verdict: str
    source: str       # history / run / start (could not be started) / build (i40: could not be built)


@dataclass
class ChangeResult:
    """Where a case's verdict first differs from the oldest testable build's: `changed` is the index of the
    first build with another verdict, `before` the last one probed with the old verdict (None: no change).
    `errors_counted`: an end of the series gave `error` in a run, so errors took part as a verdict."""

    changed: int | None = None
    before: int | None = None
    verdict_before: str = ""
    verdict_after: str = ""
    steps: list[ChangeStep] = field(default_factory=list)
    note: str = ""
    errors_counted: bool = False

    def counted(self, step: ChangeStep) -> bool:
        """Whether a step's verdict took part in the search (else it was stepped around)."""
        return not is_untestable(step.verdict) or (
            self.errors_counted and step.verdict == Verdict.ERROR and step.source == RAN)


def first_change(count: int, verdict_of: Callable[[int], tuple[str, str]]) -> ChangeResult:
    """The first build whose verdict differs from the oldest testable build's, assuming one change point
    (old...old new...new). Builds where the case cannot be judged (error, unsupported) are stepped around;
    the oldest and newest testable builds anchor the search, then `search` halves the range between them.

    Except that an `error` at an end of the series, from a run on a build that started (the case broke there,
    e.g. the broker stopped answering; `source` "run"), is a verdict of its own: "when did this start (or stop)
    erroring" gets an answer, the first build that gives it, the errors in between counting with it (a change
    to or from error: `results.change_kind` calls it a change). Builds that could not be started or built, and
    `unsupported`, are stepped around in any case."""
    result = ChangeResult()
    seen: dict[int, str] = {}
    look = _remembered(verdict_of, seen, result.steps, ChangeStep)

    def ran_error(i: int) -> bool:
        return look(i) == Verdict.ERROR and any(s.index == i and s.source == RAN for s in result.steps)

    result.errors_counted = count > 1 and (ran_error(0) or ran_error(count - 1))

    def counts(i: int) -> bool:
        return not is_untestable(look(i)) or (result.errors_counted and ran_error(i))

    first = next((i for i in range(count) if counts(i)), None)
    if first is None:
        result.note = "no build could be tested"
        return result
    last = next((i for i in range(count - 1, first, -1) if counts(i)), None)
    reference = seen[first]
    if last is None or seen[last] == reference:
        result.note = (f"the newest testable build still gives {reference}" if last is not None else
                       "only one build could be tested")
        return result

    def probe(k: int) -> tuple[str, str]:
        verdict = look(first + k)
        return (SKIP if not counts(first + k) else GOOD if verdict == reference else BAD), ""

    found = search(last - first + 1, probe)
    changed = first + found.first_bad
    result.changed, result.note = changed, found.note
    result.before = max(i for i, v in seen.items() if i < changed and v == reference and counts(i))
    result.verdict_before, result.verdict_after = reference, seen[changed]
    return result


def outcome_of(verdict: str) -> str:
    """`git bisect run`'s view of a verdict: bad (a requirement broken), skip (untestable), else good; an
    unknown verdict is BadResults (exit 12)."""
    check_verdict(verdict, "the build's record")
    return BAD if is_broken(verdict) else SKIP if is_untestable(verdict) else GOOD


# -- running a case on a build ----------------------------------------------------------------------------------

class StartedBuild:
    """What a build needs before the run pipeline can take it: a process started by the build's command and
    listening (`conformance.brokers.command`; managed brokers and URLs need nothing). `broker` is what the run
    is given: a BrokerSpec."""

    def __init__(self, build: Build):
        self.build = build
        self.command = None
        self.broker = None

    def __enter__(self):
        from .. import brokers
        build = self.build
        if build.client:
            from ..clients import ClientSubject, resolve as resolve_client
            self.broker = ClientSubject(resolve_client(build.client))
            self.broker.check()
            return self
        if build.broker:
            self.broker = brokers.resolve(build.broker, build.profile)
            return self
        if build.command:
            from ..brokers.command import StartedCommand
            self.command = StartedCommand(build.command, build.url, label=f"build {build.label}",
                                          ready_timeout=build.ready_timeout).__enter__()
            address = self.command.address
        else:
            from ..peer import parse_url
            address = parse_url(build.url)
        self.broker = brokers.BrokerSpec(build.label, address, build.profile or "generic")
        return self

    def __exit__(self, *exc):
        if self.build.client and self.broker is not None:
            self.broker.discard()
        if self.command is not None:
            self.command.stop()


def run_case_on(build: Build, case, reports_dir: Path, options=None, console=None, meta: dict | None = None) -> dict:
    """Run one case (a CaseSpec) on one build through the run pipeline (an ordinary run directory, which the
    history learns; `meta`: more run.json fields, e.g. the commit) and return its record. A build that cannot
    be started gives an `error` record without a run directory (`run_id` None); bisect skips it."""
    from ..run.engine import Plan, execute
    from ..options import RunOptions
    from ..results import CaseResult
    from ..verdict import Verdict
    options = options or RunOptions(workers=0, reports_dir=reports_dir)
    try:
        with StartedBuild(build) as started:
            outcome = execute(Plan([case], [started.broker], options, meta=meta or {"kind": "bisect"},
                                   selection={"cases": [case.id]}), console)
    except ConformanceError as exc:
        result = CaseResult(case.id, case.title, case.section, case.level, list(case.requirements), Verdict.ERROR,
                            f"the build could not be tested: {exc.message}", build.label)
        return {"run_id": None, **result.to_record()}
    [record] = outcome.records
    return {"run_id": outcome.run.run_id, **record}
