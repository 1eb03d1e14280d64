"""The broker handle a case works with: URL, profile, queues, preloading, hooks and identity, for any broker.

This module owns what the cases may ask of a broker beyond AMQP itself: a unique queue and its address,
creating / purging / deleting / preloading / inspecting queues, and the profile hooks (alarms, queue
limits), each run as the profile says (a command or an AMQP management call). A hook the profile lacks
raises `HookUnsupported` (the case reports unsupported). A handle carries its broker's parsed address
(`address`, a `conformance.peer.BrokerAddress`): every connection it or a case opens starts from that object,
never from a URL string. It never prints the address with its password: `redacted_url` is the printable form.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from ..peer import BrokerAddress, TLSOptions
from . import amqp_ops
from .broker_errors import HookFailed, HookUnsupported
from .profiles import Command, HttpCall, ManagementCall, Profile, expand, fill, fill_value, tools_needed

LIMIT_HOOKS = {"max_length": "queue_length_limit", "max_length_bytes": "queue_size_limit"}


def record_broker_identity(open_properties: dict | None, product: str | None = None,
                           version: str | None = None) -> tuple[str | None, str | None]:
    """(product, version) from the properties of a broker's `open` frame, falling back to the given ones.
    The peer layer calls this with `Open.properties`; keys may be str or Symbol, values any type."""
    props = {str(k): v for k, v in (open_properties or {}).items()}
    if props.get("product"):
        product = str(props["product"])
    if props.get("version"):
        version = str(props["version"])
    return product, version


class BrokerHandle:
    """A broker the suite talks to (managed node or external URL) plus its profile.

    `managed`: the ManagedBroker that owns the node in this process (None for URLs and xdist workers);
    `node`: the node's state record (workers get it from the controller; gives `alive()` and `log_tail()`).
    """

    def __init__(self, name: str, address: BrokerAddress, profile: Profile, *, tools: dict | None = None,
                 env: dict | None = None, product: str | None = None, version: str | None = None, managed=None,
                 node: dict | None = None):
        if not isinstance(address, BrokerAddress):
            raise TypeError(f"BrokerHandle takes a parsed BrokerAddress (conformance.peer.parse_url), not "
                            f"{type(address).__name__}")
        self.name = name
        self.address = _with_profile_credentials(address, profile)
        self.profile = profile
        self.tools = {**profile.commands, **(tools or {})}
        self.env = env
        self.product = product or profile.product
        self.version = version
        self.managed = managed
        self.node = node or {}
        self.tls = _tls_options(profile)
        self._existing: set[str] = set()

    def __repr__(self) -> str:
        return f"BrokerHandle({self.name}, {self.redacted_url})"

    # -- addressing and identity ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The address as a URL string, for a tool that takes one (carries the password: never print)."""
        return self.address.url()

    @property
    def redacted_url(self) -> str:
        return self.address.redacted()

    @property
    def host(self) -> str:
        return self.address.host

    @property
    def port(self) -> int:
        return self.address.port

    @property
    def sasl(self):
        return self.profile.sasl

    @property
    def sasl_mechanism(self) -> str | None:
        return self.profile.sasl_mechanism

    @property
    def hooks(self) -> dict:
        return self.profile.hooks

    @property
    def lock_key(self) -> str:
        return f"{self.address.host}-{self.address.port}"

    @property
    def disposable(self) -> bool:
        """A managed throwaway node: its queues vanish with it."""
        return bool(self.managed is not None or self.node.get("managed"))

    def record_identity(self, open_properties: dict | None) -> None:
        self.product, self.version = record_broker_identity(open_properties, self.product, self.version)

    def identify(self, timeout: float | None = None) -> None:
        """Connect once and record product/version from the broker's open (raises the peer's
        BrokerUnreachable / AuthenticationFailed errors, which carry their exit codes). `timeout` bounds
        the connect and every frame awaited: the run's --frame-timeout (RunOptions.frame_timeout)."""
        from ..peer import Peer, Timeouts
        from ..options import RunOptions
        timeout = RunOptions().frame_timeout if timeout is None else timeout
        peer = Peer.connect(self.address, timeouts=Timeouts(frame=timeout, connect=timeout), tls=self.tls)
        try:
            remote = peer.handshake(sasl=self.sasl_mechanism, container_id="amqp-conformance-identify")
            self.record_identity(remote.properties)
        finally:
            peer.close()

    # -- queues --------------------------------------------------------------------------------------------

    def unique_queue(self, prefix: str = "q") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def queue_address(self, queue: str, role: str) -> str:
        return self.profile.queue_address(queue, role, existing=queue in self._existing)

    def create_queue(self, queue: str, **limits) -> None:
        """Make sure `queue` exists. With limits (max_length=N, max_length_bytes=N) the matching hook
        declares it; without, the profile's `queues.create` action runs ("auto": attaching creates it)."""
        limits = {k: v for k, v in limits.items() if v is not None}
        unknown = sorted(set(limits) - set(LIMIT_HOOKS))
        if unknown:
            raise TypeError(f"create_queue: unknown limit {unknown[0]!r}; limits are {', '.join(LIMIT_HOOKS)}")
        if limits:
            hook = LIMIT_HOOKS["max_length_bytes" if "max_length_bytes" in limits else "max_length"]
            self.run_hook(hook, queue=queue, **limits)
            self._existing.add(queue)
            return
        action = self._queue_action("create")
        if action not in (None, "auto"):
            self._run(action, "create queue", queue=queue)
            self._existing.add(queue)

    def _queue_action(self, what: str):
        """The profile's action for a queue operation, or None when it has none or needs an unknown tool."""
        action = self.profile.queue_action(what)
        return action if action is None or isinstance(action, str) or self._runnable(action) else None

    def delete_queue(self, queue: str) -> None:
        """Delete the queue as the profile says. On a managed throwaway node a command-line delete is
        skipped (the node and its queues are thrown away; each CLI call costs a second)."""
        action = self._queue_action("delete")
        if action is None or (self.disposable and isinstance(action, Command)):
            return
        self._run(action, "delete queue", queue=queue)
        self._existing.discard(queue)

    def purge_queue(self, queue: str) -> int | None:
        """Remove every message; returns how many when known. Default: drain it over AMQP."""
        action = self._queue_action("purge") or "drain"
        if action == "drain":
            return amqp_ops.drain(self._endpoint(), self.queue_address(queue, "source"))
        reply = self._run(action, "purge queue", queue=queue)
        if isinstance(reply, amqp_ops.ManagementReply) and isinstance(reply.body, dict):
            count = reply.body.get("message_count")
            return int(count) if count is not None else None
        return None

    def queue_depth(self, queue: str, *, quick: bool = False) -> int | None:
        """Messages in the queue, or None when the profile has no `queues.depth` action (`quick`: nor one
        other than a command-line tool)."""
        action = self._queue_action("depth")
        if action is None or (quick and isinstance(action, Command)):
            return None
        reply = self._run(action, "queue depth", queue=queue)
        if isinstance(reply, amqp_ops.ManagementReply):
            body = reply.body if isinstance(reply.body, dict) else {}
            return int(body.get("message_count", 0))
        if isinstance(reply, HttpReply):           # Broker-J REST (queueDepthMessages), Jolokia read (value)
            body = reply.body if isinstance(reply.body, dict) else {}
            body = {**body, **(body.get("statistics") or {})}
            return int(next((body[k] for k in ("queueDepthMessages", "value", "message_count") if k in body), 0))
        for line in reply.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == queue and parts[-1].isdigit():
                return int(parts[-1])
        return 0

    def preload(self, queue: str, n: int | list[bytes], body: bytes | None = None, timeout: float = 30.0) -> list[bytes]:
        """Put messages on the queue and wait until the broker accepted each: `n` messages (body `body`,
        default "<queue>#<i>") or the given list of bodies. Returns the bodies sent."""
        bodies = list(n) if not isinstance(n, int) else [body if body is not None else f"{queue}#{i}".encode()
                                                          for i in range(n)]
        if not bodies:
            return bodies
        action = self._queue_action("preload") or "amqp"
        if action == "amqp":
            amqp_ops.publish(self._endpoint(timeout), self.queue_address(queue, "target"), bodies)
        else:
            self._run(action, "preload", queue=queue, count=len(bodies), body=bodies[0].decode(errors="replace"))
        return bodies

    # -- hooks ---------------------------------------------------------------------------------------------

    def has_hook(self, name: str) -> bool:
        """The profile has the hook and every tool its commands use is known (a managed broker's own
        rabbitmqctl, or the profile's [commands]); otherwise cases needing it are unsupported."""
        from .profiles import HOOKS
        keys = HOOKS.get(name, (name,))
        return self.profile.has_hook(name) and all(self._runnable(self.profile.hooks[k]) for k in keys)

    def _runnable(self, action) -> bool:
        return tools_needed(action) <= set(self.tools)

    def run_hook(self, name: str, **params):
        """Run a hook by its profile key (e.g. "queue_length_limit", "memory_alarm_raise") or, for the paired
        alarm hooks, by hook name plus on=True/False. Raises HookUnsupported when the profile lacks it."""
        if name in ("memory_alarm", "disk_alarm"):
            on = params.pop("on", True)
            name = f"{name}_{'raise' if on else 'clear'}"
        action = self.profile.hooks.get(name)
        if action is None or not self._runnable(action):
            hook = name.rsplit("_raise", 1)[0].rsplit("_clear", 1)[0]
            raise HookUnsupported(hook, self.profile.name)
        return self._run(action, name, **params)

    def set_alarm(self, kind: str, on: bool, timeout: float = 30.0) -> None:
        """Raise or clear the memory/disk alarm and, when the profile has `alarm_wait`, wait (bounded) until
        the broker reports it so."""
        self.run_hook(f"{kind}_alarm", on=on)
        check = self.profile.hooks.get("alarm_wait")
        if check is None or not self._runnable(check):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self._run(check, "alarm status")
            text = (out.stdout if hasattr(out, "stdout") else str(out.body)).lower()
            if (kind in text) == on:
                return
            time.sleep(0.5)  # bounded-wait-ok: waiting for the broker to report the alarm, with a deadline
        raise HookFailed(f"the {kind} alarm did not {'appear' if on else 'clear'} within {timeout:.0f} s")

    # -- running profile actions ---------------------------------------------------------------------------

    answer_timeout: float | None = None    # each answer a housekeeping conversation awaits: the run's --frame-timeout

    def _endpoint(self, timeout: float = 30.0) -> amqp_ops.Endpoint:
        return amqp_ops.Endpoint(self.address, self.sasl_mechanism, self.tls, timeout, self.answer_timeout)

    def _run(self, action, what: str, **values):
        if isinstance(action, ManagementCall):
            path = fill(action.path, {k: quote(str(v), safe="") for k, v in values.items()})
            return amqp_ops.management(self._endpoint(), action.method, path, fill_value(action.body, values),
                                       action.ok)
        if isinstance(action, HttpCall):
            return http_action(self.tools["http"], action, what, values)
        if not isinstance(action, Command):
            raise HookFailed(f"{what}: the profile's action {action!r} cannot be run here")
        argv = expand(action, self.tools, **values)
        missing = [p for p in argv if p.startswith("{") and p.endswith("}")]
        if missing:
            raise HookFailed(f"{what}: the profile does not say what {missing[0]} is; add it under [commands] "
                             f"(e.g. rabbitmqctl = [\"rabbitmqctl\", \"-n\", \"rabbit@host\"])")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HookFailed(f"{what}: `{argv[0]}` could not run ({exc}); check the profile's command") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
            raise HookFailed(f"{what} failed (exit {proc.returncode}): {' | '.join(tail)}")
        return proc

    # -- health --------------------------------------------------------------------------------------------

    def alive(self) -> bool:
        if self.managed is not None:
            return self.managed.alive()
        pid = self.node.get("pid")
        if pid:
            from .managed import pid_alive
            return pid_alive(int(pid))
        return True

    @property
    def pid(self) -> int | None:
        """The node's process id (managed nodes; workers know it from the node record), else None."""
        pid = self.node.get("pid")
        if pid is None and self.managed is not None and self.managed.process is not None:
            pid = self.managed.process.pid
        return int(pid) if pid else None

    def log_tail(self, lines: int = 50) -> str:
        if self.managed is not None:
            return self.managed.log_tail(lines)
        text = ""
        for path in self.node.get("logs", []):
            if Path(path).exists():
                text += Path(path).read_text(errors="replace")
        return "\n".join(text.strip().splitlines()[-lines:])


class HttpReply:
    """What an HTTP management action returned (`stdout` is the body as text, for `alarm_wait` checks)."""

    def __init__(self, status: int, body):
        self.status = status
        self.body = body
        self.stdout = body if isinstance(body, str) else json.dumps(body)


def http_action(tool: list[str], action: HttpCall, what: str, values: dict) -> HttpReply:
    """Run an HTTP management call against the "http" tool (base URL, then key=value settings)."""
    from urllib.parse import unquote, urlsplit, urlunsplit
    from .jvm import http
    settings = dict(part.split("=", 1) for part in tool[1:] if "=" in part)
    password_env = settings.pop("password_env", None)
    up_within = float(settings.pop("up_within_s", 0) or 0)      # a node whose web server may still be starting
    values = {**settings, **values}
    base = urlsplit(tool[0])
    user = unquote(base.username) if base.username else None
    password = unquote(base.password) if base.password else (os.environ.get(password_env) if password_env else None)
    netloc = base.hostname + (f":{base.port}" if base.port else "")
    url = urlunsplit((base.scheme, netloc, base.path.rstrip("/"), "", "")) + fill(
        action.path, {k: quote(str(v), safe="") for k, v in values.items()})
    deadline = time.monotonic() + up_within
    while True:
        status, body = http(action.method, url, fill_value(action.body, values), user=user, password=password,
                            headers={"Origin": f"{base.scheme}://localhost"})
        if status != 0 or time.monotonic() >= deadline:
            break
        time.sleep(0.1)  # bounded-wait-ok: the management endpoint of a node just started is coming up, with a deadline
    if status not in action.ok:
        detail = body if isinstance(body, str) else json.dumps(body)
        raise HookFailed(f"{what}: {action.method} {base.path.rstrip('/')}{fill(action.path, values)} answered "
                         f"{status or 'nothing'} ({detail.strip()[:200]})")
    # a Jolokia reply carries its own status per request (an `ok` of the action accepts it, e.g. 404)
    replies = body if isinstance(body, list) else [body]
    for reply in replies:
        if isinstance(reply, dict) and "request" in reply and reply.get("status") not in action.ok:
            raise HookFailed(f"{what}: the management call failed ({str(reply.get('error'))[:200]})")
    return HttpReply(status, body)


def _with_profile_credentials(address: BrokerAddress, profile: Profile) -> BrokerAddress:
    """Add the profile's SASL user (and the password from its environment variable) to an address without one."""
    sasl = profile.sasl
    if not sasl.user or address.user is not None:
        return address
    password = os.environ.get(sasl.password_env, "") if sasl.password_env else None
    return address.with_credentials(sasl.user, password)


def _tls_options(profile: Profile) -> TLSOptions | None:
    t = profile.tls
    if not (t.enabled or t.ca_file or t.cert_file):
        return None
    return TLSOptions(ca_file=t.ca_file, cert_file=t.cert_file, key_file=t.key_file, verify=t.verify,
                      server_hostname=t.server_hostname)
