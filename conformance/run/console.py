"""What a run shows while it runs and when it ends, in verdicts.

One line per case as it finishes: the verdict word (coloured on a terminal), the case id, the broker, the
duration and, for anything but pass, the deciding reason (the violated requirement first when there is one;
"+N more findings" when the case recorded more than the deciding one, and below it one "also" line per other
finding). On a terminal a progress bar with the
count of each verdict stays at the bottom; in CI (the CI variable set) or when the output is not a terminal,
only plain lines are written, without colour. NO_COLOR turns colour off anywhere. At the end: the verdict
table (case x broker), the count of each verdict per broker, where the results are and what the exit code
says. With `json_stream` (`--json`), each record is also written there as one JSON object per line, and
nothing else is; the human lines then go to the other stream (stderr).

The console is fed by the run's controller (conformance.run.engine) and never decides anything.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from typing import TextIO

from ..errors import EXIT_CASE_ERROR, EXIT_MUST_FAILED
from ..verdict import ANSI_COLOUR as COLOURS, VERDICTS as ORDER, Verdict, exit_code
WIDTH = max(len(v) for v in ORDER)


class Console:
    def __init__(self, stream: TextIO | None = None, *, json_stream: TextIO | None = None,
                 environ: dict | None = None, summary: bool = True, noun: str = "broker"):
        self.out = stream if stream is not None else sys.stdout
        self.json = json_stream
        env = os.environ if environ is None else environ
        isatty = getattr(self.out, "isatty", lambda: False)()
        self.live = isatty and not env.get("CI")                 # a person watching a terminal
        self.colour = self.live and not env.get("NO_COLOR")
        self.summary = summary         # the verdict table and the exit line (selfcheck prints its own matrix)
        self.noun = noun
        self.total = 0
        self.counts: Counter = Counter()
        self.t0 = time.monotonic()
        self._bar_shown = False
        self._label_width = 12

    # -- lines ----------------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        """A plain line (a broker started, where the results go)."""
        self._clear_bar()
        self._write(text + "\n")
        self._draw_bar()

    def begin(self, total: int, run_path, *, cases: int, targets: list[str]) -> None:
        self.total = total
        self.t0 = time.monotonic()
        self._label_width = max([len(t) for t in targets] + [6])
        brokers = f"{len(targets)} {self.noun}{'s' if len(targets) != 1 else ''}"
        self.note(f"amqp-conformance: {cases} case{'s' if cases != 1 else ''} x {brokers} "
                  f"({', '.join(targets)}) -> {run_path}")

    def case(self, record: dict) -> None:
        self.counts[record.get("verdict")] += 1
        if self.json is not None:
            self.json.write(json.dumps(record, sort_keys=True, default=str) + "\n")
            self.json.flush()
        self._clear_bar()
        self._write(self.case_line(record) + "\n")
        for line in other_findings(record):
            self._write(f"{'':<{WIDTH}}  also {line}\n")
        self._draw_bar()

    def case_line(self, record: dict) -> str:
        verdict = record.get("verdict", Verdict.ERROR.value)
        head = (f"{self._paint(verdict, f'{verdict:<{WIDTH}}')}  {record.get('case_id', '?'):<9} "
                f"{record.get('broker', '?'):<{self._label_width}} {record.get('duration_s') or 0:>6.2f} s")
        if verdict == Verdict.PASS:
            return head
        text = deciding_reason(record)
        if self.live:
            room = shutil.get_terminal_size((120, 24)).columns - (len(head) - self._paint_overhead(verdict)) - 3
            if room > 10 and len(text) > room:
                text = text[:room - 1] + "…"
        return f"{head}  {text}"

    # -- the end --------------------------------------------------------------------------------------------

    def end(self, outcome, *, interrupted: bool = False) -> None:
        self._clear_bar()
        records = outcome.records
        if self.summary and records:
            self._write("\n" + self.verdict_table(records) + "\n")
        recorded, scheduled = len(records), self.total
        if interrupted or recorded < scheduled:
            self._write(f"\n{recorded} of {scheduled} scheduled cases finished"
                        f"{' (interrupted)' if interrupted else ''}; the run is marked unfinished in run.json\n")
        path = outcome.run.path
        files = ["results.jsonl", "transcripts/"] + [name for name in ("junit.xml", "allure-results/")
                                                     if (path / name.rstrip("/")).exists()]
        self._write(f"\nresults: {path}/  ({', '.join(files)})\n")
        if self.summary and not interrupted:
            self._write(exit_line(records) + "\n")
        self._flush()

    def verdict_table(self, records: list[dict]) -> str:
        """Case x broker verdicts, then the count of each verdict per broker."""
        from ..cases import case_sort_key
        brokers = list(dict.fromkeys(r["broker"] for r in records))
        cells: dict[str, dict[str, str]] = defaultdict(dict)
        for r in records:
            cells[r["case_id"]][r["broker"]] = r["verdict"]

        def order(case_id: str):
            try:
                return (0, case_sort_key(case_id))
            except (ValueError, IndexError):
                return (1, case_id)

        widths = [max(len(b), WIDTH) for b in brokers]
        first = max([len(c) for c in cells] + [WIDTH])
        header = "  ".join(f"{b:<{w}}" for b, w in zip(brokers, widths)).rstrip()
        lines = [f"{'case':<{first}}  {header}"]
        for case_id in sorted(cells, key=order):
            row = [self._paint(v, f"{v:<{w}}") if v else " " * w
                   for v, w in ((cells[case_id].get(b, ""), w) for b, w in zip(brokers, widths))]
            lines.append((f"{case_id:<{first}}  " + "  ".join(row)).rstrip())
        per_broker = {b: Counter(r["verdict"] for r in records if r["broker"] == b) for b in brokers}
        lines.append("")
        lines.append(f"{'verdicts':<{first}}  {header}")
        for verdict in ORDER:
            if not any(per_broker[b][verdict] for b in brokers):
                continue
            cells_ = [f"{per_broker[b][verdict]:<{w}}" for b, w in zip(brokers, widths)]
            lines.append((self._paint(verdict, f"{verdict:<{first}}") + "  " + "  ".join(cells_)).rstrip())
        return "\n".join(lines)

    # -- the progress bar (terminals only) -------------------------------------------------------------------

    def _bar(self) -> str:
        done = sum(self.counts.values())
        total = max(self.total, done, 1)
        width = 24
        filled = int(width * done / total)
        counts = "  ".join(self._paint(v, f"{self.counts[v]} {v}") for v in ORDER if self.counts[v])
        return (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  {counts}  "
                f"{time.monotonic() - self.t0:.0f} s")

    def _draw_bar(self) -> None:
        if self.live and self.total:
            self._write(self._bar())
            self._bar_shown = True
        self._flush()

    def _clear_bar(self) -> None:
        if self._bar_shown:
            self._write("\r\x1b[2K")
            self._bar_shown = False

    # -- writing ---------------------------------------------------------------------------------------------

    def _paint(self, verdict: str, text: str) -> str:
        if not self.colour or verdict not in COLOURS:
            return text
        return f"\x1b[{COLOURS[verdict]}m{text}\x1b[0m"

    def _paint_overhead(self, verdict: str) -> int:
        return len(self._paint(verdict, "")) if self.colour else 0

    def _write(self, text: str) -> None:
        self.out.write(text)

    def _flush(self) -> None:
        try:
            self.out.flush()
        except (OSError, ValueError):
            pass


def deciding_reason(record: dict) -> str:
    """The reason a case got its verdict, one line: `<violated requirement>: <reason>`, and how many more
    findings the case recorded beyond the deciding one."""
    reason = " ".join(str(record.get("reason") or "").split())
    violated = record.get("violated")
    if violated and not reason.startswith(violated):
        reason = f"{violated}: {reason}"
    more = len(record.get("findings") or []) - 1
    if more > 0:
        reason += f" (+{more} more finding{'s' if more != 1 else ''})"
    return reason


def other_findings(record: dict) -> list[str]:
    """The findings beyond the deciding one (results.jsonl keeps the deciding one first), one line each:
    `<requirement> (<level>, <verdict it gives>): <reason>`."""
    out = []
    for f in (record.get("findings") or [])[1:]:
        reason = " ".join(str(f.get("reason") or "").split())
        out.append(f"{f.get('requirement')} ({f.get('level')}, {f.get('verdict')}): {reason}")
    return out


def exit_line(records: list[dict]) -> str:
    """What the exit code will say, in words."""
    code = exit_code(records)
    if code == EXIT_CASE_ERROR:
        errors = sum(1 for r in records if r.get("verdict") == Verdict.ERROR)
        return (f"exit {code}: {errors} case{'s' if errors != 1 else ''} ended in error: the run broke there, so "
                "the verdicts are incomplete (see the reasons above)")
    if code == EXIT_MUST_FAILED:
        must = sum(1 for r in records if r.get("verdict") == Verdict.FAIL and r.get("level") == "MUST")
        return f"exit {code}: {must} MUST-level case{'s' if must != 1 else ''} failed"
    return f"exit {code}: no MUST-level case failed"
