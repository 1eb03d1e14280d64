"""The results history: run directories ingested into Parquet with Spark, atomically and without duplicates.

Layout of a history directory (default `reports/history/`):

    batches/<batch-id>/runs.json          metadata of the runs this ingest added (run.json of each)
    batches/<batch-id>/records/broker=<name>/part-*.parquet   one row per case record
    batches/<batch-id>/cases/part-0.parquet   section, level, requirement_ids once per (run, case), joined on read
    batches/<batch-id>/ladders.jsonl      ladder diagrams of those records, where the run kept transcripts
    .staging-<batch-id>/                  an ingest in progress; renamed into batches/ in one step when done

An ingest either lands whole (one directory rename) or not at all, so an interrupted or failed ingest leaves
nothing half-written in the history. A run is identified by the `run_id` of its run.json: ingesting it again
skips it. Lines of results.jsonl that do not parse (a run cut off mid-write, a corrupted file) stop the ingest
with a one-line BadResults error naming the file and line, and so does a run that finished (`finished_at`)
with fewer records than it scheduled (`scheduled`): its results.jsonl was cut short (`check_run_dirs`). A run
that never finished (interrupted, killed) is ingested as it is; runs.json keeps its `finished_at: null`, the
count of its records (`records`) and what it scheduled, so the report can show it as unfinished.
The records table itself (schema, JSON lines -> Parquet, its summary) is written by conformance.history.records;
this module owns the batches: ingest, deduplication, compaction.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from filelock import FileLock, Timeout

from ..errors import BadResults
from ..results import RESULTS_FILE, check_lines, count_records, read_records, transcript_stem
from . import summary as _summary
from .records import (CASE_FACTS, RECORD_COLUMNS, RECORD_SCHEMA, STORED_SCHEMA, WRITTEN_COLUMNS,  # noqa: F401
                      read_records_of, write_records, write_summary, writer)

# Compaction: a size tier (digits of the record count) holding this many batches is merged into one.
COMPACT_FANIN = 10
COMPACT_SHUFFLE_BELOW = 2_000_000


def _cases_arrow_schema():
    import pyarrow as pa
    return pa.schema([(name, pa.string()) for name in ("run_id", "case_id", *CASE_FACTS)])


@dataclass
class IngestResult:
    batch_id: str | None
    added_runs: list[str] = field(default_factory=list)
    skipped_runs: list[str] = field(default_factory=list)
    records: int = 0


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Run directories named by `paths`: a run directory itself, or a directory holding runs (reports/,
    reports/runs/). A path that holds none is a BadResults error."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise BadResults(f"{path} does not exist; pass run directories (reports/runs/<id>) or reports/")
        if (path / "run.json").exists() or (path / "results.jsonl").exists():
            found.append(path)
            continue
        base = path / "runs" if (path / "runs").is_dir() else path
        children = sorted(p for p in base.iterdir() if p.is_dir() and (p / "run.json").exists()) \
            if base.is_dir() else []
        if not children:
            raise BadResults(f"{path} holds no run directories (no */run.json); pass reports/ or a run directory")
        found.extend(children)
    return found


def check_run_dirs(run_dirs: Iterable[Path]) -> None:
    """BadResults (exit 12) for the first run directory that cannot be ingested as it is (see the module
    docstring); reads only run.json and counts lines, so it is cheap enough to run before Spark starts. The
    ingest checks the same again, exactly and at no extra cost, from the record counts its summary gives per run."""
    for run_dir in run_dirs:
        _read_run_meta(Path(run_dir))


def _read_run_meta(run_dir: Path, count: bool = True) -> dict:
    """run.json of `run_dir`; BadResults if it is missing or corrupted, or (with `count`) if the run finished
    with fewer lines in results.jsonl than it scheduled."""
    meta_file = run_dir / "run.json"
    try:
        meta = json.loads(meta_file.read_text("utf-8"))
    except FileNotFoundError:
        raise BadResults(f"{run_dir} is not a run directory (no run.json); pass a directory under reports/runs/") \
            from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadResults(f"{meta_file} is corrupted ({getattr(exc, 'msg', exc)}); remove that run directory or "
                         "re-run it") from None
    if not isinstance(meta, dict) or not meta.get("run_id"):
        raise BadResults(f"{meta_file} has no run_id; it was not written by amqp-conformance run")
    results = run_dir / "results.jsonl"
    if not results.exists():
        raise BadResults(f"{run_dir} has no results.jsonl (the run finished no case); remove it or re-run it")
    scheduled = meta.get("scheduled")
    if count and meta.get("finished_at") and isinstance(scheduled, int):
        recorded = count_records(results)
        if recorded < scheduled:
            check_lines(results)           # a line cut in half is named first, by its number
            raise BadResults(f"{results} is incomplete: it holds {recorded} of the {scheduled} records its run "
                             "scheduled, yet the run finished (the file was cut); restore it or re-run "
                             "(nothing was ingested)")
    return meta


class History:
    """A history directory: ingest run directories, list what is in it, read it back as DataFrames."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.batches = self.root / "batches"

    # -- what is there ------------------------------------------------------------------------------------

    def batch_dirs(self) -> list[Path]:
        """The visible batches: whole (runs.json written), and not replaced by a compacted batch."""
        if not self.batches.is_dir():
            return []
        whole = sorted(p for p in self.batches.iterdir() if p.is_dir() and (p / "runs.json").exists())
        replaced = self._replaced(whole)
        return [p for p in whole if p.name not in replaced]

    @staticmethod
    def _replaced(batches: list[Path]) -> set[str]:
        out: set[str] = set()
        for batch in batches:
            path = batch / "compacted.json"
            if path.exists():
                out.update(json.loads(path.read_text("utf-8")))
        return out

    def runs(self) -> list[dict]:
        out = []
        for batch in self.batch_dirs():
            try:
                out.extend(json.loads((batch / "runs.json").read_text("utf-8")))
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise BadResults(f"{batch / 'runs.json'} is corrupted; remove the batch directory {batch} and "
                                 "ingest its runs again") from None
        return out

    def run_ids(self) -> set[str]:
        return {r["run_id"] for r in self.runs()}

    def records(self, spark):
        """All case records as one DataFrame (RECORD_COLUMNS)."""
        paths = [str(b / "records") for b in self.batch_dirs() if (b / "records").is_dir()]
        if not paths:
            raise BadResults(f"the history {self.root} is empty; ingest runs first (amqp-conformance report "
                             "reports/)")
        return read_records_of(spark, paths)

    def summary(self, spark) -> dict:
        """The summary tables of every batch (conformance.history.summary), each as one DataFrame; a batch
        ingested before summaries were kept is summarized from its records here."""
        batches = [b for b in self.batch_dirs() if (b / "records").is_dir()]
        if not batches:
            raise BadResults(f"the history {self.root} is empty; ingest runs first (amqp-conformance report "
                             "reports/)")
        kept = [b for b in batches if (b / "summary" / ".complete").exists()]
        tables = {name: spark.read.parquet(*[str(b / "summary" / name) for b in kept]) if kept else None
                  for name in _summary.TABLES}
        old = [str(b / "records") for b in batches if b not in kept]
        if old:
            computed = _summary.as_frames(spark, _summary.summarize(read_records_of(spark, old)))
            tables = {name: computed[name] if tables[name] is None else tables[name].unionByName(computed[name])
                      for name in _summary.TABLES}
        return tables

    def selfchecks(self) -> list[dict]:
        """The sensitivity matrices of ingested selfcheck runs (selfcheck.json with run_id and started_at)."""
        out = []
        for batch in self.batch_dirs():
            path = batch / "selfcheck.jsonl"
            if path.exists():
                out += [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        return out

    def ladders(self, wanted: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
        """Ladder diagrams for (run_id, case_id, broker) keys."""
        out = {}
        for batch in self.batch_dirs():
            path = batch / "ladders.jsonl"
            if not path.exists():
                continue
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    key = (row["run_id"], row["case_id"], row["broker"])
                    if key in wanted:
                        out[key] = row["ladder"]
        return out

    # -- ingest ---------------------------------------------------------------------------------------------

    def ingest(self, spark, paths: Iterable[Path], progress: Callable[[str], None] = lambda s: None,
               compact: bool = True) -> IngestResult:
        """Add the runs of `paths` as one batch; then, with `compact`, merge the batches of any size tier
        that has COMPACT_FANIN of them (so many small ingests leave a bounded number of batches and files)."""
        run_dirs = find_run_dirs(paths)

        def work():
            result = self._ingest_locked(spark, run_dirs, progress)
            if compact and result.batch_id:
                self._compact_locked(spark, False, progress)
            return result
        return self._locked(work)

    def _locked(self, work):
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            with FileLock(str(self.root / ".lock"), timeout=600):
                self._clean()
                return work()
        except Timeout:
            raise BadResults(f"another ingest holds {self.root / '.lock'}; wait for it or remove the lock file "
                             "if no ingest is running") from None

    def _clean(self) -> None:
        """Remove what an interrupted ingest or compaction left: staging directories (never visible to
        readers) and batches a compacted batch replaced (hidden already)."""
        for stale in self.root.glob(".staging-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if self.batches.is_dir():
            whole = [p for p in self.batches.iterdir() if p.is_dir() and (p / "runs.json").exists()]
            for name in self._replaced(whole):
                _remove_batch(self.batches / name, self.root)
        for trash in self.root.glob(".trash-*"):
            shutil.rmtree(trash, ignore_errors=True)

    # -- compaction -----------------------------------------------------------------------------------------

    def compact(self, spark, everything: bool = True, progress: Callable[[str], None] = lambda s: None) -> int:
        """Merge batches into one (every batch, or with everything=False those of a size tier that holds
        COMPACT_FANIN or more); return how many batches were merged. Idempotent and safe to interrupt: the
        merged batch becomes visible in one rename, naming the batches it replaces (compacted.json), which
        are hidden from then on and removed afterwards or by the next ingest or compaction."""
        return self._locked(lambda: self._compact_locked(spark, everything, progress))

    def _compact_locked(self, spark, everything: bool, progress) -> int:
        merged = 0
        while True:
            batches = self.batch_dirs()
            if everything:
                group = batches if len(batches) > 1 else []
            else:
                tiers: dict[int, list[Path]] = {}
                for b in batches:
                    tiers.setdefault(_tier(b), []).append(b)
                group = next((g for _, g in sorted(tiers.items()) if len(g) >= COMPACT_FANIN), [])
            if not group:
                return merged
            self._merge_batches(spark, group, progress)
            merged += len(group)
            if everything:
                return merged

    def _merge_batches(self, spark, group: list[Path], progress) -> Path:
        batch_id = _new_batch_id()
        staging = self.root / f".staging-{batch_id}"
        staging.mkdir(parents=True)
        progress(f"compacting {len(group)} batch(es) into {batch_id}")
        with_records = [b for b in group if (b / "records").is_dir()]
        if with_records:
            # batches that keep their case facts in a cases table merge into one that does (the tables
            # concatenated); if any keeps them in its record rows, the merged batch keeps them there too
            narrow = all((b / "cases").is_dir() for b in with_records)
            records = read_records_of(spark, [str(b / "records") for b in with_records], facts=not narrow)
            if narrow:
                records = records.select(*WRITTEN_COLUMNS)
                import pyarrow as pa
                import pyarrow.parquet as pq
                (staging / "cases").mkdir()
                pq.write_table(pa.concat_tables([pq.read_table(str(b / "cases"), schema=_cases_arrow_schema())
                                                 for b in with_records]),
                               str(staging / "cases" / "part-0.parquet"))
            total = sum(_batch_records(b) for b in with_records)
            if total < COMPACT_SHUFFLE_BELOW:       # small batches: one file per broker
                records = records.repartition("broker")
            writer(records.write).partitionBy("broker").parquet(str(staging / "records"))
            tables = {name: spark.read.parquet(*[str(b / "summary" / name) for b in with_records
                                                 if (b / "summary" / ".complete").exists()])
                      for name in _summary.TABLES} if all((b / "summary" / ".complete").exists()
                                                          for b in with_records) else None
            if tables is None:
                write_summary(spark, staging)
            else:
                _summary.write(_summary.merge(tables), staging / "summary")
                (staging / "summary" / ".complete").write_text("ok")
        runs, replaced = [], []
        for b in group:
            runs += json.loads((b / "runs.json").read_text("utf-8"))
            replaced.append(b.name)
            if (b / "compacted.json").exists():
                replaced += json.loads((b / "compacted.json").read_text("utf-8"))
        for name in ("ladders.jsonl", "selfcheck.jsonl"):
            with open(staging / name, "wb") as out:
                for b in group:
                    if (b / name).exists():
                        with open(b / name, "rb") as fh:
                            shutil.copyfileobj(fh, out)
        (staging / "compacted.json").write_text(json.dumps(sorted(set(replaced))), "utf-8")
        (staging / "runs.json").write_text(json.dumps(runs, indent=1, sort_keys=True, default=str), "utf-8")
        os.replace(staging, self.batches / batch_id)      # the merged batch replaces the group here, whole
        for b in group:
            _remove_batch(b, self.root)
        return self.batches / batch_id

    def _ingest_locked(self, spark, run_dirs: list[Path], progress) -> IngestResult:
        known = self.run_ids()
        metas: dict[str, tuple[Path, dict]] = {}
        result = IngestResult(batch_id=None)
        for run_dir in run_dirs:
            meta = _read_run_meta(run_dir, count=False)     # the lines are counted by Spark below
            run_id = meta["run_id"]
            if run_id in known or run_id in metas:
                result.skipped_runs.append(run_id)
                continue
            metas[run_id] = (run_dir, meta)
        if not metas:
            return result
        dir_names = {}
        for run_id, (run_dir, _) in metas.items():
            name = run_dir.resolve().name
            if name in dir_names:
                raise BadResults(f"two run directories are both named {name} ({dir_names[name]} and {run_dir}); "
                                 "ingest them separately")
            dir_names[name] = run_dir
        batch_id = _new_batch_id()
        staging = self.root / f".staging-{batch_id}"
        staging.mkdir(parents=True)
        try:
            progress(f"ingesting {len(metas)} run(s) into {self.root}")
            # selfcheck runs judge the suite, not a broker: their sensitivity matrix is kept, not their records
            selfchecks = {rid: rm for rid, rm in metas.items() if rm[1].get("kind") == "selfcheck"}
            compliance = {rid: rm for rid, rm in metas.items() if rid not in selfchecks}
            per_run = write_records(spark, compliance, staging) if compliance else {}
            count = sum(n for n, _ in per_run.values())
            for run_id, (run_dir, meta) in compliance.items():
                scheduled = meta.get("scheduled")
                if meta.get("finished_at") and isinstance(scheduled, int) and \
                        per_run.get(run_id, (0, 0))[0] < scheduled:
                    _read_run_meta(run_dir)     # counts its lines: BadResults naming the file if it was cut
            ladders = self._write_ladders(compliance, staging)
            self._write_selfchecks(selfchecks, staging)
            runs = []
            for run_id, (run_dir, meta) in metas.items():
                runs.append({**{k: v for k, v in meta.items() if k != "options"}, "options": meta.get("options"),
                             "source": str(run_dir.resolve()), "batch_id": batch_id,
                             "records": per_run.get(run_id, (0, 0))[0] if run_id in compliance
                             else count_records(run_dir / "results.jsonl"),
                             "errors": per_run.get(run_id, (0, 0))[1]})
            (staging / "runs.json").write_text(json.dumps(runs, indent=1, sort_keys=True, default=str), "utf-8")
            self.batches.mkdir(parents=True, exist_ok=True)
            os.replace(staging, self.batches / batch_id)       # the ingest becomes visible here, whole
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        result.batch_id = batch_id
        result.added_runs = list(metas)
        result.records = count
        progress(f"added {len(metas)} run(s), {count} record(s), {ladders} ladder(s); "
                 f"{len(result.skipped_runs)} already in the history")
        return result

    @staticmethod
    def _write_selfchecks(metas: dict[str, tuple[Path, dict]], staging: Path) -> None:
        with open(staging / "selfcheck.jsonl", "w", encoding="utf-8") as out:
            for run_id, (run_dir, meta) in metas.items():
                path = run_dir / "selfcheck.json"
                try:
                    data = json.loads(path.read_text("utf-8"))
                except FileNotFoundError:
                    continue             # interrupted before its matrix was written
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise BadResults(f"{path} is corrupted; remove that run directory or run selfcheck again") \
                        from None
                out.write(json.dumps({"run_id": run_id, "started_at": meta.get("started_at"), **data},
                                     sort_keys=True) + "\n")

    @staticmethod
    def _write_ladders(metas: dict[str, tuple[Path, dict]], staging: Path) -> int:
        count = 0
        with open(staging / "ladders.jsonl", "w", encoding="utf-8") as out:
            for run_id, (run_dir, _) in metas.items():
                transcripts = run_dir / "transcripts"
                if not transcripts.is_dir() or not any(transcripts.glob("*.txt")):
                    continue
                for record in read_records(run_dir / RESULTS_FILE):
                    stem = transcript_stem(record["case_id"], record["broker"])
                    path = transcripts / f"{stem}.txt"
                    if path.exists():
                        out.write(json.dumps({"run_id": run_id, "case_id": record["case_id"],
                                              "broker": record["broker"],
                                              "ladder": path.read_text("utf-8", errors="replace")}) + "\n")
                        count += 1
        return count


def _new_batch_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:8]


def _batch_records(batch: Path) -> int:
    return sum(r.get("records") or 0 for r in json.loads((batch / "runs.json").read_text("utf-8")))


def _tier(batch: Path) -> int:
    """A batch's size tier: the number of digits of its record count (510 -> 3, 10 million -> 8)."""
    return len(str(_batch_records(batch)))


def _remove_batch(batch: Path, root: Path) -> None:
    """Remove a replaced batch: renamed out of batches/ first (one step), then deleted."""
    if batch.exists():
        trash = root / f".trash-{batch.name}"
        shutil.rmtree(trash, ignore_errors=True)
        os.replace(batch, trash)
        shutil.rmtree(trash, ignore_errors=True)
