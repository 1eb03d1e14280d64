"""Managed brokers: provision once, start as throwaway loopback nodes, stop and clean up.

This module owns the lifecycle shared by every managed broker: the cache directory, a file lock around
provisioning, free loopback ports, bounded readiness waits, the state file that `brokers down` and
`brokers status` read, and cleanup at exit or on a signal. Importing it changes nothing: what starts nodes
(the run's `Brokers.start`, `brokers up`) calls `install_cleanup()` first, which stops this process's nodes
at exit and on SIGTERM/SIGHUP. `ManagedBroker` is the abstract lifecycle; the broker-specific steps live in
`rabbitmq`, `proton_c` and the JVM brokers.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import BrokerStartFailed, PermissionProblem, PortInUse, ProvisionFailed


def cache_dir() -> Path:
    path = Path(os.environ.get("AMQP_CONFORMANCE_CACHE", Path.home() / ".cache" / "amqp-conformance"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def state_dir() -> Path:
    path = cache_dir() / "nodes"
    path.mkdir(parents=True, exist_ok=True)
    return path


def logs_dir() -> Path:
    """Where the logs of stopped and failed nodes are kept (the last 20)."""
    path = cache_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def progress(message: str) -> None:
    print(f"[amqp-conformance] {message}", file=sys.stderr, flush=True)


_HANDED_OUT: set[int] = set()
_PORTS_LOCK = threading.Lock()


def free_port() -> int:
    """A loopback port free now, and never one this process handed out before: the nodes of a run start in
    parallel and bind their ports seconds later (a JVM), so two of them must not be given the same number (the
    second node then fails to bind its web or distribution port)."""
    with _PORTS_LOCK:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with contextlib.suppress(OSError):
        with socket.create_connection((host, port), timeout=0.5):
            return True
    return False


# Brokers start in parallel threads (the run's `Brokers.start`). A child forked by one thread inherits every file
# descriptor open at that moment until it execs; were one of them a file another thread is writing and then
# executes (an Artemis node's bin/artemis, copied and edited for each node), that exec would fail with ETXTBSY
# ("Text file busy"). So the process forks only while holding SPAWN_LOCK, and writes a file it may execute only
# while holding it too: no fork ever sees such a file open for writing. Every child the brokers package starts
# goes through `popen` or `run_command`.
SPAWN_LOCK = threading.RLock()


def popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen, its fork under SPAWN_LOCK (Popen returns once the child has exec'd)."""
    with SPAWN_LOCK:
        return subprocess.Popen(argv, **kwargs)


def run_command(argv: list[str], *, timeout: float, env: dict | None = None, text: bool = True,
                **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, timeout=...), its fork under SPAWN_LOCK; raises as it does
    (FileNotFoundError, subprocess.TimeoutExpired after killing the child)."""
    proc = popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text, env=env,
                 **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def write_executable_tree(write) -> None:
    """Run `write()` (it writes or copies files that will be executed) where no fork can happen (SPAWN_LOCK)."""
    with SPAWN_LOCK:
        write()


def run(argv: list[str], *, timeout: float, what: str, env: dict | None = None, check: bool = True,
        error=ProvisionFailed) -> subprocess.CompletedProcess:
    """Run a command with a bound; a failure raises `error` with the command's last output lines."""
    try:
        proc = run_command(argv, timeout=timeout, env=env)
    except FileNotFoundError:
        raise error(f"{what}: {argv[0]} is not installed; run `./dev setup all`") from None
    except PermissionError as exc:
        raise error(f"{what}: {argv[0]} cannot be run ({exc.strerror}); check its permissions") from None
    except subprocess.TimeoutExpired:
        raise error(f"{what}: `{' '.join(argv[:3])} ...` did not finish within {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise error(f"{what} failed (exit {proc.returncode}): {' | '.join(tail)}")
    return proc


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise PermissionProblem(f"{what} needs root (apt, chroot); run as root or point --broker at a running "
                                "broker URL instead")


_apt_updated = False


def apt_install(packages: list[str], what: str) -> None:
    """Install Debian packages that are missing (one `apt-get update` per process at most)."""
    global _apt_updated
    missing = [p for p in packages if run_command(["dpkg-query", "-W", "-f=${Status}", p],
                                                  timeout=60).stdout.strip() != "install ok installed"]
    if not missing:
        return
    require_root(what)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        progress("apt-get update")
        run(["apt-get", "update"], timeout=600, what=f"{what}: apt-get update", env=env)
        _apt_updated = True
    progress(f"apt-get install {' '.join(missing)}")
    run(["apt-get", "install", "-y", "--no-install-recommends", *missing], timeout=1200,
        what=f"{what}: apt-get install", env=env)


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian archive URI this machine's apt uses: the deb822 entry whose Suites include bookworm
    (else the first non-security entry), or the same from one-line sources.list files."""
    entries: list[tuple[list[str], list[str]]] = []          # (uris, suites)
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text(errors="replace")):
            fields: dict[str, list[str]] = {}
            for line in stanza.splitlines():
                if ":" in line and not line.startswith((" ", "\t", "#")):
                    key, value = line.split(":", 1)
                    fields[key.strip().lower()] = value.split()
            if fields.get("enabled", ["yes"])[0].lower() == "no":
                continue
            if "deb" in fields.get("types", ["deb"]) and fields.get("uris") and fields.get("suites"):
                entries.append((fields["uris"], fields["suites"]))
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]:
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                parts = [p for p in line.split("#", 1)[0].split() if not p.startswith("[")]
                if len(parts) >= 3 and parts[0] == "deb":
                    entries.append(([parts[1]], [parts[2]]))
    for wanted in (lambda suites: "bookworm" in suites,
                   lambda suites: any(not s.endswith("-security") for s in suites)):
        for uris, suites in entries:
            if wanted(suites) and uris[0].startswith(("http://", "https://", "file:/")):
                return uris[0]
    raise ProvisionFailed(f"cannot find a Debian mirror in {apt_dir}/sources.list*; configure apt first "
                          "(a deb822 entry with URIs and Suites)")


def port_free(port: int) -> bool:
    """Whether a broker could listen on the port now. SO_REUSEADDR, as servers bind: the connections of a node
    stopped a moment ago linger in TIME-WAIT for up to a minute and do not keep a new listener out."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def require_port_free(port: int, what: str) -> None:
    if not port_free(port):
        raise PortInUse(f"port {port} on 127.0.0.1 is in use, so {what} cannot listen on it; choose another "
                        "port or leave --port out to get a free one")


@dataclass
class NodeRecord:
    """What `brokers status` and `brokers down` need to know about a running node."""

    name: str
    kind: str
    url: str
    pid: int
    workdir: str
    started_at: float
    owner_pid: int
    extra: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.name}.json"

    def save(self) -> None:
        """Write the node file. It keeps no password: the URL is written without one (only `brokers status`
        reads it, and shows it redacted anyway; the running process keeps the full URL in memory). The file
        is readable by its owner only (0600), as it names the node's tools and environment."""
        data = asdict(self)
        data["url"] = _without_password(self.url)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data))
        os.replace(tmp, self.path)

    @classmethod
    def load_all(cls) -> list["NodeRecord"]:
        out = []
        for p in sorted(state_dir().glob("*.json")):
            with contextlib.suppress(ValueError, TypeError, OSError):
                out.append(cls(**json.loads(p.read_text())))
        return out


def _without_password(url: str) -> str:
    """amqp://user:secret@host:port -> amqp://user@host:port (anything else unchanged)."""
    scheme, sep, rest = url.partition("://")
    auth, at, hostpart = rest.rpartition("@")
    if not sep or not at or ":" not in auth:
        return url
    return f"{scheme}://{auth.split(':', 1)[0]}@{hostpart}"


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a child that exited but was not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


class ManagedBroker(abc.ABC):
    """The lifecycle of a managed node: subclasses implement provision(), provisioned(), _start() and _stop(),
    and may release what their nodes share (`release_shared`)."""

    kind = ""
    description = ""
    profile_name = ""
    startup_timeout = 90.0
    # a build of the broker's source on top of this release (conformance.brokers.source): the home its nodes run
    # from instead of the release's; only kinds whose start honours it say `runs_builds = True`
    run_home: Path | None = None
    runs_builds = False

    def __init__(self):
        self.node: NodeRecord | None = None
        self.log_path: Path | None = None
        self.tools: dict[str, list[str]] = {}
        self.env: dict[str, str] = {}
        self.process: subprocess.Popen | None = None

    # -- provisioning ----------------------------------------------------------------------------------

    @abc.abstractmethod
    def provision(self) -> None:
        """Install the broker into the cache (called under the provisioning lock, only when not provisioned)."""

    @abc.abstractmethod
    def provisioned(self) -> bool:
        """Whether the cache holds everything a node of this kind needs to start."""

    def ensure_provisioned(self) -> float:
        """Provision under a file lock (xdist workers, parallel runs); return seconds spent (0 if cached)."""
        if self.provisioned():
            return 0.0
        t0 = time.monotonic()
        lock = FileLock(str(cache_dir() / f"provision-{self.kind}.lock"))
        try:
            with lock.acquire(timeout=1800):
                if not self.provisioned():
                    progress(f"provisioning {self.kind} (first time only; cached in {cache_dir()})")
                    self.provision()
        except Timeout:
            raise ProvisionFailed(f"waited 30 min for another process provisioning {self.kind}; remove "
                                  f"{lock.lock_file} if no provisioning is running") from None
        return time.monotonic() - t0

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self, port: int | None = None) -> NodeRecord:
        """Provision if needed, then start a throwaway node on 127.0.0.1 (`port`, or a free one) and wait,
        bounded, until it speaks AMQP. A port that another process took meanwhile is retried (auto ports)."""
        self.ensure_provisioned()
        if port is not None:
            require_port_free(port, self.kind)
        for attempt in range(3):
            workdir = Path(tempfile.mkdtemp(prefix=f"amqp-conformance-{self.kind}-"))
            self.log_path = workdir / "broker.log"
            t0 = time.monotonic()
            try:
                node = self._start(workdir, port)
                break
            except PortRace:
                self._cleanup_failed(workdir)
                if port is not None:
                    raise PortInUse(f"port {port} on 127.0.0.1 was taken while {self.kind} started; choose "
                                    "another port or leave --port out") from None
                progress(f"{self.kind}: a port was taken meanwhile; retrying with new ports")
            except BaseException:
                self._cleanup_failed(workdir)
                raise
        else:
            raise BrokerStartFailed(f"{self.kind}: ports were taken by other processes three times in a row; "
                                    "retry, or stop what is grabbing loopback ports")
        node.extra["ready_seconds"] = round(time.monotonic() - t0, 2)
        node.extra["logs"] = [str(p) for p in [self.log_path, *self._extra_logs()] if p is not None]
        node.extra["managed"] = True
        node.save()
        self.node = node
        _RUNNING.append(self)
        return node

    def _cleanup_failed(self, workdir: Path) -> None:
        if self.process is not None:
            with contextlib.suppress(Exception):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.process.wait(timeout=10)
        with contextlib.suppress(Exception):
            self._keep_logs("failed-start", time.time())
        with contextlib.suppress(Exception):
            self._after_failed_start()
        shutil.rmtree(workdir, ignore_errors=True)
        self.process = None

    def _after_failed_start(self) -> None:
        """Subclass cleanup after a start that failed (e.g. a node's own epmd)."""

    def _after_stop(self) -> None:
        """Subclass cleanup after a stopped node's logs were kept (e.g. a directory holding one of them)."""

    def stop(self) -> None:
        node = self.node
        if node is None:
            return
        with contextlib.suppress(Exception):
            self._stop(node)
        with contextlib.suppress(Exception):
            self._keep_logs(node.name, node.started_at)
        with contextlib.suppress(Exception):
            self._after_stop()
        if self.process is not None:
            with contextlib.suppress(Exception):
                self.process.wait(timeout=15)
            with contextlib.suppress(Exception):
                os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(node.workdir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            node.path.unlink()
        self.node = None
        if self in _RUNNING:
            _RUNNING.remove(self)

    def _keep_logs(self, label: str, started_at: float) -> None:
        """Copy the node's logs to the cache's logs/ directory before its directory goes (last 20 kept)."""
        logs = logs_dir()
        text = self.log_tail(100000) or ("(the node wrote no log before it was stopped)"
                                         if label == "failed-start" else "")
        if text:
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(started_at))
            (logs / f"{self.kind}-{stamp}-{label}.log").write_text(text + "\n")
        for old in sorted(logs.glob("*.log"), key=lambda p: p.stat().st_mtime)[:-20]:
            old.unlink(missing_ok=True)

    def _spawn(self, argv: list[str], env: dict, workdir: Path, **kwargs) -> subprocess.Popen:
        with open(self.log_path, "ab") as log:
            self.process = popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 cwd=str(workdir), start_new_session=True, **kwargs)
        return self.process

    def wait_ready(self, check, what: str) -> None:
        """Poll `check()` until true, bounded by startup_timeout; fail with the log tail."""
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                if self._port_race():
                    raise PortRace()
                raise BrokerStartFailed(f"{self.kind} exited during startup (code {self.process.returncode}); "
                                        f"log tail: {self.log_tail(5, one_line=True)}")
            if check():
                return
            time.sleep(0.2)  # bounded-wait-ok: readiness polling with a deadline
        raise BrokerStartFailed(f"{self.kind} not ready ({what}) within {self.startup_timeout:.0f} s; log tail: "
                                f"{self.log_tail(5, one_line=True)}")

    def log_tail(self, lines: int = 40, one_line: bool = False) -> str:
        text = ""
        paths = [self.log_path] + list(self._extra_logs())
        for path in paths:
            if path is not None and Path(path).exists():
                text += Path(path).read_text(errors="replace")
        tail = text.strip().splitlines()[-lines:]
        if one_line:
            return " | ".join(t.strip() for t in tail) or "(the node wrote no log yet)"
        return "\n".join(tail)

    def _extra_logs(self):
        return []

    def _port_race(self) -> bool:
        """Whether the log says a listener could not bind (the node then exits during startup)."""
        text = self.log_tail(200).lower()
        return "eaddrinuse" in text or "address already in use" in text

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @abc.abstractmethod
    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        """Start a node in `workdir` (on `port`, or free ports) and return its record once it runs."""

    @abc.abstractmethod
    def _stop(self, node: NodeRecord) -> None:
        """Stop the node this object started."""

    def release_shared(self) -> None:
        """Release what the nodes of this kind share beyond their own directory, once none uses it (e.g. a
        chroot's node directories and its /proc mount); `brokers down` calls it after stopping a node of
        another process. Nothing by default."""


class PortRace(Exception):
    """The broker could not bind a port chosen as free a moment ago (another process took it)."""


_RUNNING: list[ManagedBroker] = []


def stop_all() -> None:
    for broker in list(_RUNNING):
        with contextlib.suppress(Exception):
            broker.stop()


def _on_signal(signum, frame):
    stop_all()
    raise SystemExit(128 + signum)


_cleanup_installed = False


def install_cleanup() -> None:
    """Stop this process's nodes at exit and on SIGTERM/SIGHUP (where no handler of another is installed).
    Called by what starts nodes, before it starts one; idempotent. The handlers can only be installed from
    the main thread: elsewhere the exit hook alone is."""
    global _cleanup_installed
    if _cleanup_installed:
        return
    _cleanup_installed = True
    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError):   # not in the main thread
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
