"""The records table of a history batch: its schema, reading it back, and writing it from results.jsonl.

`write_records` turns the results.jsonl of some runs into a batch's Parquet records (partitioned by broker)
in one Spark pass, the JSON read with the schema given (the case facts left unparsed: see CASE_FACTS);
`write_summary` derives the batch's summary tables (conformance.history.summary) from the written Parquet, and
its first aggregation shows whether every line was a case record. A line that does not parse or is not a case
record stops the ingest with a BadResults error naming it (`check_lines`). conformance.history.store owns the
batches these are written into.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

from ..errors import BadResults
from ..results import check_lines
from . import summary as _summary


# What the history keeps of a record (titles come from the catalogue; run-level facts stay in runs.json).
# requirement_ids is kept as the record's JSON text (e.g. '["2.6.7/credit-formula"]'): one dictionary-encoded
# string per record instead of a repeated Parquet field, a third cheaper to write; readers json-decode it.
# findings likewise: the record's list of findings (deciding first) as JSON text; null in batches ingested
# before findings were recorded. observations: the record's observations (a JSON object, e.g. "producer": the
# producer-flow-control facts) as JSON text; null in batches ingested before it was kept.
RECORD_SCHEMA = (
    "run_id STRING, case_id STRING, section STRING, level STRING, requirement_ids STRING, "
    "verdict STRING, reason STRING, violated STRING, broker STRING, broker_product STRING, "
    "broker_version STRING, duration_s DOUBLE, started_at STRING, findings STRING, observations STRING"
)
# Columns of the records table, in order (`broker` is the partition column and comes last when read back).
RECORD_COLUMNS = ("run_id", "case_id", "section", "level", "requirement_ids", "verdict", "reason", "violated",
                  "broker_product", "broker_version", "duration_s", "started_at", "findings", "broker",
                  "observations")
# The records table as stored (Parquet files under broker=<name>/ directories: `broker` is the partition column).
STORED_SCHEMA = ", ".join(f for f in RECORD_SCHEMA.split(", ") if not f.startswith("broker ")) + ", broker STRING"
# A case's section, level and requirement_ids are the same in every record of it in one run (its spec in that
# run's suite version): a batch keeps them once per (run, case) in its `cases` table (CASES_SCHEMA) instead of in
# every record row, and read_records_of joins them back, so every reader sees RECORD_COLUMNS. Batches written
# before the cases table have them in their record rows (and no cases table); both are read alike.
CASE_FACTS = ("section", "level", "requirement_ids")
CASES_SCHEMA = "run_id STRING, case_id STRING, section STRING, level STRING, requirement_ids STRING"
# The columns written in the record rows of a batch that has a cases table.
WRITTEN_COLUMNS = tuple(c for c in RECORD_COLUMNS if c not in CASE_FACTS)


def write_records(spark, metas: dict[str, tuple[Path, dict]], staging: Path) -> dict[str, tuple[int, int]]:
    """Write the records of these runs into `staging`/records and their summary into `staging`/summary;
    return (records, errors) per run_id. Spark reads the JSON once (schema given, the case facts not parsed) and
    the written Parquet once more (the summary: narrow columns, one aggregation, which also finds lines that are
    not case records: they stop the ingest before anything becomes visible); the cases table is written from the
    first records of each run (write_case_facts)."""
    from pyspark.sql import functions as F

    files = [str((run_dir / "results.jsonl").resolve()) for run_dir, _ in metas.values()]
    parsed = spark.read.schema(RECORD_SCHEMA).json(files)
    run_id = F.col("run_id")
    if not all(_first_record_has_run_id(run_dir) for run_dir, _ in metas.values()):
        # results written before records carried their run_id: take it from the directory name
        by_dir = F.create_map(*[F.lit(x) for run_id_, (run_dir, _) in metas.items()
                                for x in (run_dir.resolve().name, run_id_)])
        run_id = F.coalesce(run_id, F.element_at(
            by_dir, F.element_at(F.split(F.col("_metadata.file_path"), "/"), -2)))
    versions = {f"{rid}\x00{name}": (info or {}).get("version")
                for rid, (_, meta) in metas.items() for name, info in (meta.get("brokers") or {}).items()}
    versions = {k: v for k, v in versions.items() if v}
    version = F.col("broker_version")
    if versions:   # a record of a case that broke before the broker's open arrived has no version of its own
        # one literal (the map as JSON), not two per run: building a map of thousands of literals costs seconds
        version_map = F.from_json(F.lit(json.dumps(versions)), "map<string,string>")
        version = F.coalesce(version, F.element_at(version_map, F.concat_ws("\x00", "run_id", "broker")))
    rows = (parsed.withColumn("run_id", run_id)
            .withColumn("broker_version", F.coalesce(version, F.lit("unknown")))
            .withColumn("broker", F.coalesce("broker", F.lit("unknown")))
            .select(*WRITTEN_COLUMNS))      # the case facts are not parsed here: see write_case_facts
    writer(rows.write).partitionBy("broker").parquet(str(staging / "records"))
    if not any((staging / "records").glob("broker=*")):
        shutil.rmtree(staging / "records", ignore_errors=True)
        return {}
    by_dir = not all(_first_record_has_run_id(run_dir) for run_dir, _ in metas.values())
    run_dirs = {rid: run_dir for rid, (run_dir, _) in metas.items()}

    def check_then_facts(pairs) -> None:
        # a line that does not parse comes back as all nulls (PERMISSIVE mode): the summary's first aggregation
        # counts it (no case_id, or a verdict outside VERDICTS), so the write itself checks nothing per line
        if any(case is None or bad for case, bad in zip(pairs.column("case_id").to_pylist(),
                                                       pairs.column("bad").to_pylist())):
            for run_dir in run_dirs.values():     # find the first bad line, in plain Python, for the message
                check_lines(run_dir / "results.jsonl")
            raise BadResults("a results.jsonl line has a missing case_id, broker or unknown verdict; fix or remove "
                             "that run directory")
        write_case_facts(run_dirs, pairs, staging / "cases", by_dir)
    return write_summary(spark, staging, check_then_facts)


def writer(write):
    """Options of every records write: no dictionary for `reason` (its text is nearly unique per record, so the
    dictionary only grows until the writer gives up on it)."""
    return write.option("parquet.enable.dictionary#reason", "false")


def read_records_of(spark, paths: list[str], facts: bool = True):
    """The records tables at `paths` as one DataFrame (RECORD_COLUMNS): one read per table (each is its own
    partitioned table), then one union; the schema is given, so a column a batch lacks (findings, observations
    written before they were recorded) reads as null. A batch's case facts come from its `cases` table where it
    has one (joined on run_id and case_id); with facts=False they are left as stored (null in such batches)."""
    from pyspark.sql import functions as F

    frames = []
    for path in paths:
        frame = spark.read.schema(STORED_SCHEMA).parquet(path)
        cases = Path(path).parent / "cases"
        if facts and cases.is_dir():
            table = spark.read.schema(CASES_SCHEMA).parquet(str(cases))
            frame = frame.drop(*CASE_FACTS).join(F.broadcast(table), ["run_id", "case_id"], "left")
        frames.append(frame.select(*RECORD_COLUMNS))
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def write_case_facts(run_dirs: dict[str, Path], pairs, dest: Path, by_dir: bool = False) -> None:
    """Write the cases table (CASES_SCHEMA) of the (run_id, case_id) `pairs` (an Arrow table) into `dest`: each
    pair's section, level and requirement_ids as its first record in the run's results.jsonl has them (as Spark's
    reader gives a JSON value read as text: `_fields`). Each file is read only until every
    case of its run is found (a run's first records name most of its cases), then the rest of the files for
    pairs still missing (records naming another run_id)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted: dict[str | None, set] = {}
    for rid, cid in zip(pairs.column("run_id").to_pylist(), pairs.column("case_id").to_pylist()):
        wanted.setdefault(rid, set()).add(cid)
    found: dict[tuple, tuple] = {}
    found_of: dict[str | None, set] = {}          # run_id -> its case_ids found so far

    def scan(run_id: str, run_dir: Path, until_found: bool) -> None:
        left = set(wanted.get(run_id, ())) - found_of.get(run_id, set()) if until_found else None
        if until_found and not left:
            return
        with open(run_dir / "results.jsonl", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    record = _fields(line, _FACT_KEYS)
                except (ValueError, IndexError):
                    check_lines(run_dir / "results.jsonl")      # names the line
                    raise BadResults(f"{run_dir / 'results.jsonl'} holds a line that is not a JSON object") from None
                rid = record.get("run_id") or (run_id if by_dir else None)
                key = (rid, record.get("case_id"))
                if key in found or key[1] not in wanted.get(rid, ()):
                    continue
                found[key] = tuple(record.get(c) for c in CASE_FACTS)
                found_of.setdefault(rid, set()).add(key[1])
                if until_found and rid == run_id:
                    left.discard(key[1])
                    if not left:
                        return

    for run_id, run_dir in run_dirs.items():
        scan(run_id, run_dir, True)
    if len(found) < sum(len(c) for c in wanted.values()):
        for run_id, run_dir in run_dirs.items():
            scan(run_id, run_dir, False)
    keys = sorted(found, key=lambda k: (k[0] or "", k[1] or ""))
    columns = {"run_id": [k[0] for k in keys], "case_id": [k[1] for k in keys],
               **{c: [found[k][i] for k in keys] for i, c in enumerate(CASE_FACTS)}}
    dest.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()}),
                   str(dest / "part-0.parquet"))


_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


# The fields write_case_facts needs of a line: they come first in a record, so a line is parsed only that far.
_FACT_KEYS = frozenset(("run_id", "case_id", *CASE_FACTS))


def _fields(line: str, wanted: frozenset | None = None) -> dict:
    """The top-level fields of one JSON object as Spark's JSON reader gives them for STRING columns: a string
    decoded, null as None, anything else (a list, an object, a number) as its text exactly as the line has it.
    With `wanted`, the line is parsed only until every one of those fields is found (the rest is not read: a
    line that is cut off or malformed after them is found by the summary's own check, not here)."""
    from json.decoder import scanstring

    def skip(i: int) -> int:
        while line[i] in _SPACE:
            i += 1
        return i
    out = {}
    i = skip(0)
    if line[i] != "{":
        raise ValueError("not an object")
    i = skip(i + 1)
    if line[i] == "}":
        return out
    while True:
        if line[i] != '"':
            raise ValueError("no key")
        key, i = scanstring(line, i + 1)
        i = skip(i)
        if line[i] != ":":
            raise ValueError("no colon")
        i = skip(i + 1)
        value, end = _DECODER.raw_decode(line, i)
        out[key] = value if value is None or isinstance(value, str) else line[i:end]
        if wanted is not None and wanted <= out.keys():
            return out
        i = skip(end)
        if line[i] == "}":
            return out
        if line[i] != ",":
            raise ValueError("no comma")
        i = skip(i + 1)


def write_summary(spark, batch: Path, case_facts=None) -> dict[str, tuple[int, int]]:
    """Summarize the records of `batch` into batch/summary/ (marked complete last); (records, errors) per run.
    `case_facts`, when given, writes the batch's cases table from the (run_id, case_id) pairs the summary's first
    aggregation found, before the latest records (which show the case facts) are read."""
    def reread(pairs):
        case_facts(pairs)
        return read_records_of(spark, [str(batch / "records")])
    tables = _summary.summarize(read_records_of(spark, [str(batch / "records")], facts=case_facts is None),
                                reread=reread if case_facts else None)
    shutil.rmtree(batch / "summary", ignore_errors=True)
    _summary.write(tables, batch / "summary")
    (batch / "summary" / ".complete").write_text("ok")
    return {r["run_id"]: (r["records"], r["errors"]) for r in tables["runs"].to_pylist()}


def _first_record_has_run_id(run_dir: Path) -> bool:
    with open(run_dir / "results.jsonl", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return '"run_id"' in line
    return True
