"""Real run directories made quickly: cases run against reference brokers (optionally faulted).

The suite's own tests of the history, report, diff and bisect use these: the records, transcripts and
ladders are exactly what `amqp-conformance run` writes, from the same pipeline (`conformance.run`), without a
managed broker: the reference brokers run in this process, and so do their cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .broker import BrokerConfig, Faults
from .handle import ReferenceBrokerHandle


@dataclass
class ReferenceBuild:
    name: str                     # broker name in the records
    version: str                  # broker version in the records
    faults: Faults = field(default_factory=Faults)
    config: BrokerConfig | None = None   # how it behaves where the spec leaves it open (its version is the build's)


def write_reference_run(reports_dir: Path, builds: list[ReferenceBuild], case_ids: list[str],
                        run_id: str | None = None, options=None) -> Path:
    """Run `case_ids` against each build into one new run directory (in this process; `options`: the
    RunOptions, default ones unless given); return its path."""
    from dataclasses import replace

    from ..run.engine import Plan, execute
    from ..options import RunOptions
    from ..run.selection import select_cases
    handles = []
    try:
        for build in builds:
            config = replace(build.config or BrokerConfig(), version=build.version)
            handle = ReferenceBrokerHandle(faults=build.faults, config=config, name=build.name)
            handle.version = build.version
            handles.append(handle)
        options = replace(options or RunOptions(), workers=0, reports_dir=Path(reports_dir))
        outcome = execute(Plan(select_cases(case_ids), handles, options, run_id=run_id,
                               selection={"cases": case_ids, "reference": True}))
    finally:
        for handle in handles:
            handle.stop()
    return outcome.run.path
