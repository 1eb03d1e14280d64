"""Managed ActiveMQ Classic nodes, one per release of a series (`activemq-<version>`), on Java 17.

Provisioning (idempotent, into the cache like Broker-J and Artemis) resolves `activemq-broker`,
`activemq-amqp` and `activemq-kahadb-store` of the release with their runtime dependencies, plus the slf4j
binding `slf4j-simple` of the same version as the release's own `slf4j-api`, as plain jars in one directory,
and compiles the suite's launcher (`launchers/ActiveMQNode.java`, around `BrokerService`) against them. The
Jolokia JVM agent (one jar, shared by every release) serves the node's MBeans over HTTP on loopback, as
ActiveMQ's web console serves them at `/api/jolokia`, so a managed node and a user's broker are driven by the
same profile (`activemq`).

The layout (what commit-level bisection reuses: swap jars in a copy of `lib/`, compile the launcher the same
way), under `<cache>/activemq/<version>/`:

    lib/            the release's jars (classpath `lib/*`), nothing else
    launcher/       ActiveMQNode.class, compiled against lib/, and source.sha256 (the hash of the source it was
                    compiled from: a changed launcher provisions the release again)
    jars.txt        the jar file names of lib/, one a line (written last: its presence means provisioned)

`classpath(home, run_home)` and `launcher_argv(...)` build the command line from that layout: the launcher of
`home`, then the jars of `run_home/lib` (default `home/lib`) in name order. A node: AMQP 1.0 on one
connector, SASL PLAIN for user `admin` (no anonymous access), a KahaDB store in the node's own directory (on
a small tmpfs of its own when root can mount one, which keeps the store's fsyncs cheap), MBeans without a
JMX connector (no RMI port), the broker-wide limits of ActiveMQ's shipped activemq.xml.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from ..errors import ProvisionFailed
from .jvm import JvmBroker, cache_dir, copy_dependencies, fetch_artifact, java_command, redacted_tools
from .managed import NodeRecord, free_port, progress, run

# oldest first: the releases whose activemq-amqp Maven Central serves (not 5.15.16, 5.17.7, 5.18.7, any 6.0.x)
VERSIONS = ("5.15.15", "5.16.7", "5.17.6", "5.18.6", "5.19.1", "6.1.7", "6.1.8", "6.2.2", "6.3.1")
# (not activemq-jaas: Maven Central does not serve it for 6.2.2; the launcher needs none of it)
MODULES = ("activemq-broker", "activemq-amqp", "activemq-kahadb-store")
JOLOKIA = "org.jolokia:jolokia-agent-jvm:2.1.2:jar:javaagent"
LAUNCHER = Path(__file__).resolve().parent / "launchers" / "ActiveMQNode.java"
MAIN_CLASS = "ActiveMQNode"
BROKER_NAME = "amqp-conformance"      # the brokerName in its MBean names (the profile's {broker})
USER, PASSWORD = "admin", "admin"
# the broker-wide limits of ActiveMQ's shipped activemq.xml (memory: its 70 % of a heap of ~96 MB), which the
# `activemq` profile's alarm hooks lower and restore
MEMORY_LIMIT = 64 * 1024 * 1024
STORE_LIMIT = 100 * 1024 ** 3
TEMP_LIMIT = 50 * 1024 ** 3
STORE_MB = 128                        # the tmpfs under the node's KahaDB (journal files are sparse, 32 MB each)
JVM_FLAGS = ("-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
READY_LINE = "amqp-conformance: started"


def home_of(version: str) -> Path:
    return cache_dir() / "activemq" / version


def classpath(home: Path, run_home: Path | None = None) -> str:
    """The launcher's classpath: the launcher compiled in the release directory `home`, then the jars of
    `run_home/lib` (default `home/lib`) in name order (a build's jar named to sort first wins)."""
    jars = sorted((run_home or home).joinpath("lib").glob("*.jar"), key=lambda p: p.name)
    return os.pathsep.join([str(home / "launcher"), *map(str, jars)])


def jolokia_agent() -> Path:
    return cache_dir() / "activemq" / "jolokia-agent.jar"


def launcher_argv(home: Path, *, port: int, data: Path, jolokia_config: Path | None = None,
                  run_home: Path | None = None) -> list[str]:
    """The node's command line: the launcher on the release's classpath (`home`), AMQP on `port`, the store
    under `data`, the MBeans over HTTP when a Jolokia agent configuration is given, the jars of `run_home`
    when given (a build at a commit, laid out like a release directory). The password goes in the
    environment (AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD), never on the command line."""
    agent = [f"-javaagent:{jolokia_agent()}=config={jolokia_config}"] if jolokia_config is not None else []
    return [java_command(), *JVM_FLAGS, *agent, "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-cp", classpath(home, run_home), MAIN_CLASS, f"port={port}", f"data={data}", f"name={BROKER_NAME}",
            f"user={USER}", f"memory={MEMORY_LIMIT}", f"store={STORE_LIMIT}", f"temp={TEMP_LIMIT}"]


def provision_release(version: str, home: Path, what: str) -> None:
    """The release's jars into `home/lib`, the launcher compiled into `home/launcher`, `home/jars.txt` last."""
    java_command()
    if shutil.which("javac") is None:
        raise ProvisionFailed(f"{what}: the launcher needs a JDK (`javac` is not on PATH); run `./dev setup all` or "
                              "apt-get install openjdk-17-jdk-headless")
    (home / "jars.txt").unlink(missing_ok=True)
    lib = home / "lib"
    copy_dependencies([f"org.apache.activemq:{m}:{version}" for m in MODULES], lib, what)
    api = sorted(lib.glob("slf4j-api-*.jar"))
    if not api:
        raise ProvisionFailed(f"{what}: Maven resolved the modules but no slf4j-api jar is among them in {lib}; "
                              "provision again")
    slf4j = api[0].name[len("slf4j-api-"):-len(".jar")]
    binding = fetch_artifact(f"org.slf4j:slf4j-simple:{slf4j}", what)
    shutil.copy(binding, lib / binding.name)
    agent = fetch_artifact(JOLOKIA, what)
    if not jolokia_agent().exists():
        partial = jolokia_agent().with_suffix(".partial")
        shutil.copy(agent, partial)
        os.replace(partial, jolokia_agent())
    compile_launcher(home, what)
    jars = sorted(p.name for p in lib.glob("*.jar"))
    (home / "jars.txt").write_text("\n".join(jars) + "\n")


def launcher_hash() -> str:
    return hashlib.sha256(LAUNCHER.read_bytes()).hexdigest()


def compile_launcher(home: Path, what: str) -> None:
    """javac of the launcher against `home/lib` into `home/launcher` (replaced only when it compiled), with the
    hash of its source beside it."""
    partial = home / "launcher.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    run(["javac", "-nowarn", "-d", str(partial), "-cp", f"{home / 'lib'}/*", str(LAUNCHER)], timeout=300,
        what=f"{what}: compiling {LAUNCHER.name}")
    (partial / "source.sha256").write_text(launcher_hash() + "\n")
    shutil.rmtree(home / "launcher", ignore_errors=True)
    os.replace(partial, home / "launcher")


class ActiveMQ(JvmBroker):
    """One ActiveMQ Classic release (subclasses made by `activemq_class` name it)."""

    version = ""
    run_home: Path | None = None      # a directory laid out like `home` whose lib/ the node runs (None: home)
    profile_name = "activemq"
    ready_sasl = "PLAIN"
    startup_timeout = 90.0

    @property
    def home(self) -> Path:
        return home_of(self.version)

    def provisioned(self) -> bool:
        stamp = self.home / "launcher" / "source.sha256"
        return (self.home / "jars.txt").exists() and (self.home / "launcher" / f"{MAIN_CLASS}.class").exists() \
            and stamp.exists() and stamp.read_text().strip() == launcher_hash() and jolokia_agent().exists()

    def provision(self) -> None:
        provision_release(self.version, self.home, f"provisioning {self.kind}")
        if not self.provisioned():
            raise ProvisionFailed(f"{self.kind}: provisioning finished but {self.home} is incomplete; provision again")

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        port = port or free_port()
        jolokia_port = free_port()
        data = workdir / "data"
        data.mkdir()
        self._tmpfs = self._mount_store(data, STORE_MB)
        config = workdir / "jolokia.properties"
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"host=127.0.0.1\nport={jolokia_port}\nuser={USER}\npassword={PASSWORD}\n"
                     "discoveryEnabled=false\nagentContext=/api/jolokia\n")
        env = self._java_env(workdir)
        env["AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD"] = PASSWORD
        progress(f"starting {self.kind} on 127.0.0.1:{port}")
        self._spawn(launcher_argv(self.home, port=port, data=data, jolokia_config=config,
                                  run_home=self.run_home), env, workdir)
        url = f"amqp://{USER}:{PASSWORD}@127.0.0.1:{port}"
        opened = self._wait_amqp(url, port)
        self.tools = {"http": [f"http://{USER}:{PASSWORD}@127.0.0.1:{jolokia_port}/api/jolokia",
                               f"broker={BROKER_NAME}", "up_within_s=30"]}
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return NodeRecord(name=f"activemq{port}", kind=self.kind, url=url, pid=self.process.pid,
                          workdir=str(workdir), started_at=time.time(), owner_pid=os.getpid(),
                          extra={"product": str(opened.get("product", "ActiveMQ")),
                                 "version": str(opened.get("version", self.version)),
                                 "tools": redacted_tools(self.tools), "env": self.env,
                                 "jolokia_port": jolokia_port, "mounts": [str(data)] if self._tmpfs else []})


def activemq_class(version: str, kind: str | None = None, run_home: Path | None = None) -> type[ActiveMQ]:
    """The managed broker of release `version`; `kind` and `run_home` name a build of another commit run with
    that release's launcher (the jars of `run_home/lib` instead of the release's)."""
    return type(f"ActiveMQ_{version.replace('.', '_')}", (ActiveMQ,), {
        "kind": kind or f"activemq-{version}", "version": version, "run_home": run_home,
        "description": f"ActiveMQ Classic {version} from Maven Central (Java 17)"})


RELEASES: dict[str, type[ActiveMQ]] = {f"activemq-{v}": activemq_class(v) for v in VERSIONS}
