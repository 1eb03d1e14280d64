"""Real run directories made quickly: cases run against reference brokers (optionally faulted).

The suite's own tests of the history, report, diff and bisect use these: the records, transcripts and
ladders are exactly what `amqp-conformance run` writes, from the same runner, without a managed broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .engine import BrokerConfig, Faults
from .handle import ReferenceBrokerHandle


@dataclass
class ReferenceBuild:
    name: str                     # broker name in the records
    version: str                  # broker version in the records
    faults: Faults = field(default_factory=Faults)


def write_reference_run(reports_dir: Path, builds: list[ReferenceBuild], case_ids: list[str],
                        run_id: str | None = None, quiet_period: float = 0.2) -> Path:
    """Run `case_ids` against each build into one new run directory; return its path."""
    from ..cases import select
    from ..results import RunDirectory
    from ..runner import RunOptions, run_case
    cases = select(case_ids)
    run = RunDirectory.create(Path(reports_dir), run_id=run_id,
                              brokers={b.name: {"url": None, "profile": "reference"} for b in builds},
                              options={"cases": case_ids, "reference": True})
    options = RunOptions(quiet_period=quiet_period, frame_timeout=5.0)
    for build in builds:
        handle = ReferenceBrokerHandle(faults=build.faults, config=BrokerConfig(version=build.version),
                                       name=build.name)
        handle.version = build.version
        try:
            for spec in cases:
                run.record(run_case(spec, handle, options))
        finally:
            handle.stop()
        run.update_meta(brokers={build.name: {"product": handle.product, "version": build.version}})
    run.finish()
    return run.path
