"""The order cases run in on pytest-xdist workers: a hint for the scheduler, never a change of what a case finds.

The own-node cases (alarms, queue limits) first, so that xdist's first batch of consecutive items gives them to
one worker, which runs them one after another on the broker's second node while the others run the rest; then
the others longest first, by their duration in a recent run (`expected_durations`), so that no long case is
left for the end while the other workers idle. Every worker orders alike (the durations come from the controller).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..results import RESULTS_FILE, read_records


def run_order(items: list, own_node, expected) -> list:
    """The own-node items first (in their order), then the others longest first by `expected(item)` (seconds
    or None: unknown ones after the known, in their order)."""
    rest = [i for i in items if not own_node(i)]
    rest.sort(key=lambda i: (expected(i) is None, -(expected(i) or 0.0)))
    return [i for i in items if own_node(i)] + rest


def order_items(items: list, expected: dict[str, float]) -> list:
    """pytest's case items in run order (`expected`: "<label> <case id>" -> seconds in a recent run)."""
    return run_order(items, lambda item: getattr(getattr(item, "case", None), "own_node", False),
                     lambda item: expected.get(pair_of(item)))


def expected_durations(reports_dir: Path, exclude: Path | None = None, look_back: int = 5) -> dict[str, float]:
    """"<label> <case id>" -> the case's duration in the newest of the last `look_back` runs under
    `reports_dir` that has it (run ids sort by time); empty when there are none. Used only to order cases."""
    runs = reports_dir / "runs"
    found: dict[str, float] = {}
    try:
        dirs = sorted((d for d in runs.iterdir() if d.is_dir() and d != exclude), reverse=True)[:look_back]
    except OSError:
        return found
    for run_dir in dirs:
        with contextlib.suppress(Exception):
            for record in read_records(run_dir / RESULTS_FILE):
                key = f"{record['broker']} {record['case_id']}"
                if key not in found and isinstance(record.get("duration_s"), (int, float)):
                    found[key] = float(record["duration_s"])
    return found


def pair_of(item) -> str:
    return f"{getattr(item, 'label', None)} {getattr(getattr(item, 'case', None), 'id', None)}"
