"""How cases are scheduled around the broker: nothing waits that need not."""

from __future__ import annotations

import contextlib

from conformance.brokers import BrokerHandle, load_profile
from conformance.casekit import executor
from conformance.cases import load_all
from conformance.options import RunOptions
from conformance.peer import parse_url
from conformance.verdict import Verdict

HOOK_CASES = {"2.5.6/4": "memory_alarm", "2.5.6/5": "disk_alarm", "2.5.6/6": "memory_alarm",
              "2.6.7/14": "queue_length_limit|queue_size_limit"}   # either limit: messages, else bytes


def test_a_case_needing_a_missing_hook_is_unsupported_before_the_lock_or_a_connection(monkeypatch):
    """The alarm and queue-limit cases on a profile without hooks: no broker lock asked for, no connection
    opened (the URL has nothing listening), the same verdict and one-line reason as before."""
    @contextlib.contextmanager
    def no_lock(*args, **kwargs):
        raise AssertionError("the broker lock was asked for")
        yield

    monkeypatch.setattr(executor, "broker_lock", no_lock)
    handle = BrokerHandle("nothing", parse_url("amqp://127.0.0.1:1"), load_profile("qpid-proton-c"))
    cases = load_all()
    for case_id, hook in HOOK_CASES.items():
        assert hook in cases[case_id].needs
        result = executor.run_case(cases[case_id], handle, RunOptions(frame_timeout=1.0, connect_timeout=1.0))
        assert result.verdict is Verdict.UNSUPPORTED, (case_id, result.reason)
        names = " or ".join(repr(h) for h in hook.split("|"))
        assert result.reason == (f"the broker profile has no {hook!r} hook" if "|" not in hook else
                                 f"the broker profile has none of the hooks {names}") + \
            "; add one to the profile to run this case", result.reason
        assert result.transcripts == [] and result.findings == []
        assert result.waited_s == {"timeout": 0.0, "quiet": 0.0}


class _Case:
    def __init__(self, own_node):
        self.own_node = own_node


def test_own_node_cases_go_to_the_second_node_and_wrapped_targets_stay():
    from conformance.run.targets import Brokers, Target
    started = Brokers()
    main, second, other = object(), object(), object()
    started.handles = {"b": main, "c": other}
    started.own_nodes = {"b": second}
    assert started.for_case(main, _Case(True)) is second
    assert started.for_case(main, _Case(False)) is main
    assert started.for_case(other, _Case(True)) is other          # no node of its own: the exclusive phase
    wrapped = object()                                            # e.g. selfcheck's proxy in front of b
    assert started.for_case(wrapped, _Case(True)) is wrapped


def test_the_alarm_and_queue_limit_cases_are_own_node_cases():
    cases = load_all()
    assert {c.id for c in cases.values() if c.own_node} == set(HOOK_CASES)
    assert all(c.own_node for c in cases.values() if c.exclusive)


def test_own_node_cases_come_first_so_that_one_worker_gets_them_all_then_the_longest():
    from conformance.run.order import run_order
    assert run_order(list(range(8)), lambda i: i in (3, 4, 7), lambda i: None) == [3, 4, 7, 0, 1, 2, 5, 6]
    took = {0: 0.5, 2: 6.0, 5: 1.0, 7: 9.0}
    assert run_order(list(range(8)), lambda i: i in (3, 4), took.get) == [3, 4, 7, 2, 5, 0, 1, 6]


def test_expected_durations_come_from_the_newest_runs_that_have_them(tmp_path):
    import json
    from conformance.run.order import expected_durations
    runs = tmp_path / "runs"
    for run_id, rows in (("20260101T000000Z-1", [("b", "1/1", 9.0), ("b", "1/2", 1.0)]),
                         ("20260102T000000Z-2", [("b", "1/1", 2.0)]), ("20260103T000000Z-3", [])):
        (runs / run_id).mkdir(parents=True)
        (runs / run_id / "results.jsonl").write_text("".join(
            json.dumps({"broker": b, "case_id": c, "verdict": "pass", "duration_s": d}) + "\n" for b, c, d in rows))
    assert expected_durations(tmp_path, exclude=runs / "20260103T000000Z-3") == {"b 1/1": 2.0, "b 1/2": 1.0}
    assert expected_durations(tmp_path / "nothing") == {}


class _Node:
    def __init__(self, name):
        from types import SimpleNamespace
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices):
        self.sent.append(list(indices))

    def shutdown(self):
        self.shutting_down = True


def _scheduler(workers, own_ids, maxschedchunk=None):
    from types import SimpleNamespace
    from conformance.run.order import own_node_scheduler
    config = SimpleNamespace(getvalue=lambda name: {"tx": [], "px": []}.get(name, []),
                             getoption=lambda name: maxschedchunk if name == "maxschedchunk" else None,
                             option=SimpleNamespace(numprocesses=workers, dist="load", tx=[]))
    import xdist.scheduler.load as load
    original = load.parse_tx_spec_config
    load.parse_tx_spec_config = lambda config: ["popen"] * workers
    try:
        return own_node_scheduler(config, None, own_ids)
    finally:
        load.parse_tx_spec_config = original


def _first_batches(workers, collection, own_ids, maxschedchunk=None):
    from xdist.scheduler import LoadScheduling
    sched = _scheduler(workers, own_ids, maxschedchunk)
    assert isinstance(sched, LoadScheduling)
    nodes = [_Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    return nodes, sched


def test_with_four_workers_all_own_node_cases_go_to_one_worker_first():
    """xdist's own first batch (chunks of max(2, items_per_node // 4)) splits four own-node items over two
    of four workers; ours gives them all to the first and the usual chunk of the rest to the others."""
    own = ["2.5.6/4", "2.5.6/5", "2.5.6/6", "2.6.7/14"]
    collection = [f"conformance/cases/m.py::{c}[activemq-6.3.1]" for c in own] + \
        [f"conformance/cases/m.py::2.6.7/{i}[activemq-6.3.1]" for i in range(1, 13)] + \
        [f"conformance/cases/m.py::2.7.{i}/1[activemq-6.3.1]" for i in range(1, 20)]
    nodes, sched = _first_batches(4, collection, set(own))
    assert nodes[0].sent == [[0, 1, 2, 3]]
    chunk = max(len(collection) // 4 // 4, 2)
    assert [n.sent for n in nodes[1:]] == [[list(range(4 + k * chunk, 4 + (k + 1) * chunk))] for k in range(3)]
    assert sorted(sched.pending + [i for n in nodes for b in n.sent for i in b]) == list(range(len(collection)))
    # the check can fail: xdist's plain load scheduling splits them
    from xdist.scheduler import LoadScheduling
    plain_nodes, _ = _first_batches(4, collection, set())
    assert not set(range(4)) <= set(plain_nodes[0].sent[0])


def test_an_xdist_whose_load_scheduling_differs_keeps_its_own_scheduler(monkeypatch):
    """The scheduler uses internals of xdist's LoadScheduling (conformance.run.order.XDIST_INTERNALS): an xdist
    without one of them gets None (its own scheduler; the order is a hint), not an AttributeError mid-run."""
    from xdist.scheduler import LoadScheduling
    from conformance.run.order import XDIST_INTERNALS
    assert isinstance(_scheduler(4, {"x/1"}), LoadScheduling)
    assert "_send_tests" in XDIST_INTERNALS
    monkeypatch.delattr(LoadScheduling, "_send_tests")
    assert _scheduler(4, {"x/1"}) is None


def test_the_own_node_group_is_found_by_case_id_wherever_it_is():
    from conformance.run.order import case_id_of
    assert case_id_of("conformance/cases/alarms.py::2.5.6/4[activemq-5.15.15]") == "2.5.6/4"
    collection = [f"conformance/cases/m.py::x/{i}[b]" for i in range(12)]
    nodes, _ = _first_batches(3, collection, {"x/5", "x/9"})
    assert nodes[0].sent == [[5, 9]]


def test_a_real_xdist_session_with_four_workers_runs_the_own_node_group_in_one_worker(tmp_path):
    """The scheduler in a real pytest-xdist session (-n 4): every own-node item is run by the same worker
    process, wherever the group sits in the collection; the others spread over the workers."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    own = {"t3", "t7", "t11", "t15"}
    (tmp_path / "conftest.py").write_text(
        "import os, time, pytest\n"
        "from conformance.run.order import own_node_scheduler\n"
        f"OWN = {sorted(own)!r}\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        "    return own_node_scheduler(config, log, set(OWN))\n"
        "@pytest.fixture(autouse=True)\n"
        "def _where(request):\n"
        "    yield\n"
        "    with open(os.path.join(os.path.dirname(__file__), 'ran.txt'), 'a') as out:\n"
        "        out.write(f'{request.node.name} {os.getpid()}\\n')\n")
    (tmp_path / "test_x.py").write_text("import time\n" + "".join(
        f"def t{i}():\n    time.sleep(0.05)\n" for i in range(24)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "4", "-o", "python_functions=t*", "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = dict(line.split() for line in (tmp_path / "ran.txt").read_text().splitlines())
    assert len(ran) == 24
    assert len({ran[name] for name in own}) == 1, ran
    assert len(set(ran.values())) > 1, ran
