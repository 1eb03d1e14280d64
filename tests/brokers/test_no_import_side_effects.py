"""Importing the package starts nothing and installs nothing: no signal handler, no exit hook. The run installs
the cleanup of its managed nodes itself (`brokers.install_cleanup`, called where nodes are started)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.brokers import MANAGED, ManagedBroker

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import atexit, json, signal, sys
SIGNALS = [s for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
for s in (signal.SIGTERM, signal.SIGHUP):   # as from a terminal, whatever this test runs under (nohup ignores SIGHUP)
    signal.signal(s, signal.SIG_IGN if "--nohup" in sys.argv and s == signal.SIGHUP else signal.SIG_DFL)
before = [signal.getsignal(s) for s in SIGNALS]
hooks = []
def register(f, *a, **k):   # our package's own exit hooks (libraries it imports may register theirs)
    if getattr(f, "__module__", "").startswith("conformance"):
        hooks.append(f.__qualname__)
atexit.register = register
import conformance.brokers, conformance.run, conformance.cli, conformance.pytest_plugin  # noqa: E401
changed = [s.name for s, b in zip(SIGNALS, before) if signal.getsignal(s) is not b]
if "--install" in sys.argv:
    conformance.brokers.install_cleanup()
    conformance.brokers.install_cleanup()
    after = [s.name for s, b in zip(SIGNALS, before) if signal.getsignal(s) is not b]
    print(json.dumps({"changed": changed, "hooks": hooks, "after": after}))
else:
    print(json.dumps({"changed": changed, "hooks": hooks}))
"""


def _probe(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60,
                         cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_importing_the_package_changes_no_signal_handler_and_registers_no_exit_hook():
    seen = _probe()
    assert seen == {"changed": [], "hooks": []}


def test_install_cleanup_installs_the_handlers_once():
    seen = _probe("--install")
    assert seen["after"] == ["SIGTERM", "SIGHUP"] and seen["hooks"] == ["stop_all"]


def test_install_cleanup_leaves_a_signal_someone_else_handles():
    """Under nohup SIGHUP is ignored on purpose: the run leaves it so (and still stops its nodes on SIGTERM)."""
    seen = _probe("--install", "--nohup")
    assert seen["after"] == ["SIGTERM"] and seen["hooks"] == ["stop_all"]


def test_managed_brokers_are_an_abc_every_kind_implements():
    assert getattr(ManagedBroker, "__abstractmethods__", None) >= {"provision", "provisioned", "_start", "_stop"}
    for name, cls in MANAGED.items():
        assert not cls.__abstractmethods__, f"{name} lacks {sorted(cls.__abstractmethods__)}"
        cls()                               # instantiable: nothing is started or provisioned by it
