"""`amqp-conformance diff A B`: regressions and fixes between two runs or two versions of a broker.

A side is a run directory (or the id of one under reports/runs/), read directly; or `broker@version`, whose
latest verdict per case comes from the history (Spark). Cases are matched by (case, broker) when both sides
share brokers, by case alone when each side is one broker (comparing two versions or two products). Each
change is classified by `conformance.results.change_kind` (the report and `bisect` use the same table), and a
record with a verdict the vocabulary does not know is refused (`BadResults`, exit 12) as every reader refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadResults, UsageError
from ..results import CHANGED, FIX, REGRESSION, RESULTS_FILE, change_kind, read_records

_COLUMN = re.compile(r"^(?P<broker>[^@/\s]+)@(?P<version>[^@/\s]+)$")


@dataclass
class Side:
    label: str
    verdicts: dict[tuple[str, str], tuple[str, str]]   # (case_id, broker) -> (verdict, reason)

    @property
    def brokers(self) -> set[str]:
        return {b for _, b in self.verdicts}


@dataclass
class DiffResult:
    a: str
    b: str
    rows: list[dict] = field(default_factory=list)    # kind, case_id, broker, before, after, reason
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[dict]:
        return [r for r in self.rows if r["kind"] == kind]

    @property
    def regressed(self) -> bool:
        return bool(self.of_kind(REGRESSION))


def is_column(spec: str) -> bool:
    return bool(_COLUMN.match(spec)) and not Path(spec).exists()


def side_from_run(spec: str, reports_dir: Path) -> Side:
    path = Path(spec)
    if not path.exists() and (reports_dir / "runs" / spec).exists():
        path = reports_dir / "runs" / spec
    if not path.exists():
        raise UsageError(f"{spec!r} is neither a run directory, a run id under {reports_dir}/runs, nor "
                         "broker@version; see `amqp-conformance diff --help`")
    if not (path / RESULTS_FILE).exists():
        raise BadResults(f"{path} has no {RESULTS_FILE}; pass a run directory (reports/runs/<id>)")
    verdicts: dict[tuple[str, str], tuple[str, str]] = {}
    for record in sorted(read_records(path / RESULTS_FILE), key=lambda r: r.get("started_at") or ""):
        verdicts[(record["case_id"], record["broker"])] = (record["verdict"], record.get("reason") or "")
    return Side(str(path), verdicts)


def side_from_history(spec: str, spark, history) -> Side:
    from pyspark.sql import functions as F
    m = _COLUMN.match(spec)
    broker, version = m["broker"], m["version"]
    rows = (history.records(spark).where((F.col("broker") == broker) & (F.col("broker_version") == version))
            .groupBy("case_id").agg(F.max_by(F.struct("verdict", "reason"), "started_at").alias("last")).collect())
    if not rows:
        raise BadResults(f"the history has no records of {spec}; ingest its runs first (amqp-conformance report "
                         "<run dirs>) or check the name with the report's columns")
    return Side(spec, {(r["case_id"], broker): (r["last"]["verdict"], r["last"]["reason"] or "") for r in rows})


def compare(a: Side, b: Side) -> DiffResult:
    result = DiffResult(a.label, b.label)
    by_case = not (a.brokers & b.brokers) and len(a.brokers) == 1 and len(b.brokers) == 1

    def keyed(side: Side) -> dict:
        return {(case if by_case else (case, broker)): v for (case, broker), v in side.verdicts.items()}

    ka, kb = keyed(a), keyed(b)
    for key in sorted(set(ka) | set(kb), key=str):
        label = key if isinstance(key, str) else f"{key[0]} on {key[1]}"
        if key not in kb:
            result.only_a.append(label)
            continue
        if key not in ka:
            result.only_b.append(label)
            continue
        (before, _), (after, reason) = ka[key], kb[key]
        if before != after:
            case_id, broker = (key, next(iter(b.brokers))) if isinstance(key, str) else key
            result.rows.append({"kind": change_kind(before, after), "case_id": case_id, "broker": broker,
                                "before": before, "after": after, "reason": reason})
    return result


def format_diff(result: DiffResult) -> str:
    lines = [f"diff {result.a} -> {result.b}"]
    for kind, title in ((REGRESSION, "regressions"), (FIX, "fixes"), (CHANGED, "other changes")):
        rows = result.of_kind(kind)
        lines.append(f"\n{title} ({len(rows)})")
        for r in rows:
            lines.append(f"  {r['case_id']:<10} {r['broker']:<16} {r['before']:>13} -> {r['after']:<13} "
                         f"{r['reason'][:90]}")
    if result.only_a or result.only_b:
        lines.append(f"\nonly in A: {len(result.only_a)}   only in B: {len(result.only_b)}")
    verdict = "REGRESSED" if result.regressed else "no regression"
    lines.append(f"\n{verdict}: {len(result.of_kind(REGRESSION))} regression(s), "
                 f"{len(result.of_kind(FIX))} fix(es), {len(result.of_kind(CHANGED))} other change(s)")
    return "\n".join(lines)
