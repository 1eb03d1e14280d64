"""Builds to run one case on, for bisect and the commit search: a build's description (`Build`, from a
builds file or a `--build` value), starting it (a command build's process, `conformance.brokers.command`;
managed brokers and URLs need nothing; a client library's release) and running one case on it through the
run pipeline as an ordinary run directory, so the history learns it (`run_case_on`). The search over builds
is `conformance.history.bisect`'s.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConformanceError, UsageError


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
    from .engine import Plan, execute
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
