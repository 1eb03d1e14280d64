"""What the Java brokers (Qpid Broker-J, ActiveMQ Artemis) share: Maven resolution into the cache, a
throwaway loopback node with its own work directory, a bounded readiness wait on the AMQP port, a stop that
leaves no process behind, and calls to an HTTP management API.

Maven is used as the machine has it set up (its settings decide where artifacts come from); only the local
repository is moved under the cache directory, so a CI cache of that directory keeps the brokers. A missing
artifact (offline, or not served) is one line naming it (ProvisionFailed, exit 8).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from xml.sax.saxutils import escape

from ..errors import BrokerStartFailed, ProvisionFailed
from ..peer import Peer, PeerError, Timeouts
from . import diskfill
from .managed import SPAWN_LOCK, ManagedBroker, _without_password, cache_dir, port_open, progress, run_command

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


def maven_repo() -> Path:
    path = cache_dir() / "maven" / "repository"
    path.mkdir(parents=True, exist_ok=True)
    return path


def java_command() -> str:
    java = shutil.which("java")
    if java is None:
        raise ProvisionFailed("the Java brokers need Java 17 (`java` is not on PATH); run `./dev setup all` or "
                              "apt-get install openjdk-17-jre-headless")
    return java


def _mvn(args: list[str], what: str, timeout: float = 1800) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProvisionFailed(f"{what}: Maven (`mvn`) is not installed; run `./dev setup all` or apt-get install "
                              "maven")
    argv = [mvn, "-B", "-q", f"-Dmaven.repo.local={maven_repo()}", *args]
    try:
        proc = run_command(argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProvisionFailed(f"{what}: Maven did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
        missing = re.search(r"(?:Could not find artifact|could not be resolved:|Couldn't download artifact:) "
                            r"([\w.-]+:[\w.-]+(?::[\w.-]+){1,3})", output) \
            or re.search(r"([\w.-]+:[\w.-]+(?::[\w.-]+){1,3}) was not found in", output)
        if missing:
            raise ProvisionFailed(f"{what}: Maven cannot get artifact {missing.group(1)} (not in the local "
                                  "repository and not served by the remote one); provision where Maven Central is "
                                  "reachable, or use another release")
        lines = [ln for ln in output.splitlines() if "ERROR" in ln and ln.strip() != "[ERROR]"]
        reason = lines[0].replace("[ERROR]", "").strip()[:200] if lines else f"mvn exited {proc.returncode}"
        raise ProvisionFailed(f"{what}: Maven failed ({reason}); check the network and Maven's settings")


def artifact_path(coords: str) -> Path:
    """Where `group:artifact:version[:type[:classifier]]` lives in the local repository."""
    parts = coords.split(":")
    group, artifact, version = parts[:3]
    kind = parts[3] if len(parts) > 3 else "jar"
    classifier = f"-{parts[4]}" if len(parts) > 4 else ""
    return maven_repo().joinpath(*group.split("."), artifact, version, f"{artifact}-{version}{classifier}.{kind}")


def fetch_artifact(coords: str, what: str) -> Path:
    """One artifact (no dependencies), from the local repository or resolved with Maven."""
    path = artifact_path(coords)
    if not path.exists():
        progress(f"resolving {coords} with Maven")
        _mvn([f"{DEPENDENCY_PLUGIN}:get", f"-Dartifact={coords}", "-Dtransitive=false"], what)
    if not path.exists():
        raise ProvisionFailed(f"artifact {coords}: Maven reported success but {path} is missing; provision again")
    return path


def copy_dependencies(coords: list[str], dest: Path, what: str, exclude: tuple[str, ...] = ()) -> None:
    """The given artifacts with their runtime dependencies, as jars in `dest` (a generated POM listing them,
    `dependency:copy-dependencies`); `group:artifact:version:alone` takes the artifact without its
    dependencies; `exclude` (group:artifact) is left out of every artifact's dependencies. Replaces `dest` only
    when complete."""
    work = dest.with_name(dest.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    def dependency(c: str) -> str:
        group, artifact, version = (escape(p) for p in c.split(":")[:3])
        excluded = [e.split(":") for e in (["*:*"] if c.endswith(":alone") else exclude)]
        exclusions = "".join(f"<exclusion><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
                             "</exclusion>" for g, a in excluded)
        return (f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}"
                f"</version><exclusions>{exclusions}</exclusions></dependency>")

    deps = "".join(dependency(c) for c in coords)
    (work / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>amqp-conformance</groupId><artifactId>broker-classpath</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n")
    named = ", ".join(c.split(":alone")[0] for c in coords)
    progress(f"resolving {named} and their dependencies with Maven")
    try:
        _mvn(["-f", str(work / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies", "-DincludeScope=runtime",
              f"-DoutputDirectory={work / 'lib'}"], what)
    except ProvisionFailed:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(work / "lib", dest)
    shutil.rmtree(work, ignore_errors=True)


def amqp_open(url: str, sasl: str | None = "auto") -> dict | None:
    """The broker's open properties once it completes SASL and answers our open, else None."""
    try:
        peer = Peer.connect(url, timeouts=Timeouts(frame=3.0, connect=1.0))
    except PeerError:
        return None
    try:
        remote = peer.handshake(sasl=sasl, container_id="amqp-conformance-ready")
        return {str(k): v for k, v in (remote.properties or {}).items()}
    except PeerError:
        return None
    finally:
        peer.close()


def http(method: str, url: str, body=None, *, user: str | None = None, password: str | None = None,
         timeout: float = 30.0, headers: dict | None = None) -> tuple[int, object]:
    """One HTTP call with a JSON body (basic auth when given); (status, parsed JSON or text). Network
    failures come back as status 0 with the reason."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            status, raw = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(getattr(exc, "reason", exc))
    text = raw.decode(errors="replace")
    with contextlib.suppress(ValueError):
        return status, json.loads(text) if text.strip() else None
    return status, text


def redacted_tools(tools: dict[str, list[str]]) -> dict[str, list[str]]:
    """The tools as the node file keeps them: URLs without their passwords (the process keeps the full ones)."""
    return {name: [_without_password(part) if "://" in part else part for part in argv]
            for name, argv in tools.items()}


class JvmBroker(ManagedBroker):
    """A broker in a JVM: spawned in its own process group with a work directory of its own; ready when its
    AMQP port completes an open; stopped with SIGTERM, then SIGKILL after a bound, so no JVM outlives it."""

    startup_timeout = 120.0
    stop_timeout = 20.0
    ready_sasl = "PLAIN"
    _log_file: Path | None = None     # the broker's own log (shown beside ours when it fails)
    _tmpfs_dir: Path | None = None    # its store on a tmpfs of its own (the disk-alarm hook fills it)

    def _mount_store(self, path: Path, size_mb: int) -> bool:
        """Put the broker's store on a tmpfs of `size_mb` (unmounted when the node stops or fails)."""
        with SPAWN_LOCK:                      # diskfill forks `mount` itself (it also runs as a script)
            self._tmpfs_dir = path if diskfill.mount_tmpfs(path, size_mb) else None
        return self._tmpfs_dir is not None

    def _extra_logs(self):
        return [self._log_file] if self._log_file is not None else []

    def _after_failed_start(self) -> None:
        self._unmount()

    def _unmount(self) -> None:
        if self._tmpfs_dir is not None:
            with SPAWN_LOCK:
                diskfill.unmount(self._tmpfs_dir)
            self._tmpfs_dir = None

    def _java_env(self, workdir: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JAVA_", "CLASSPATH", "_JAVA"))}
        env["HOME"] = str(workdir)
        env["JAVA_HOME"] = str(Path(os.path.realpath(java_command())).parents[1])
        return env

    def _wait_amqp(self, url: str, port: int) -> dict:
        opened: dict = {}

        def ready() -> bool:
            if not port_open(port):
                return False
            props = amqp_open(url, self.ready_sasl)
            if props is None:
                return False
            opened.update(props)
            return True

        self.wait_ready(ready, f"AMQP 1.0 open on port {port}")
        return opened

    def _stop(self, node) -> None:
        try:
            self._stop_group()
        finally:
            self._unmount()

    def _stop_group(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            progress(f"{self.kind} did not stop within {self.stop_timeout:.0f} s of SIGTERM; killing it")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        # a JVM's children (none expected) go with the group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def wait_http(url: str, deadline_s: float, what: str, until=None, **auth) -> None:
    """Wait (bounded) until an HTTP endpoint answers 2xx (and `until(body)` holds, when given);
    BrokerStartFailed naming it otherwise."""
    deadline = time.monotonic() + deadline_s
    status, body = 0, None
    while time.monotonic() < deadline:
        status, body = http("GET", url, **auth, timeout=5)
        if 200 <= status < 300 and (until is None or until(body)):
            return
        time.sleep(0.3)  # bounded-wait-ok: a management endpoint coming up, with a deadline
    raise BrokerStartFailed(f"{what} did not answer at {url.split('@')[-1]} within {deadline_s:.0f} s "
                            f"(last status {status})")
