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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .. import __version__
from ..errors import (EXIT_MUST_FAILED, EXIT_OK, BadResults, CaptureEncrypted, CaptureWithoutAmqp,
                      NotACapture)
from ..report.traffic import render_traffic_page, rows_from_findings
from ..results import atomic_write_text
from .judge import CLIENT, DECODE_LEVEL, SERVER, ConnectionJudge, Finding
from .pcap import streams

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")


@dataclass
class CheckResult:
    connections: list[ConnectionJudge] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.connections for f in c.findings]

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
    with open(path, "rb") as fh:
        head = fh.read(64).lstrip()
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


def judge_capture(path: Path | list[Path], say: Callable[[str], None] = lambda s: None) -> CheckResult:
    """Every TCP connection of one capture (a file, or a ring buffer's files in order), judged; a line said
    for each finding as it is found."""
    group = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    result = CheckResult(inputs=[str(p) for p in group])
    judge = CaptureJudge(set_label(group), say)
    for seg in streams(group):
        judge.segment(seg)
    result.connections = judge.connections
    return _sorted_out(result, group[0], say)


def _sorted_out(result: CheckResult, path: Path, say) -> CheckResult:
    amqp = [c for c in result.connections if c.kind == "amqp"]
    for c in result.connections:
        if c.kind == "tls":
            result.skipped.append(f"skipped {c.name}: TLS-encrypted, nothing to judge (capture in front of "
                                  "the TLS endpoint, or use `observe`)")
        elif c.kind == "not-amqp":
            result.skipped.append(f"skipped {c.name}: not AMQP 1.0")
    for line in result.skipped:
        say(line)
    kinds = Counter(c.kind for c in result.connections)
    if not amqp:
        if kinds["tls"]:
            raise CaptureEncrypted(f"{path}: its {kinds['tls']} AMQP connection(s) are TLS-encrypted, nothing can be "
                                   "judged; capture between the application and a plain port, or run `observe`")
        raise CaptureWithoutAmqp(f"{path} holds no AMQP 1.0 traffic ({len(result.connections)} TCP connection(s), "
                                 "none speaking AMQP); capture the AMQP port, e.g. `tshark -i lo -f 'tcp port 5672'`")
    result.connections = amqp
    return result


def judge_transcript(path: Path, say: Callable[[str], None] = lambda s: None) -> CheckResult:
    """Each connection of a suite transcript file ("out": the suite's peer, the client)."""
    result = CheckResult(inputs=[str(path)])
    for k, tr in enumerate(_transcripts(path)):
        judge = ConnectionJudge(f"{path.name}#{k}:{tr.get('label', '')}", client="peer",
                                server=str(tr.get("label", "")))
        result.connections.append(judge)
        for entry in tr["entries"]:
            side = CLIENT if entry.get("direction") == "out" else SERVER
            for finding in judge.feed(side, bytes.fromhex(entry.get("raw", "")), entry.get("t")):
                say(finding.line())
    return result


def cut_connections(path: Path) -> list[dict]:
    """Every connection of a capture or transcript file cut out once: {name, client, server, from_start,
    segments: [(side, t, bytes)]}: what `judge_cut` judges anywhere (a Spark task) without the file."""
    conns: list[dict] = []
    if is_transcript(path):
        for k, tr in enumerate(_transcripts(path)):
            segs = [(CLIENT if e.get("direction") == "out" else SERVER, e.get("t"), bytes.fromhex(e.get("raw", "")))
                    for e in tr["entries"]]
            conns.append({"name": f"{path.name}#{k}:{tr.get('label', '')}", "client": "peer",
                          "server": str(tr.get("label", "")), "from_start": True, "segments": segs})
        return conns
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


def judge_cut(conn: dict) -> ConnectionJudge:
    """Judge one connection `cut_connections` cut out (pure: the same model as `check` without Spark)."""
    judge = ConnectionJudge(conn["name"], client=conn["client"], server=conn["server"],
                            from_start=conn["from_start"])
    for side, t, data in conn["segments"]:
        if data is None:
            judge.gap(side)
        else:
            judge.feed(side, data, t)
    return judge


def _transcripts(path: Path) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotACapture(f"{path} is neither a capture nor a transcript ({exc.__class__.__name__}); give a "
                          "pcap/pcapng file or a transcripts/*.json of a run directory") from None
    transcripts = data if isinstance(data, list) else [data]
    for tr in transcripts:
        if not isinstance(tr, dict) or "entries" not in tr:
            raise NotACapture(f"{path} is JSON but not a transcript (no entries); give a transcripts/*.json of a "
                              "run directory")
    return transcripts


def judge_file(path: Path, say: Callable[[str], None] = lambda s: None) -> CheckResult:
    return judge_transcript(path, say) if is_transcript(path) else judge_capture(path, say)


def judge_all(paths: Iterable[str | Path], say: Callable[[str], None] = lambda s: None) -> CheckResult:
    total = CheckResult()
    for group in capture_sets(expand(paths)):
        r = judge_file(group[0], say) if len(group) == 1 else judge_capture(group, say)
        total.connections += r.connections
        total.skipped += r.skipped
        total.inputs += r.inputs
    return total


# -- the traffic run directory ---------------------------------------------------------------------------

def new_run_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"


def write_run(reports_dir: Path, result: CheckResult, *, command: str, run_id: str | None = None,
              extra: dict | None = None, connections: list[dict] | None = None) -> Path:
    """The traffic run directory of a check or an observe session (layout: module docstring)."""
    run_id = run_id or new_run_id()
    path = Path(reports_dir) / "traffic" / run_id
    path.mkdir(parents=True, exist_ok=True)
    conns = connections if connections is not None else [c.summary() for c in result.connections]
    atomic_write_text(path / "connections.jsonl", "".join(json.dumps(c, sort_keys=True) + "\n" for c in conns))
    atomic_write_text(path / "findings.jsonl",
                      "".join(json.dumps(f.to_json(), sort_keys=True) + "\n" for f in result.findings))
    meta = {"run_id": run_id, "kind": "traffic", "command": command, "suite_version": __version__,
            "inputs": result.inputs, "connections": len(conns), "findings": len(result.findings),
            "skipped": result.skipped, "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            **(extra or {})}
    atomic_write_text(path / "run.json", json.dumps(meta, indent=2, sort_keys=True))
    atomic_write_text(path / "report.md", render_markdown(result.findings, conns, title=f"{command} {run_id}"))
    rows = rows_from_findings([f.to_json() for f in result.findings], run_id)
    atomic_write_text(path / "report.html", render_traffic_page(f"Traffic judged: {command} {run_id}", rows, conns))
    return path


def endpoint_key(f: Finding | dict) -> str:
    d = f if isinstance(f, dict) else f.to_json()
    return f"{d['endpoint']} {d.get('product') or 'unknown'}@{d.get('version') or 'unknown'}"


def render_markdown(findings: list[Finding], connections: list[dict], title: str) -> str:
    counts = Counter((f.requirement_id, f.level, endpoint_key(f)) for f in findings)
    lines = [f"# Traffic judged: {title}", "",
             f"{len(connections)} connection(s), {sum(c.get('frames', 0) for c in connections)} frames, "
             f"{len(findings)} finding(s).", ""]
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
                     + (f"; stopped: {c['stopped']}" if c.get("stopped") else ""))
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
    result = judge_all(args.captures, say)
    for line in summary_lines(result):
        say(line)
    reports = Path(args.reports_dir) if getattr(args, "reports_dir", None) else default_reports_dir()
    path = write_run(reports, result, command="check")
    counts = Counter(f.level for f in result.findings)
    say(f"{len(result.connections)} connection(s) judged, {sum(c.frames for c in result.connections)} frames, "
        f"findings: {dict(counts) or 'none'}; results in {path}")
    return result.exit_code()


def load_findings(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise BadResults(f"{path} is unreadable ({exc}); re-run `check`") from None
