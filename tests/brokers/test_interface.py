"""Every kind of broker implements the one broker interface (`conformance.brokers.Broker`), and nothing
in the package probes a broker for its members (`hasattr` / `getattr(broker, ...)`)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers import Broker, BrokerHandle, HookUnsupported, load_profile
from conformance.brokers.interface import Broker as BrokerProtocol
from conformance.peer import parse_url
from conformance.faultproxy.handle import ProxiedBroker
from conformance.reference.handle import ReferenceBrokerHandle

PACKAGE = Path(brokers.__file__).resolve().parents[1]
MEMBERS = [name for name in dir(BrokerProtocol) if not name.startswith("_")] + ["name", "product", "version"]


def _check(handle) -> None:
    assert isinstance(handle, Broker)
    for member in MEMBERS:
        assert member in dir(handle) or member in vars(handle), f"{type(handle).__name__} lacks {member}"
    for name, proto in inspect.getmembers(BrokerProtocol, inspect.isfunction):
        if name.startswith("_"):
            continue
        wanted = [p for p in inspect.signature(proto).parameters.values()]
        have = inspect.signature(getattr(handle, name)).parameters
        for p in wanted[1:]:                                     # every argument the interface names
            if p.kind is p.VAR_KEYWORD:
                assert any(q.kind is q.VAR_KEYWORD for q in have.values()), f"{type(handle).__name__}.{name}(**)"
            else:
                assert p.name in have, f"{type(handle).__name__}.{name} lacks the argument {p.name}"


def test_url_and_managed_handles_implement_the_interface():
    _check(BrokerHandle("x", parse_url("amqp://127.0.0.1:1"), load_profile("generic")))


def test_reference_broker_implements_the_interface(reference_broker):
    _check(reference_broker)
    assert reference_broker.has_hook("memory_alarm") and not reference_broker.has_hook("no_such_hook")


def test_proxied_broker_implements_the_interface_and_keeps_the_brokers_side(reference_broker):
    proxied = ProxiedBroker(reference_broker, None)
    try:
        _check(proxied)
        assert proxied.url != reference_broker.url and proxied.lock_key == reference_broker.lock_key
        assert proxied.name == reference_broker.name and proxied.product == reference_broker.product
        queue = proxied.unique_queue()
        proxied.preload(queue, 2)
        assert proxied.queue_depth(queue) == reference_broker.queue_depth(queue) == 2
    finally:
        proxied.stop_proxy()


def test_a_missing_hook_is_a_broker_level_error():
    handle = BrokerHandle("x", parse_url("amqp://127.0.0.1:1"), load_profile("generic"))
    with pytest.raises(HookUnsupported) as info:
        handle.set_alarm("memory", True)
    assert info.value.hook == "memory_alarm"
    from conformance.casekit import CaseConclusion
    assert not isinstance(info.value, CaseConclusion), "the broker layer does not conclude cases"


def test_a_missing_hook_is_unsupported_for_the_case(reference_broker):
    """The runner maps HookUnsupported to the verdict `unsupported`."""
    from conformance.cases import load_all
    from conformance.casekit.executor import run_case

    class NoAlarms(ReferenceBrokerHandle):
        HOOKS = ("queue_length_limit",)

        def has_hook(self, name: str) -> bool:        # claims the hook but cannot run it
            return True

    broker = NoAlarms()
    try:
        alarm_cases = [c for c in load_all().values() if c.needs and any("alarm" in n for n in c.needs)]
        assert alarm_cases
        result = run_case(alarm_cases[0], broker)
    finally:
        broker.stop()
    assert result.verdict.value == "unsupported", result.reason
    assert "memory_alarm" in result.reason or "disk_alarm" in result.reason


BROKER_WORDS = ("broker", "handle", "self.broker", "self._broker", "base", "wrapped")


def test_no_duck_typing_on_brokers():
    """No `hasattr(broker, ...)` / `getattr(broker, ...)` in the package: brokers implement `Broker`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("hasattr", "getattr") and node.args:
                target = ast.unparse(node.args[0])
                if target in BROKER_WORDS:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert found == [], "\n".join(found)


def test_the_url_check_is_bounded_by_the_runs_frame_timeout():
    """A server that accepts and never speaks: brokers.start gives up after `timeout` (the run's
    --frame-timeout), with a one-line BrokerUnreachable, not after a fixed 10 s."""
    import socket
    import time

    from conformance.errors import BrokerUnreachable

    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(BrokerUnreachable) as info:
            brokers.start(brokers.resolve(f"amqp://127.0.0.1:{port}"), timeout=0.5)
        took = time.monotonic() - t0
    assert took < 3.0, f"the check took {took:.1f} s with a 0.5 s bound"
    assert "0.5 s (--frame-timeout)" in str(info.value) and "\n" not in str(info.value)


def test_python_m_conformance_brokers_runs_without_the_top_level_cli():
    """`python -m conformance.brokers` is the broker layer's own entry (it imports no layer above it)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "conformance.brokers", "nope"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    listed = subprocess.run([sys.executable, "-m", "conformance.brokers", "list"], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0 and "qpid-proton-c" in listed.stdout
