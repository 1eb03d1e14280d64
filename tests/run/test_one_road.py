"""One road for a broker (issue #37): a `--broker` URL is parsed once, where it enters the suite
(`conformance.brokers.resolve`), on its whole way to the sockets of every process of the run: the handle
carries the parsed `BrokerAddress`, the workers rebuild it from the fields of the broker's description, and the
peer connects from the object. This test counts the parses of the URL over a full `amqp-conformance run`
(and `pytest --broker`) against the reference broker, in this process and with two pytest-xdist workers
(`url_probe` records the parses of each process of the run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import EXIT_OK
from conformance.reference.listener import ReferenceBroker

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CASES = ["2.6.8/1", "2.7.4/1", "2.6.7/1"]


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """The file every parse of a URL goes into, in this process and in the processes the run starts."""
    path = tmp_path / "parses.txt"
    monkeypatch.setenv("AMQPC_URL_PROBE", str(path))
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    import xdist.workermanage       # local workers get the sys.path xdist froze when it was imported, not ours
    monkeypatch.setattr(xdist.workermanage, "_sys_path", [str(HERE), *xdist.workermanage._sys_path])
    import url_probe
    url_probe.install(monkeypatch.setattr)
    return path


@pytest.mark.parametrize("workers", ["0", "2"])
def test_run_parses_the_broker_url_once(tmp_path, probe, workers, capsys):
    import url_probe
    with ReferenceBroker() as broker:
        needle = f"127.0.0.1:{broker.port}"
        code = main(["run", *CASES, "--broker", f"amqp://{needle}", "--reports-dir", str(tmp_path / "reports"),
                     "-n", workers, "--", "-p", "url_probe"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, out + err
    assert out.count(needle) >= len(CASES), "every case ran against the broker"
    counts = url_probe.parses(probe, needle)
    assert counts == {os.getpid(): 1}, f"the URL was parsed {counts} (pid: times); once is the road"
    if workers == "2":
        seen = {int(line.split()[0]) for line in probe.read_text().splitlines()}
        assert len(seen - {os.getpid()}) <= 2            # the workers parsed no URL of the broker's


def test_pytest_plugin_parses_the_broker_url_once(tmp_path, probe):
    import url_probe
    with ReferenceBroker() as broker:
        needle = f"127.0.0.1:{broker.port}"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "url_probe", "-p", "no:cacheprovider", "-q",
                               "--rootdir", str(REPO), "--pyargs", "conformance.suite", "--broker",
                               f"amqp://{needle}", *[a for c in CASES for a in ("--case", c)], "-n", "2"],
                              capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=os.environ.copy())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CASES)} passed" in proc.stdout, proc.stdout
    counts = url_probe.parses(probe, needle)
    assert sum(counts.values()) == 1, f"the URL was parsed {counts} (pid: times); once is the road"


def test_broker_and_profile_are_declared_once():
    """--broker and --profile are declared by conformance.options.add_broker_arguments alone; every command
    that takes them (and the pytest plugin) calls it."""
    import re
    declared, callers = [], []
    for path in sorted((REPO / "conformance").rglob("*.py")):
        text = path.read_text("utf-8")
        if re.search(r"""add(?:_argument|option)?\(\s*["']--(?:broker|profile)["']""", text):
            declared.append(path.relative_to(REPO).as_posix())
        if "add_broker_arguments(" in text:
            callers.append(path.relative_to(REPO).as_posix())
    assert declared == ["conformance/options.py"]
    assert set(callers) >= {"conformance/run/cli.py", "conformance/run/plugin.py", "conformance/faultproxy/cli.py",
                            "conformance/history/cli.py", "conformance/explore/cli.py"}
