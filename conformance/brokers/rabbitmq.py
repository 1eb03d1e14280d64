"""Managed RabbitMQ nodes: 3.10 from Debian bookworm (AMQP 1.0 plugin) on the host; 4.0 from Debian trixie and
4.3 from Debian testing (forky), native AMQP 1.0, each inside a debootstrap root of its suite (`ChrootRabbitMQ`),
because their Erlang needs a newer glibc. Bookworm's debootstrap has no script for forky: sid's is passed.

Each node is a throwaway: its own directory, node name, AMQP port, distribution port and epmd port, all on
127.0.0.1, configured only through RABBITMQ_* environment variables and a config file in its directory.
"""

from __future__ import annotations

import contextlib
import os
import socket
import resource
import shutil
import signal
import time
from pathlib import Path

from filelock import FileLock

from ..errors import BrokerStartFailed, PermissionProblem, ProvisionFailed
from ..peer import Peer, PeerError, Timeouts
from .managed import (
    ManagedBroker, NodeRecord, pid_alive, apt_install, cache_dir, debian_mirror, free_port, port_open, progress,
    require_root, run, run_command,
)

RABBIT_BIN = "/usr/lib/rabbitmq/bin"


def _raise_nofile():
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(65536, hard), hard))


class RabbitMQBase(ManagedBroker):
    profile_name = "rabbitmq-4"
    plugins = "[]."
    startup_timeout = 120.0
    version = ""

    def _node_env(self, data_dir: str, port: int, dist_port: int, epmd_port: int, node: str) -> dict:
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "HOME": data_dir,
            "RABBITMQ_NODENAME": node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "RABBITMQ_CONFIG_FILE": f"{data_dir}/rabbitmq.conf",
            "RABBITMQ_MNESIA_BASE": f"{data_dir}/mnesia",
            "RABBITMQ_LOG_BASE": f"{data_dir}/log",
            "RABBITMQ_LOGS": f"{data_dir}/log/rabbit.log",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{data_dir}/enabled_plugins",
            "RABBITMQ_PID_FILE": f"{data_dir}/rabbit.pid",
            # schedulers do not busy-wait: two throwaway nodes and the suite's workers share the cores (RabbitMQ's
            # advice for shared hosts); a busy-waiting node starves the other and stalls its answers
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1} "
                                                  "+sbwt none +sbwtdcpu none +sbwtdio none",
            "ERL_EPMD_PORT": str(epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }

    def _write_config(self, host_dir: Path, port: int) -> None:
        (host_dir / "log").mkdir(parents=True, exist_ok=True)
        (host_dir / "mnesia").mkdir(parents=True, exist_ok=True)
        (host_dir / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{port}\n"
            "loopback_users = none\n"
            "log.file.level = info\n"
            "log.console = false\n")
        (host_dir / "enabled_plugins").write_text(self.plugins + "\n")

    # the command prefix that runs a program in the node's environment (host or chroot)
    def _wrap(self, argv: list[str], env: dict) -> tuple[list[str], dict]:
        return argv, env

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        host_dir, data_dir = self._data_dirs(workdir)
        port = port or free_port()
        dist_port, epmd_port = free_port(), free_port()
        node = f"amqpc{port}@localhost"
        self._write_config(host_dir, port)
        env = self._node_env(data_dir, port, dist_port, epmd_port, node)
        argv, spawn_env = self._wrap([f"{RABBIT_BIN}/rabbitmq-server"], env)
        ctl, ctl_env = self._wrap([f"{RABBIT_BIN}/rabbitmqctl", "-n", node], env)
        diag, _ = self._wrap([f"{RABBIT_BIN}/rabbitmq-diagnostics", "-n", node], env)
        epmd, _ = self._wrap(["epmd", "-port", str(epmd_port)], env)
        self.tools = {"rabbitmqctl": ctl, "rabbitmq-diagnostics": diag, "epmd": epmd}
        self._epmd_port = epmd_port
        self.env = ctl_env
        self._rabbit_log = host_dir / "log" / "rabbit.log"
        progress(f"starting {self.kind} on 127.0.0.1:{port}")
        self._spawn(argv, spawn_env, workdir, preexec_fn=_raise_nofile)
        url = f"amqp://guest:guest@127.0.0.1:{port}"
        opened: dict = {}
        self.wait_ready(lambda: port_open(port) and _amqp_ready(url, opened), f"AMQP 1.0 open on port {port}")
        props = {str(k): v for k, v in (opened.get("properties") or {}).items()}
        return NodeRecord(name=node.split("@")[0], kind=self.kind, url=url, pid=self.process.pid,
                          workdir=str(workdir), started_at=time.time(), owner_pid=os.getpid(),
                          extra={"node": node, "epmd_port": epmd_port, "product": str(props.get("product", "RabbitMQ")),
                                 "version": str(props.get("version", self.version)), "tools": self.tools,
                                 "env": self.env})

    def _after_failed_start(self) -> None:
        stop_epmd(getattr(self, "_epmd_port", None))

    def _extra_logs(self):
        log = getattr(self, "_rabbit_log", None)
        return [log] if log is not None else []

    def _stop(self, node: NodeRecord) -> None:
        """A throwaway node is killed, not shut down: its directory goes anyway, and `rabbitmqctl shutdown`
        (an Erlang VM of its own, then the node's orderly stop) cost about 2.5 s of every run's wall time.
        Its own epmd is ended after it."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.process.wait(timeout=15)
        else:                           # a node this process did not start (e.g. `brokers down`)
            ctl = self.tools.get("rabbitmqctl")
            if ctl:
                with contextlib.suppress(Exception):
                    run_command([*ctl, "shutdown"], env=self.env, timeout=30)
        stop_epmd(node.extra.get("epmd_port"))

    def _data_dirs(self, workdir: Path) -> tuple[Path, str]:
        return workdir / "node", str(workdir / "node")


def _environ(pid: str) -> list[bytes]:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return []


def node_strays(port: int | None) -> list[int]:
    """The processes of a node's own Erlang distribution besides the node: its epmd (`epmd -daemon`, started by
    the node's VM on the node's own port, ERL_EPMD_PORT=port in its environment) and any rabbitmqctl /
    rabbitmq-diagnostics still running for it (their environment names the same port; one a pytest-xdist
    worker started just before it was stopped would otherwise start that epmd again). Never an epmd on
    another port (the system's on 4369, another node's)."""
    if not port or int(port) == 4369:
        return []
    mark = f"ERL_EPMD_PORT={int(port)}".encode()
    me = os.getpid()
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and int(p.name) != me
            and mark in _environ(p.name)]


def stop_epmd(port: int | None, wait: float = 5.0) -> list[int]:
    """End the node's own epmd and the Erlang tools still running for it (`node_strays`): SIGTERM, then
    SIGKILL after `wait`. `epmd -kill` is not enough: it refuses while a node is still registered and is never
    tried once the node is gone. Returns the pids it ended."""
    ours = node_strays(port)
    for pid in ours:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while any(pid_alive(p) for p in ours) and time.monotonic() < deadline:
        time.sleep(0.05)  # bounded-wait-ok: epmd exits within milliseconds of SIGTERM
    for pid in ours:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return ours


def orphan_epmds() -> list[tuple[int, int, str]]:
    """(pid, epmd port, node) of every epmd a managed node of this suite left behind: its environment is a
    managed node's (RABBITMQ_NODENAME amqpc<port>@localhost, a work directory of ours) and no other process
    names its port any more (no node's VM, starting or running, and no rabbitmqctl for it)."""
    epmds: dict[int, list] = {}
    users: set[int] = set()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        env = dict(item.split(b"=", 1) for item in _environ(p.name) if b"=" in item)
        port = env.get(b"ERL_EPMD_PORT", b"")
        if not port.isdigit() or int(port) == 4369:
            continue
        comm = ""
        with contextlib.suppress(OSError):
            comm = p.joinpath("comm").read_text().strip()
        node = env.get(b"RABBITMQ_NODENAME", b"").decode(errors="replace")
        ours = node.startswith("amqpc") and b"amqp-conformance-" in env.get(b"RABBITMQ_MNESIA_BASE", b"")
        if comm == "epmd" and ours:
            epmds.setdefault(int(port), []).append((int(p.name), node))
        elif comm != "epmd":
            users.add(int(port))
    return [(pid, port, node) for port, found in epmds.items() if port not in users for pid, node in found]


def _amqp_ready(url: str, opened: dict) -> bool:
    """The node completes SASL PLAIN and answers our open (stronger than `rabbitmqctl await_startup`: the
    AMQP 1.0 listener itself is up). The broker's open properties go into `opened`."""
    try:
        peer = Peer.connect(url, timeouts=Timeouts(frame=3.0, connect=1.0))
    except PeerError:
        return False
    try:
        remote = peer.handshake(sasl="PLAIN")
        opened["properties"] = remote.properties
        return True
    except PeerError:
        return False
    finally:
        peer.close()


class RabbitMQ310(RabbitMQBase):
    kind = "rabbitmq-3.10"
    description = "RabbitMQ 3.10.8 from Debian bookworm with the AMQP 1.0 plugin"
    profile_name = "rabbitmq-3"
    plugins = "[rabbitmq_amqp1_0]."
    version = "3.10.8"

    def provisioned(self) -> bool:
        return Path(f"{RABBIT_BIN}/rabbitmq-server").exists() and Path(
            "/usr/lib/rabbitmq/lib").exists() and any(Path("/usr/lib/rabbitmq/lib").glob(
                "rabbitmq_server-*/plugins/rabbitmq_amqp1_0*"))

    def provision(self) -> None:
        apt_install(["rabbitmq-server"], "provisioning rabbitmq-3.10")
        if not self.provisioned():
            raise ProvisionFailed("rabbitmq-server is installed but has no rabbitmq_amqp1_0 plugin; reinstall "
                                  "it with `apt-get install --reinstall rabbitmq-server`")


HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


class ChrootRabbitMQ(RabbitMQBase):
    """A RabbitMQ node from a Debian suite's debootstrap root (subclasses name the suite): the root is built
    once with debootstrap from the mirror apt already uses, cached as a tarball, and each node runs chrooted."""

    suite = ""
    script = ""              # debootstrap script when the suite has none of its own name (forky: sid's)

    @property
    def root(self) -> Path:
        return cache_dir() / f"{self.kind}-root"

    @property
    def tarball(self) -> Path:
        """The built root, compressed: what a CI cache keeps; unpacks in seconds."""
        return cache_dir() / f"{self.kind}-root.tar.gz"

    def provisioned(self) -> bool:
        return (self.root / "usr/lib/rabbitmq/bin/rabbitmq-server").exists()

    def provision(self) -> None:
        require_root(f"provisioning {self.kind} (debootstrap, chroot)")
        partial = self.root.with_name(self.root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        if self.tarball.exists():
            progress(f"unpacking the cached {self.suite} root {self.tarball}")
            try:
                run(["tar", "-xzf", str(self.tarball), "-C", str(partial)], timeout=600,
                    what=f"unpacking the cached {self.suite} root")
            except ProvisionFailed:
                progress("the cached tarball is unusable; building the root again")
                self.tarball.unlink()
                shutil.rmtree(partial, ignore_errors=True)
                return self.provision()
        else:
            apt_install(["debootstrap"], f"provisioning {self.kind}")
            mirror = debian_mirror()
            progress(f"debootstrap {self.suite} with rabbitmq-server from {mirror} (a few minutes, ~300 MB)")
            script = [self.script] if self.script else []
            run(["debootstrap", "--variant=minbase", "--include=rabbitmq-server", self.suite, str(partial), mirror,
                 *script], timeout=1800, what=f"debootstrap of Debian {self.suite} for {self.kind}")
            shutil.rmtree(partial / "var/cache/apt/archives", ignore_errors=True)
            (partial / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
            hosts = partial / "etc/hosts"
            if "localhost" not in (hosts.read_text() if hosts.exists() else ""):
                hosts.write_text(HOSTS)          # without a localhost line the node cannot reach its own epmd
            progress(f"caching the root as {self.tarball}")
            tmp = self.tarball.with_suffix(".partial")
            run(["tar", "-czf", str(tmp), "-C", str(partial), "."], timeout=900, what=f"packing the {self.suite} root")
            os.replace(tmp, self.tarball)
        if not (partial / "usr/lib/rabbitmq/bin/rabbitmq-server").exists():
            raise ProvisionFailed(f"the {self.suite} root has no rabbitmq-server; delete {self.tarball} and "
                                  "provision again")
        os.replace(partial, self.root)

    def _data_dirs(self, workdir: Path) -> tuple[Path, str]:
        name = workdir.name
        host_dir = self.root / "var/tmp" / name
        host_dir.mkdir(parents=True, exist_ok=True)
        self._chroot_dir = host_dir
        return host_dir, f"/var/tmp/{name}"

    def _wrap(self, argv: list[str], env: dict) -> tuple[list[str], dict]:
        pairs = [f"{k}={v}" for k, v in env.items()]
        return ["chroot", str(self.root), "/usr/bin/env", "-i", *pairs, *argv], {"PATH": os.environ.get(
            "PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        require_root(f"starting {self.kind} (it runs in a chroot)")
        with self._root_lock():            # claim a directory in the root, then make sure /proc is there
            self._data_dirs(workdir)
            self._mount_proc()
            self._name_this_host()
        return super()._start(workdir, port)

    def _name_this_host(self) -> None:
        """Map this machine's hostname to 127.0.0.1 in the root's /etc/hosts. The node looks its host's name
        up while it answers an AMQP open; unlisted, the lookup goes to the DNS server of the machine the root
        was built on, and when that does not answer the open waits the resolver's 5 s (seen as 1-3 unanswered
        opens per suite run on rabbitmq-4.0). Done at every start: the root is a cached tarball, the hostname
        belongs to the machine it runs on."""
        name = socket.gethostname()
        hosts = self.root / "etc" / "hosts"
        try:
            text = hosts.read_text() if hosts.exists() else ""
        except OSError:
            return
        if not name or any(name in line.split()[1:] for line in text.splitlines() if not line.startswith("#")):
            return
        if "localhost" not in text:
            text = HOSTS + text
        hosts.write_text(text.rstrip("\n") + f"\n127.0.0.1\t{name}\n")

    def _root_lock(self) -> FileLock:
        """Serialises claiming/releasing node directories and mounting/unmounting /proc across processes."""
        return FileLock(str(cache_dir() / f"{self.kind}-root.lock"), timeout=60)

    def _mount_proc(self) -> None:
        proc = self.root / "proc"
        if not (proc / "self").exists():
            proc.mkdir(exist_ok=True)
            result = run(["mount", "-t", "proc", "proc", str(proc)], timeout=30, check=False,
                         what=f"mounting /proc in the {self.suite} root", error=BrokerStartFailed)
            if result.returncode != 0:
                detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
                raise PermissionProblem(f"cannot mount /proc into {self.root} ({detail[0]}); run as root on a "
                                        "machine that allows mounts, or use rabbitmq-3.10 / a broker URL")

    def _after_stop(self) -> None:
        """The node's directory in the root holds rabbit.log: released once the logs were kept."""
        self._release_chroot()

    def _after_failed_start(self) -> None:
        super()._after_failed_start()
        self._release_chroot()

    def release_shared(self) -> None:
        self._release_chroot()

    def _release_chroot(self) -> None:
        """Remove this node's directory inside the root, and stale ones (no running node, older than a
        startup could take); unmount /proc when no node uses the root any more."""
        with self._root_lock():
            chroot_dir = getattr(self, "_chroot_dir", None)
            if chroot_dir is not None:
                shutil.rmtree(chroot_dir, ignore_errors=True)
                self._chroot_dir = None
            live = {Path(r.workdir).name for r in NodeRecord.load_all() if r.kind == self.kind and pid_alive(r.pid)}
            in_use = False
            for node_dir in (self.root / "var/tmp").glob("amqp-conformance-*"):
                age = time.time() - node_dir.stat().st_mtime
                if node_dir.name in live or age < self.startup_timeout + 60:
                    in_use = True
                else:
                    shutil.rmtree(node_dir, ignore_errors=True)
            if not in_use and (self.root / "proc/self").exists():
                with contextlib.suppress(Exception):
                    run_command(["umount", "-l", str(self.root / "proc")], timeout=10)


class RabbitMQ40(ChrootRabbitMQ):
    kind = "rabbitmq-4.0"
    description = "RabbitMQ 4.0.5 from Debian trixie (native AMQP 1.0), in a debootstrap root"
    profile_name = "rabbitmq-4"
    version = "4.0.5"
    suite = "trixie"


class RabbitMQ43(ChrootRabbitMQ):
    kind = "rabbitmq-4.3"
    description = "RabbitMQ 4.3 from Debian testing (forky, native AMQP 1.0), in a debootstrap root"
    profile_name = "rabbitmq-4"
    version = "4.3"
    suite = "forky"
    script = "/usr/share/debootstrap/scripts/sid"
