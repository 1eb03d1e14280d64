"""`amqp-conformance brokers list|up|down|status|provision`: managed brokers for people exploring by hand.

`up` starts a node and leaves it running (its redacted URL is printed) until `down` stops it; `status` lists running nodes from the state files
in the cache; `down` stops nodes that `up` started and stale ones whose owning run is gone (never a node a
live pytest run owns); `provision` installs what the managed brokers need, once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time

from ..errors import EXIT_OK, EXIT_USAGE, UsageError
from .managed import NodeRecord, logs_dir, pid_alive, progress


def register(sub) -> None:
    p = sub.add_parser("brokers", help="list, provision, start, stop managed brokers")
    p.add_argument("action", choices=["list", "up", "down", "status", "provision"])
    p.add_argument("names", nargs="*", help="managed broker names (default for up: qpid-proton-c; provision: all); "
                   "down also takes node names (as `up` and `status` print them) to stop only those nodes")
    p.add_argument("--all", action="store_true", help="every managed broker")
    p.add_argument("--tested", action="store_true", help="the managed brokers the suite's own tests use")
    p.add_argument("--series", default=None, metavar="NAME",
                   help="every release of a series, oldest first (artemis, qpid-broker-j, rabbitmq)")
    p.add_argument("--port", type=int, default=None, help="up: listen on this loopback port (default: a free one)")
    p.set_defaults(func=cmd_brokers)


def cmd_brokers(args) -> int:
    from . import DEFAULT_BROKER, MANAGED, TESTED, resolve, series
    names = list(MANAGED) if getattr(args, "all", False) else list(args.names)
    if getattr(args, "tested", False):
        names += list(TESTED)
    if getattr(args, "series", None):
        names += series(args.series)                 # UsageError for an unknown series
    nodes = {r.name for r in NodeRecord.load_all()} if args.action == "down" else set()
    for n in names:
        if n not in nodes:
            resolve(n)                               # UsageError (with a suggestion) for an unknown name
    port = getattr(args, "port", None)
    if port is not None and not (0 < port < 65536):
        raise UsageError(f"--port {port} is not a TCP port; use 1-65535")
    if args.action == "list":
        return _list(MANAGED, DEFAULT_BROKER)
    if args.action == "provision":
        return _provision(names or list(MANAGED))
    if args.action == "up":
        wanted = names or [DEFAULT_BROKER]
        if port is not None and len(wanted) > 1:
            raise UsageError("--port applies to one broker; start the others without it")
        return _up(wanted, port)
    if args.action == "status":
        return _status()
    if args.action == "down":
        return _down(names)
    return EXIT_USAGE


def _provision(names: list[str]) -> int:
    """Provision each (once); a broker that cannot be provisioned is one line, the others still are; exit 8
    when any failed."""
    from . import MANAGED
    from ..errors import ConformanceError, EXIT_PROVISION_FAILED
    failed = 0
    for name in dict.fromkeys(names):
        try:
            seconds = MANAGED[name]().ensure_provisioned()
        except ConformanceError as exc:
            if len(names) == 1:
                raise
            print(f"{name}: not provisioned: {exc.message}")
            failed = exc.exit_code
            continue
        print(f"{name}: {'provisioned in %.1f s' % seconds if seconds else 'already provisioned'}")
    return EXIT_PROVISION_FAILED if failed else EXIT_OK


def _list(managed, default) -> int:
    for name, cls in managed.items():
        state = "provisioned" if cls().provisioned() else "not provisioned"
        mark = " (default)" if name == default else ""
        print(f"{name:<20} {state:<16} {cls.description}{mark}")
    return EXIT_OK


def _up(names: list[str], port: int | None) -> int:
    from . import resolve, start
    from .managed import _RUNNING, install_cleanup
    install_cleanup()                          # a node interrupted while it starts is stopped
    for name in names:
        handle = start(resolve(name), port=port)
        node = handle.managed.node
        _RUNNING.remove(handle.managed)        # keep it running after this command exits
        node.owner_pid = 0
        node.save()
        account = " (user guest, RabbitMQ's default account)" if handle.address.user else ""
        print(f"{name}: {handle.redacted_url}{account}  {handle.product} {handle.version}, ready in "
              f"{node.extra.get('ready_seconds')} s; node {node.name}: stop it with "
              f"`amqp-conformance brokers down {node.name}` (or every {name} node: `brokers down {name}`)")
    return EXIT_OK


def _owner(r: NodeRecord) -> str:
    if r.owner_pid == 0:
        return "brokers up"
    return f"run pid {r.owner_pid}" if pid_alive(r.owner_pid) else "stale (its run is gone)"


def _status() -> int:
    records = NodeRecord.load_all()
    if not records:
        print("no managed broker is running")
    for r in records:
        alive = "running" if pid_alive(r.pid) else "dead"
        print(f"{r.kind:<15} {r.name:<14} {alive:<8} {_redacted(r.url):<36} up {time.time() - r.started_at:>6.0f} s  "
              f"owner: {_owner(r)}")
    print(f"logs of stopped nodes: {logs_dir()}")
    return EXIT_OK


def _down(names: list[str]) -> int:
    """Stop the nodes of these kinds or with these node names (all without names), never one a live run owns."""
    stopped, kept = 0, 0
    for r in NodeRecord.load_all():
        if names and r.kind not in names and r.name not in names:
            continue
        if r.owner_pid and pid_alive(r.owner_pid):
            kept += 1
            progress(f"leaving {r.kind} {r.name}: the run with pid {r.owner_pid} owns it and stops it itself")
            continue
        stop_record(r)
        stopped += 1
    print(f"stopped {stopped} node(s)" + (f"; {kept} owned by running test runs left alone" if kept else ""))
    return EXIT_OK


def _redacted(url: str) -> str:
    from ..peer import parse_url
    return parse_url(url).redacted()


def stop_record(r: NodeRecord) -> None:
    """Stop a node from its state record (another process started it): polite shutdown, then its process
    group, then its directories."""
    tools = r.extra.get("tools") or {}
    env = r.extra.get("env") or {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for tool, args, timeout in (("rabbitmqctl", ["shutdown"], 30), ("epmd", ["-kill"], 10)):
        if tool in tools and pid_alive(r.pid):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run([*tools[tool], *args], capture_output=True, timeout=timeout, env=env)
    if pid_alive(r.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(r.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20                 # a JVM takes a moment; then its group is killed
        while pid_alive(r.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # bounded-wait-ok: the node's process exiting after SIGTERM
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(r.pid, signal.SIGKILL)
    for mount in r.extra.get("mounts", []):      # a Java broker's tmpfs (its store / journal)
        subprocess.run(["umount", "-l", mount], capture_output=True, timeout=30)
    from .rabbitmq import stop_epmd            # the node's own epmd (not in its process group)
    stop_epmd(r.extra.get("epmd_port"))
    shutil.rmtree(r.workdir, ignore_errors=True)
    for log in r.extra.get("logs", []):        # a node inside the trixie root keeps its data there
        node_dir = os.path.dirname(os.path.dirname(log))
        if "/var/tmp/amqp-conformance-" in node_dir:
            shutil.rmtree(node_dir, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        r.path.unlink()
    from . import MANAGED
    if r.kind in MANAGED:                                    # e.g. the RabbitMQ nodes in a debootstrap root
        MANAGED[r.kind]().release_shared()
