"""The broker handle a case works with: URL, profile, queues, preloading and hooks, for any broker.

This module owns what the cases may ask of a broker beyond AMQP itself: a unique queue, its address,
preloading messages (over AMQP with our own peer), the queue depth and the profile hooks (alarms, queue
limits). A hook the profile lacks makes `has_hook` false, and the case reports unsupported.
"""

from __future__ import annotations

import subprocess
import time
import uuid

from ..errors import ConformanceError
from ..peer import Peer, PeerError, Timeouts, parse_url
from ..wire import Attach, Begin, Close, Data, Detach, Disposition, End, Flow, Source, Target, encode_message
from .profiles import Profile, expand


class HookFailed(ConformanceError):
    """A profile hook command failed (the case that needed it reports error)."""


class BrokerHandle:
    def __init__(self, name: str, url: str, profile: Profile, *, tools: dict | None = None, env: dict | None = None,
                 product: str | None = None, version: str | None = None, managed=None):
        self.name = name
        self.url = url
        self.address = parse_url(url)
        self.profile = profile
        self.tools = {**profile.commands, **(tools or {})}
        self.env = env
        self.product = product or profile.product
        self.version = version
        self.managed = managed
        self.tls = None
        self.sasl_mechanism = profile.sasl_mechanism
        self._existing: set[str] = set()

    def __repr__(self) -> str:
        return f"BrokerHandle({self.name}, {self.redacted_url})"

    @property
    def redacted_url(self) -> str:
        return self.address.redacted()

    @property
    def lock_key(self) -> str:
        return f"{self.address.host}-{self.address.port}"

    # -- queues --------------------------------------------------------------------------------------

    def unique_queue(self, prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def queue_address(self, queue: str, role: str) -> str:
        return self.profile.queue_address(queue, role, existing=queue in self._existing)

    def create_queue(self, queue: str, max_length: int | None = None) -> None:
        if max_length is not None:
            self.run_hook("queue_length_limit", queue=queue, max_length=max_length)
            self._existing.add(queue)

    def delete_queue(self, queue: str) -> None:
        """Queues are left on the broker (managed nodes are thrown away; deleting costs a CLI call each)."""

    def queue_depth(self, queue: str) -> int | None:
        if not self.profile.queue_depth:
            return None
        out = self._run(self.profile.queue_depth, "queue depth", queue=queue).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == queue and parts[-1].isdigit():
                return int(parts[-1])
        return 0

    def preload(self, queue: str, bodies: list[bytes], timeout: float = 30.0) -> None:
        """Publish `bodies` to the queue with our own peer and wait until the broker accepted each."""
        if not bodies:
            return
        peer = Peer.connect(self.url, timeouts=Timeouts(frame=timeout))
        try:
            peer.handshake(sasl=self.sasl_mechanism, container_id=f"amqp-conformance-preload-{uuid.uuid4().hex[:6]}")
            peer.send(Begin(next_outgoing_id=0, incoming_window=65535, outgoing_window=65535))
            peer.expect(Begin)
            peer.send(Attach(name=f"preload-{queue}", handle=0, role=False, snd_settle_mode=0, rcv_settle_mode=0,
                             source=Source(), target=Target(address=self.queue_address(queue, "target")),
                             initial_delivery_count=0))
            reply = peer.expect((Attach, Detach, End, Close))
            if not isinstance(reply.body, Attach):
                raise PeerError(f"the broker refused a publisher on {queue}: {reply.body}")
            link = peer.state.sessions[0].links[0]
            deadline = time.monotonic() + timeout
            sent = 0
            settled_ids: set[int] = set()
            while sent < len(bodies):
                if link.link_credit <= 0 or (peer.state.sessions[0].remote_incoming_window or 0) <= 0:
                    peer.expect(Flow, timeout=max(deadline - time.monotonic(), 0.1))
                    continue
                peer.transfer(0, 0, encode_message(Data(bodies[sent])))
                sent += 1
            while len(settled_ids) < len(bodies):
                d = peer.expect(Disposition, timeout=max(deadline - time.monotonic(), 0.1)).body
                last = d.last if d.last is not None else d.first
                for i in range(int(last) - int(d.first) + 1):
                    settled_ids.add(int(d.first) + i)
            peer.send(Close())
            try:
                peer.expect(Close, timeout=2.0)
            except PeerError:
                pass
        finally:
            peer.close()

    # -- hooks ---------------------------------------------------------------------------------------

    def has_hook(self, name: str) -> bool:
        return self.profile.has_hook(name)

    def run_hook(self, name: str, **values) -> subprocess.CompletedProcess:
        command = self.profile.hooks.get(name)
        if command is None:
            raise HookFailed(f"the profile {self.profile.name} has no {name!r} hook")
        return self._run(command, name, **values)

    def set_alarm(self, kind: str, on: bool, timeout: float = 30.0) -> None:
        self.run_hook(f"{kind}_alarm_{'raise' if on else 'clear'}")
        check = self.profile.hooks.get("alarm_wait")
        if not check:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self._run(check, "alarm status").stdout.lower()
            if (kind in out) == on:
                return
            time.sleep(0.5)  # bounded-wait-ok: waiting for the broker to report the alarm, with a deadline
        raise HookFailed(f"the {kind} alarm did not {'appear' if on else 'clear'} within {timeout:.0f} s")

    def _run(self, command: list, what: str, **values) -> subprocess.CompletedProcess:
        argv = expand(command, self.tools, **values)
        missing = [p for p in argv if p.startswith("{") and p.endswith("}")]
        if missing:
            raise HookFailed(f"hook {what}: the profile does not say what {missing[0]} is (add it under [commands])")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HookFailed(f"hook {what} could not run: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
            raise HookFailed(f"hook {what} failed (exit {proc.returncode}): {' | '.join(tail)}")
        return proc

    # -- health --------------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.managed.alive() if self.managed is not None else True

    def log_tail(self, lines: int = 40) -> str:
        return self.managed.log_tail(lines) if self.managed is not None else ""
