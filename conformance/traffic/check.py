"""`amqp-conformance check CAPTURE...`: judge captured traffic and the suite's transcripts, both endpoints.

This module owns reading the inputs (pcap / pcapng files, transcript .json files of the suite, directories
holding either), cutting them into connections, judging each with `judge.ConnectionJudge`, the console
lines (each finding as it is found, a line for every stream skipped and why, a summary per connection) and
the traffic run directory:

    <reports>/traffic/<run-id>/run.json          inputs, counts, started_at / finished_at
    <reports>/traffic/<run-id>/connections.jsonl one line per connection: endpoints, frames, kind, findings
    <reports>/traffic/<run-id>/findings.jsonl    one line per finding (judge.Finding.to_json)
    <reports>/traffic/<run-id>/report.md, .html  findings per requirement x endpoint product@version

It is not a run directory of cases (those are the pipeline's, reports/runs/): nothing there is a case.
A file that is no capture, a truncated one, one holding no AMQP or only TLS: one line, distinct exit code.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .. import __version__
from ..errors import (EXIT_INTERRUPTED, EXIT_MUST_FAILED, EXIT_OK, BadResults, CaptureEncrypted, CaptureOneSided,
                      CaptureWithoutAmqp, ConformanceError, NotACapture, PermissionProblem)
from ..report.traffic import render_traffic_page, rows_from_findings
from ..results import atomic_write_text
from .judge import CLIENT, DECODE_LEVEL, SERVER, ConnectionJudge, Finding
from .pcap import streams

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")


@dataclass
class CheckResult:
    connections: list[ConnectionJudge] = field(default_factory=list)    # judged (AMQP, both sides captured)
    skipped: list[str] = field(default_factory=list)         # "skipped NAME: why" per TLS / non-AMQP stream
    inputs: list[str] = field(default_factory=list)
    one_sided: list[ConnectionJudge] = field(default_factory=list)      # AMQP, one side not captured: not judged
    unjudged: list[str] = field(default_factory=list)        # "not judged FILE: why" per input that could not be

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.connections for f in c.findings]

    def notes(self) -> list[str]:
        """What was not judged and why, one line each (console, run.json, report.md)."""
        return (self.unjudged + self.skipped
                + [f"one-sided {c.name}: {c.one_sided}" for c in self.one_sided])

    def exit_code(self) -> int:
        return EXIT_MUST_FAILED if any(f.level in ("MUST", DECODE_LEVEL) for f in self.findings) else EXIT_OK


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files given, and the capture / transcript files under directories given, in a stable order."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(x for x in p.rglob("*") if x.is_file() and
                           (x.suffix in CAPTURE_SUFFIXES or (x.suffix == ".json" and x.parent.name == "transcripts")))
            if not found:
                raise NotACapture(f"{p} holds no capture (.pcap/.pcapng) and no transcripts/*.json; "
                                  "give capture files or a run directory")
            out += found
        elif p.exists():
            out.append(p)
        else:
            raise NotACapture(f"{p} does not exist; give a pcap/pcapng file, a transcript .json or a directory")
    return out


_RING = re.compile(r"^(?P<prefix>.+)_(?P<n>\d{5,})_(?P<stamp>\d{14})(?P<ext>\.[A-Za-z]+)$")


def capture_sets(files: Iterable[Path]) -> list[list[Path]]:
    """The files in groups judged as one capture each: the files of one ring buffer (tshark/dumpcap
    `-b`, named PREFIX_NNNNN_YYYYMMDDhhmmss.EXT in one directory) together in their order, since a
    connection goes on from one file into the next; every other file alone. In the order first given."""
    groups: dict = {}
    for f in files:
        m = _RING.match(f.name) if f.suffix in CAPTURE_SUFFIXES else None
        key = (str(f.parent), m.group("prefix"), m.group("ext")) if m else ("", str(f), "")
        groups.setdefault(key, []).append(f)
    for key, group in groups.items():
        if key[0]:
            group.sort(key=lambda f: int(_RING.match(f.name).group("n")))
    return list(groups.values())


def set_label(group: list[Path]) -> str:
    """How a capture set's connections are named: its (first) file's name."""
    return group[0].name


def is_transcript(path: Path) -> bool:
    head = read_input(path, 64).lstrip()
    return head[:1] in (b"{", b"[")


class CaptureJudge:
    """The connections of one capture, judged as its in-order segments come (`pcap.Segment`s, gaps too)."""

    def __init__(self, label: str, say: Callable[[str], None] = lambda s: None):
        self.label, self.say = label, say
        self.judges: dict[int, ConnectionJudge] = {}
        self.connections: list[ConnectionJudge] = []

    def segment(self, seg) -> None:
        conn = seg.connection
        judge = self.judges.get(id(conn))
        if judge is None:
            (ca, cp), (sa, sp) = conn.key
            judge = ConnectionJudge(f"{self.label}:{conn.name}", client=f"{ca}:{cp}", server=f"{sa}:{sp}",
                                    from_start=conn.from_start)
            self.judges[id(conn)] = judge
            self.connections.append(judge)
        if seg.gap:
            judge.gap(seg.side)
            return
        for finding in judge.feed(seg.side, seg.data, seg.t):
            self.say(finding.line())

    def finish(self) -> None:
        """The capture ended: every connection's held bytes judged (or, one-sided, dropped)."""
        for judge in self.connections:
            for finding in judge.finish():
                self.say(finding.line())


def judge_capture(path: Path | list[Path], say: Callable[[str], None] = lambda s: None) -> CheckResult:
    """Every TCP connection of one capture (a file, or a ring buffer's files in order), judged; a line said
    for each finding as it is found."""
    group = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    result = CheckResult(inputs=[str(p) for p in group])
    judge = CaptureJudge(set_label(group), say)
    for seg in streams(group):
        judge.segment(seg)
    judge.finish()
    result.connections = judge.connections
    return _sorted_out(result, group[0], say)


def sort_out(connections: list[ConnectionJudge], result: CheckResult) -> None:
    """Judged connections into `result.connections`, a line per TLS / non-AMQP one into `result.skipped`,
    one-sided AMQP ones into `result.one_sided` (the same for a capture, a transcript and `observe`)."""
    for c in connections:
        kind = c.kind
        if kind == "tls":
            result.skipped.append(f"skipped {c.name}: TLS-encrypted, nothing to judge (capture in front of "
                                  "the TLS endpoint, or use `observe`)")
        elif kind == "not-amqp":
            result.skipped.append(f"skipped {c.name}: not AMQP 1.0")
        elif kind == "amqp" and c.one_sided is not None:
            result.one_sided.append(c)
        elif kind == "amqp":
            result.connections.append(c)


def _sorted_out(result: CheckResult, path: Path, say) -> CheckResult:
    connections, result.connections = result.connections, []
    sort_out(connections, result)
    for line in result.notes():
        say(line)
    kinds = Counter(c.kind for c in connections)
    if not result.connections:
        if result.one_sided:
            raise CaptureOneSided(f"{path} holds one direction only of its {len(result.one_sided)} AMQP "
                                  f"connection(s) ({result.one_sided[0].one_sided.split(' (')[0]}), nothing can be "
                                  "judged; capture both directions, e.g. `tshark -i lo -f 'tcp port 5672'`")
        if kinds["tls"]:
            raise CaptureEncrypted(f"{path}: its {kinds['tls']} AMQP connection(s) are TLS-encrypted, nothing can be "
                                   "judged; capture between the application and a plain port, or run `observe`")
        raise CaptureWithoutAmqp(f"{path} holds no AMQP 1.0 traffic ({len(connections)} TCP connection(s), "
                                 "none speaking AMQP); capture the AMQP port, e.g. `tshark -i lo -f 'tcp port 5672'`")
    return result


def judge_transcript(path: Path, say: Callable[[str], None] = lambda s: None) -> CheckResult:
    """Each connection of a suite transcript file ("out": the suite's peer, the client)."""
    result = CheckResult(inputs=[str(path)])
    judges = []
    for conn in _transcript_connections(path):
        judge = judge_cut(conn, say)
        judges.append(judge)
    sort_out(judges, result)
    for line in result.notes():
        say(line)
    return result


def _transcript_connections(path: Path) -> list[dict]:
    """The connections of a transcript file as `cut_connections` gives them (checked whole first: a bad
    entry is one line, exit 24, before anything is judged)."""
    conns = []
    for k, tr in enumerate(_transcripts(path)):
        label = tr.get("label", "")
        segs = [(CLIENT if e["direction"] == "out" else SERVER, e.get("t"), bytes.fromhex(e["raw"]))
                for e in tr["entries"]]
        conns.append({"name": f"{path.name}#{k}:{label}", "client": "peer", "server": str(label),
                      "from_start": True, "sides_captured": True, "segments": segs})
    return conns


def cut_connections(path: Path) -> list[dict]:
    """Every connection of a capture or transcript file cut out once: {name, client, server, from_start,
    segments: [(side, t, bytes)]}: what `judge_cut` judges anywhere (a Spark task) without the file."""
    conns: list[dict] = []
    if is_transcript(path):
        return _transcript_connections(path)
    by_conn: dict[int, dict] = {}
    for seg in streams(path):
        c = by_conn.get(id(seg.connection))
        if c is None:
            conn = seg.connection
            (ca, cp), (sa, sp) = conn.key
            c = by_conn[id(conn)] = {"name": f"{path.name}:{conn.name}", "client": f"{ca}:{cp}",
                                     "server": f"{sa}:{sp}", "from_start": conn.from_start, "segments": []}
            conns.append(c)
        c["segments"].append((seg.side, seg.t, None if seg.gap else seg.data))
    return conns


def judge_cut(conn: dict, say: Callable[[str], None] = lambda s: None) -> ConnectionJudge:
    """Judge one connection `cut_connections` cut out (pure: the same model as `check` without Spark)."""
    judge = ConnectionJudge(conn["name"], client=conn["client"], server=conn["server"],
                            from_start=conn["from_start"], sides_captured=conn.get("sides_captured", False))
    for side, t, data in conn["segments"]:
        if data is None:
            judge.gap(side)
        else:
            for finding in judge.feed(side, data, t):
                say(finding.line())
    for finding in judge.finish():
        say(finding.line())
    return judge


_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")


def _transcripts(path: Path) -> list[dict]:
    """The transcripts of a file, each entry checked: a dict with direction "out" or "in", raw a hex string,
    t a number or null. Anything else is one line naming the file and the entry (NotACapture, exit 24)."""
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise NotACapture(f"{path} is neither a capture nor a transcript ({exc.__class__.__name__}); give a "
                          "pcap/pcapng file or a transcripts/*.json of a run directory") from None
    transcripts = data if isinstance(data, list) else [data]
    for k, tr in enumerate(transcripts):
        if not isinstance(tr, dict) or "entries" not in tr:
            raise NotACapture(f"{path} is JSON but not a transcript (no entries); give a transcripts/*.json of a "
                              "run directory")
        if not isinstance(tr["entries"], list):
            raise NotACapture(f"{path}: transcript {k} has entries that are no list; not a transcript the suite "
                              "wrote (re-run the case, or give its transcripts/*.json as written)")
        for n, e in enumerate(tr["entries"]):
            problem = _entry_problem(e)
            if problem:
                raise NotACapture(f"{path}: transcript {k}, entry {n}: {problem}; not a transcript the suite wrote "
                                  "(re-run the case, or give its transcripts/*.json as written)")
    return transcripts


def _entry_problem(e) -> str | None:
    if not isinstance(e, dict):
        return f"{json.dumps(e)[:40]} is no object"
    if e.get("direction") not in ("out", "in"):
        return f"direction {json.dumps(e.get('direction'))[:40]} is neither \"out\" (the suite's peer) nor \"in\""
    raw = e.get("raw", "")
    if not isinstance(raw, str) or not _HEX.fullmatch(raw):
        return f"raw {json.dumps(raw)[:40]} is not a hex string of whole bytes"
    t = e.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or t != t or abs(t) == float("inf")):
        return f"t {json.dumps(t)[:40]} is not a number of seconds"
    return None


def read_input(path: Path, limit: int | None = None) -> bytes:
    """The bytes of an input file (the first `limit`); a file that cannot be read is one line: exit 10 when
    it may not be read (captures written by root are 0600), 24 otherwise."""
    try:
        with open(path, "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)
    except PermissionError:
        raise PermissionProblem(f"cannot read {path}: permission denied; run check as a user who may read it "
                                "(tshark and tcpdump running as root write 0600 files: chmod or chown it)") from None
    except IsADirectoryError:
        raise NotACapture(f"{path} is a directory holding no capture; give capture files") from None
    except OSError as exc:
        raise NotACapture(f"cannot read {path}: {exc.strerror or exc}; give a pcap/pcapng file or a transcript "
                          ".json") from None


def judge_file(path: Path, say: Callable[[str], None] = lambda s: None) -> CheckResult:
    return judge_transcript(path, say) if is_transcript(path) else judge_capture(path, say)


def judge_all(paths: Iterable[str | Path], say: Callable[[str], None] = lambda s: None) -> CheckResult:
    """Every capture (a file, or a ring buffer's files) and transcript given or under the directories given.
    One input that cannot be judged (not a capture, cut short, no AMQP, TLS only, one-sided) is that input's
    one-line error with its exit code; among several, it is listed (`not judged FILE: why`) and the others
    are judged: the error is raised only when none could be."""
    total = CheckResult()
    groups = capture_sets(expand(paths))
    failures: list[ConformanceError] = []
    for group in groups:
        try:
            r = judge_file(group[0], say) if len(group) == 1 else judge_capture(group, say)
        except ConformanceError as exc:
            if len(groups) == 1:
                raise
            failures.append(exc)
            what = exc.message if str(group[0]) in exc.message else f"{group[0]}: {exc.message}"
            line = f"not judged: {what} (exit {exc.exit_code} alone)"
            total.unjudged.append(line)
            say(line)
            continue
        total.connections += r.connections
        total.skipped += r.skipped
        total.one_sided += r.one_sided
        total.inputs += r.inputs
    if len(failures) == len(groups):
        first = failures[0]
        raise type(first)(f"none of the {len(groups)} inputs could be judged; the first: {first.message}",
                          exit_code=first.exit_code)
    return total


# -- the traffic run directory ---------------------------------------------------------------------------

def new_run_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"


def run_paths(reports_dir: Path, run_id: str) -> tuple[Path, Path]:
    """(the run directory, the directory it is written in first): a run appears whole or not at all."""
    traffic = Path(reports_dir) / "traffic"
    return traffic / run_id, traffic / f".{run_id}.partial"


def write_run(reports_dir: Path, result: CheckResult, *, command: str, run_id: str | None = None,
              extra: dict | None = None, connections: list[dict] | None = None,
              more: Callable[[Path], None] | None = None) -> Path:
    """The traffic run directory of a check or an observe session (layout: module docstring), written in a
    directory of its own beside it and renamed into place once whole (`more(path)` adds files first): an
    interrupted write leaves no run directory, only `.<run-id>.partial`, which whoever interrupted removes."""
    run_id = run_id or new_run_id()
    final, path = run_paths(reports_dir, run_id)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    if connections is None:
        conns, one_sided = [c.summary() for c in result.connections], [c.summary() for c in result.one_sided]
    else:
        conns = [c for c in connections if not c.get("one_sided")]
        one_sided = [c for c in connections if c.get("one_sided")]
    atomic_write_text(path / "connections.jsonl",
                      "".join(json.dumps(c, sort_keys=True) + "\n" for c in conns + one_sided))
    atomic_write_text(path / "findings.jsonl",
                      "".join(json.dumps(f.to_json(), sort_keys=True) + "\n" for f in result.findings))
    meta = {"run_id": run_id, "kind": "traffic", "command": command, "suite_version": __version__,
            "inputs": result.inputs, "connections": len(conns), "findings": len(result.findings),
            "skipped": result.skipped, "one_sided": [c["connection"] for c in one_sided],
            "not_judged": result.unjudged, "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            **(extra or {})}
    atomic_write_text(path / "run.json", json.dumps(meta, indent=2, sort_keys=True))
    atomic_write_text(path / "report.md", render_markdown(result.findings, conns + one_sided,
                                                          title=f"{command} {run_id}", notes=result.notes()))
    rows = rows_from_findings([f.to_json() for f in result.findings], run_id)
    atomic_write_text(path / "report.html", render_traffic_page(f"Traffic judged: {command} {run_id}", rows,
                                                                conns + one_sided))
    if more is not None:
        more(path)
    os.replace(path, final)
    return final


def endpoint_key(f: Finding | dict) -> str:
    d = f if isinstance(f, dict) else f.to_json()
    return f"{d['endpoint']} {d.get('product') or 'unknown'}@{d.get('version') or 'unknown'}"


def render_markdown(findings: list[Finding], connections: list[dict], title: str,
                    notes: list[str] | None = None) -> str:
    counts = Counter((f.requirement_id, f.level, endpoint_key(f)) for f in findings)
    judged = [c for c in connections if not c.get("one_sided")]
    lines = [f"# Traffic judged: {title}", "",
             f"{len(judged)} connection(s) judged, {sum(c.get('frames', 0) for c in judged)} frames, "
             f"{len(findings)} finding(s).", ""]
    if notes:
        lines += ["## Not judged", ""] + [f"- {n}" for n in notes] + [""]
    if counts:
        lines += ["| requirement | level | endpoint product@version | findings |", "|---|---|---|---|"]
        lines += [f"| {r} | {lv} | {ep} | {n} |" for (r, lv, ep), n in sorted(counts.items())]
        lines += ["", "## First finding of each", ""]
        seen = set()
        for f in findings:
            key = (f.requirement_id, endpoint_key(f))
            if key not in seen:
                seen.add(key)
                lines.append(f"- `{f.requirement_id}` {endpoint_key(f)} on {f.connection}, frame "
                             f"#{f.frame_index} `{f.frame}`: {f.detail}")
    lines += ["", "## Connections", ""]
    for c in connections:
        cl, sv = c.get("client", {}), c.get("server", {})
        lines.append(f"- {c['connection']}: client {cl.get('container_id') or 'unknown'} "
                     f"({cl.get('product') or 'unknown'}@{cl.get('version') or 'unknown'}), server "
                     f"{sv.get('container_id') or 'unknown'} ({sv.get('product') or 'unknown'}@"
                     f"{sv.get('version') or 'unknown'}): {c.get('frames', 0)} frames, {c.get('findings', 0)} findings"
                     + (" (captured mid-stream: sessions begun before it are not judged)" if c.get("mid_stream") else "")
                     + (f"; stopped: {c['stopped']}" if c.get("stopped") else "")
                     + (f"; one-sided, not judged: {c['one_sided']}" if c.get("one_sided") else ""))
    return "\n".join(lines) + "\n"


def summary_lines(result: CheckResult) -> list[str]:
    out = []
    for c in result.connections:
        cl, sv = c.endpoints[CLIENT], c.endpoints[SERVER]
        out.append(f"{c.name}: client {cl.label} <-> server {sv.label}: {c.frames} frames, "
                   f"{len(c.findings)} finding(s)" + (" [mid-stream]" if c.mid_stream else "")
                   + (f" [{c.stopped}]" if c.stopped else ""))
    return out


def cmd_check(args) -> int:
    from ..options import default_reports_dir
    say = print
    reports = Path(args.reports_dir) if getattr(args, "reports_dir", None) else default_reports_dir()
    run_id = new_run_id()
    try:
        result = judge_all(args.captures, say)
        for line in summary_lines(result):
            say(line)
        path = write_run(reports, result, command="check", run_id=run_id)
    except KeyboardInterrupt:
        final, partial = run_paths(reports, run_id)
        shutil.rmtree(partial, ignore_errors=True)
        where = f"the results were written whole to {final}" if final.exists() else \
            "nothing was written (check writes its run directory once every input is judged)"
        print(f"error: interrupted; {where}", file=sys.stderr)
        return EXIT_INTERRUPTED
    counts = Counter(f.level for f in result.findings)
    not_judged = len(result.unjudged) + len(result.skipped) + len(result.one_sided)
    say(f"{len(result.connections)} connection(s) judged, {sum(c.frames for c in result.connections)} frames, "
        f"findings: {dict(counts) or 'none'}"
        + (f"; not judged: {not_judged} (listed above)" if not_judged else "") + f"; results in {path}")
    return result.exit_code()


def load_findings(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise BadResults(f"{path} is unreadable ({exc}); re-run `check`") from None
