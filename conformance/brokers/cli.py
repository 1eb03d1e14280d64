"""`amqp-conformance brokers list|up|down|status|provision`: managed brokers for people exploring by hand.

`up` starts a node and leaves it running (its URL is printed and kept in the cache's state files) until
`down` stops it; `status` lists running nodes; `provision` installs what the managed brokers need.
"""

from __future__ import annotations

import os
import signal
import time

from ..errors import UsageError
from .managed import NodeRecord, pid_alive


def register(sub) -> None:
    p = sub.add_parser("brokers", help="list, provision, start, stop managed brokers")
    p.add_argument("action", choices=["list", "up", "down", "status", "provision"])
    p.add_argument("names", nargs="*", help="managed broker names (default for up: qpid-proton-c; provision: all)")
    p.add_argument("--all", action="store_true", help="every managed broker")
    p.set_defaults(func=cmd_brokers)


def cmd_brokers(args) -> int:
    from . import DEFAULT_BROKER, MANAGED
    names = list(MANAGED) if getattr(args, "all", False) else list(args.names)
    for n in names:
        if n not in MANAGED:
            raise UsageError(f"unknown managed broker {n!r}; use one of {', '.join(MANAGED)}")
    if args.action == "list":
        for name, cls in MANAGED.items():
            b = cls()
            state = "provisioned" if b.provisioned() else "not provisioned"
            default = " (default)" if name == DEFAULT_BROKER else ""
            print(f"{name:<15} {state:<16} {cls.description}{default}")
        return 0
    if args.action == "provision":
        for name in names or list(MANAGED):
            seconds = MANAGED[name]().ensure_provisioned()
            print(f"{name}: {'provisioned in %.1f s' % seconds if seconds else 'already provisioned'}")
        return 0
    if args.action == "up":
        from . import resolve, start
        from .managed import _RUNNING
        for name in names or [DEFAULT_BROKER]:
            handle = start(resolve(name))
            node = handle.managed.node
            _RUNNING.remove(handle.managed)        # keep it running after this command exits
            node.owner_pid = 0
            node.save()
            print(f"{name}: {handle.redacted_url}  (ready in {node.extra.get('ready_seconds')} s; "
                  f"stop with `amqp-conformance brokers down {name}`)")
        return 0
    if args.action == "status":
        records = NodeRecord.load_all()
        if not records:
            print("no managed broker is running")
        for r in records:
            alive = "running" if pid_alive(r.pid) else "dead"
            print(f"{r.kind:<15} {r.name:<16} {alive:<8} {_redacted(r.url)}  up {time.time() - r.started_at:.0f} s")
        return 0
    if args.action == "down":
        stopped = 0
        for r in NodeRecord.load_all():
            if names and r.kind not in names:
                continue
            _stop_record(r)
            stopped += 1
        print(f"stopped {stopped} node(s)")
        return 0
    return 2


def _redacted(url: str) -> str:
    from ..peer import parse_url
    return parse_url(url).redacted()


def _stop_record(r: NodeRecord) -> None:
    import shutil
    import subprocess
    tools = r.extra.get("tools") or {}
    if "rabbitmqctl" in tools:
        subprocess.run([*tools["rabbitmqctl"], "shutdown"], capture_output=True, timeout=30,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if "epmd" in tools:
        subprocess.run([*tools["epmd"], "-kill"], capture_output=True, timeout=10,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if pid_alive(r.pid):
        try:
            os.killpg(r.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(r.workdir, ignore_errors=True)
    try:
        r.path.unlink()
    except FileNotFoundError:
        pass
