"""The order cases run in on pytest-xdist workers: a hint for the scheduler, never a change of what a case finds.

The own-node cases (alarms, queue limits) first, and `own_node_scheduler` (pytest-xdist's load scheduling whose
first batch gives them all to the first worker, for any -n) makes one worker run them one after another on the
broker's second node while the others run the rest; then
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


def own_node_scheduler(config, log, own_node_ids: set[str]):
    """pytest-xdist's load scheduling (`-n N`, `--dist load`), except that its first batch gives every
    own-node item to the first worker and the others their usual chunk from the rest. xdist's own first
    batch is a chunk of max(2, items_per_node // 4) consecutive items per worker: with more than two workers
    that chunk is smaller than the own-node group, which then spreads over workers that wait on their
    node's exclusive lock. Node ids stay as they are (no `--dist loadgroup` "@group" suffix in junit names).
    `own_node_ids`: the case ids whose items go together (the case id is what precedes "[<target>]")."""
    from xdist.scheduler import LoadScheduling

    class OwnNodeFirst(LoadScheduling):
        def schedule(self) -> None:
            if self.collection is not None or not self._check_nodes_have_same_collection():
                return super().schedule()
            collection = next(iter(self.node2collection.values()))
            own = [i for i, nodeid in enumerate(collection) if case_id_of(nodeid) in own_node_ids]
            if not own or len(self.nodes) < 2 or len(collection) < 2 * len(self.nodes):
                return super().schedule()
            self.collection = collection
            grouped = set(own)
            self.pending[:] = [i for i in range(len(collection)) if i not in grouped]
            if self.maxschedchunk is None:
                self.maxschedchunk = len(collection)
            first, *others = self.nodes
            self.node2pending[first].extend(own)
            first.send_runtest_some(own)
            chunk = max(min((len(collection) // len(self.nodes)) // 4, self.maxschedchunk), 2)
            for node in others:
                self._send_tests(node, chunk)
            if not self.pending:
                for node in self.nodes:
                    node.shutdown()

    scheduler = OwnNodeFirst(config, log)
    if not all(hasattr(scheduler, name) for name in XDIST_INTERNALS):
        return None             # an xdist whose load scheduling differs: its own scheduler (a hint only)
    return scheduler


# what OwnNodeFirst uses of xdist's LoadScheduling beyond its documented hooks (checked, never assumed)
XDIST_INTERNALS = ("collection", "pending", "node2pending", "node2collection", "maxschedchunk",
                   "_check_nodes_have_same_collection", "_send_tests")


def case_id_of(nodeid: str) -> str:
    """The case id in a case item's node id (`conformance/cases/<module>.py::<case id>[<target>]`)."""
    name = nodeid.rpartition("::")[2]
    return name.partition("[")[0]
