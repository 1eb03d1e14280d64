"""Managed ActiveMQ Artemis nodes, one per release of a series (`artemis-<version>`), on Java 17.

Provisioning resolves the `org.apache.activemq:apache-artemis:<version>:tar.gz:bin` distribution with Maven
into the cache and unpacks it there. A node is an instance made with the release's own `artemis create` (once
per release, in the cache; each node gets a copy with its own paths and web port) in the node's directory:
AMQP on one acceptor, the web console with Jolokia, both on 127.0.0.1 with free ports; user `admin` for SASL
PLAIN and the console, anonymous logins allowed. The instance's data directory (journal, paging) is a small
tmpfs of its own, so filling it raises Artemis' max-disk-usage blocking (checked every 100 ms here). The
`artemis` profiles drive address settings and queues through Jolokia.

A build of the broker's source at a commit (`conformance.brokers.source`, `bisect --repo`) runs on top of a
release: `artemis_class(version, run_home=...)` gives a kind whose nodes run from that build's home (the
release's files, its lib/ with the build's jar sorting first) and the release's instance template.

Which profile a release gets depends on its management API: from 2.32 an address's settings can be given
as JSON (so `max-size-messages`, a limit in messages, is available: the queue-length case); older releases
only take the long positional form with `max-size-bytes` (`artemis-before-2.32`, without the length hook).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

from filelock import FileLock

from ..errors import BrokerStartFailed, ProvisionFailed
from . import diskfill
from .jvm import JvmBroker, redacted_tools, cache_dir, fetch_artifact, java_command
from .managed import NodeRecord, free_port, progress, run, write_executable_tree

DATA_MB = 96                       # the tmpfs under the instance's journal and paging (journal files are 10 MB)
BROKER_NAME = "amqp-conformance"   # the broker's name in its MBean names
FULL = r"AMQ222210"          # "Free storage space is at ... beyond the configured <max-disk-usage>"
NOT_FULL = r"AMQ222211"      # "... below the configured <max-disk-usage>. System will unblock producers."

DISK_SCAN_MS = 100           # how often the broker checks its store's disk usage (the alarm cases wait for it)
JOURNAL_BUFFER_NS = 10_000   # journal write batching (NIO default 3_333_333 ns)
JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
JOLOKIA_UP_WITHIN_S = 60      # how long a management call waits for the node's web server to come up
CREATE_OPTIONS = ("--nio", "--no-autotune", "--no-hornetq-acceptor", "--no-mqtt-acceptor", "--no-stomp-acceptor",
                  "--relax-jolokia")
TEMPLATE_HTTP_PORT = 1         # the web port in the cached instance, replaced in each node's copy

# oldest first; 2.17.0 is the oldest release whose instances run on this machine's Java 17 (earlier ones
# were not tried) and 2.40.0 the newest Maven Central serves here
VERSIONS = ("2.17.0", "2.18.0", "2.21.0", "2.26.0", "2.28.0", "2.31.2", "2.35.0", "2.39.0", "2.40.0")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


class Artemis(JvmBroker):
    """One Artemis release (subclasses made by `artemis_class` name it)."""

    version = ""
    ready_sasl = "PLAIN"
    runs_builds = True                 # a node runs from `run_home` when a build sets it (None: the release's own)

    @property
    def home(self) -> Path:
        return cache_dir() / "artemis" / self.version

    @property
    def node_home(self) -> Path:
        """The ARTEMIS_HOME nodes run from: the release's, or the build's on top of it."""
        return self.run_home or self.home

    def provisioned(self) -> bool:
        return (self.home / "bin" / "artemis").exists()

    def provision(self) -> None:
        java_command()
        tarball = fetch_artifact(f"org.apache.activemq:apache-artemis:{self.version}:tar.gz:bin",
                                 f"provisioning {self.kind}")
        partial = self.home.with_name(self.home.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        progress(f"unpacking {tarball.name}")
        run(["tar", "-xzf", str(tarball), "-C", str(partial), "--strip-components=1"], timeout=300,
            what=f"unpacking {tarball.name}")
        if not (partial / "bin" / "artemis").exists():
            raise ProvisionFailed(f"{tarball} has no bin/artemis; delete it and provision {self.kind} again")
        shutil.rmtree(self.home, ignore_errors=True)
        os.replace(partial, self.home)

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        port = port or free_port()
        http_port = free_port()
        instance, data = workdir / "instance", workdir / "data"
        self._tmpfs = self._mount_store(data, DATA_MB)
        env = self._java_env(workdir)
        password = "admin"
        self._instance_from_template(instance, data, http_port, env)
        self._configure(instance, port)
        progress(f"starting {self.kind} on 127.0.0.1:{port}")
        self._log_file = instance / "log" / "artemis.log"
        self._spawn([str(instance / "bin" / "artemis"), "run"], env, workdir)
        url = f"amqp://admin:{password}@127.0.0.1:{port}"
        opened = self._wait_amqp(url, port)
        # ready once AMQP answers: the web console (Jolokia, which only the hooks use) comes up a second or two
        # later, while the run starts its workers; each management call waits (bounded) for it
        self.tools = {"http": [f"http://admin:{password}@127.0.0.1:{http_port}/console/jolokia",
                               f"broker={BROKER_NAME}", f"up_within_s={JOLOKIA_UP_WITHIN_S}"]}
        if self._tmpfs:
            fill = [sys.executable, diskfill.__file__]
            watch = [str(self.log_path), FULL, NOT_FULL]
            self.tools.update({"disk-fill": [*fill, "raise", str(data), *watch],
                               "disk-free": [*fill, "clear", str(data), *watch],
                               "disk-status": [*fill, "status", str(data), *watch]})
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
        return NodeRecord(name=f"artemis{port}", kind=self.kind, url=url, pid=self.process.pid,
                          workdir=str(workdir), started_at=time.time(), owner_pid=os.getpid(),
                          extra={"product": str(opened.get("product", "apache-activemq-artemis")),
                                 "version": str(opened.get("version", self.version)),
                                 "tools": redacted_tools(self.tools),
                                 "env": self.env, "http_port": http_port, "mounts": [str(data)] if self._tmpfs else []})

    def _create(self, instance: Path, data: Path, http_port: int, env: dict, home: Path | None = None) -> None:
        run([str((home or self.node_home) / "bin" / "artemis"), "create", "--silent", "--force", "--name", BROKER_NAME,
             "--user", "admin", "--password", "admin", "--allow-anonymous", "--host", "127.0.0.1",
             "--http-host", "127.0.0.1", "--http-port", str(http_port), "--data", str(data), *CREATE_OPTIONS,
             str(instance)], timeout=120, env=env, what=f"`artemis create` for {self.kind}", error=BrokerStartFailed)

    def _instance_from_template(self, instance: Path, data: Path, http_port: int, env: dict) -> None:
        """The node's instance: a copy of one `artemis create` made once per release in the cache (under a
        file lock), with its paths and web port replaced, which spares each start a JVM run. Paths a plain
        text replacement cannot carry (characters a file: URI would escape) get their own `artemis create`."""
        made_with = hashlib.sha256(" ".join((BROKER_NAME, *CREATE_OPTIONS)).encode()).hexdigest()[:8]
        template = cache_dir() / "artemis" / f"{self.version}-instance-{made_with}"   # new options: a new one
        plain = re.compile(r"[A-Za-z0-9/._+-]+")
        if not all(plain.fullmatch(str(p)) for p in (template, instance, data, self.node_home)):
            self._create(instance, data, http_port, env)
            return
        ready = template / "instance" / "etc" / "broker.xml"
        if not ready.exists():
            with FileLock(str(template) + ".lock").acquire(timeout=300):
                if not ready.exists():
                    partial = template.with_name(template.name + ".partial")
                    shutil.rmtree(partial, ignore_errors=True)
                    shutil.rmtree(template, ignore_errors=True)
                    self._create(partial / "instance", partial / "data", TEMPLATE_HTTP_PORT, env, self.home)
                    moved = partial / "instance"

                    def own_paths() -> None:     # its own paths: the template's, not the .partial's
                        for f in moved.rglob("*"):
                            if f.is_file() and f.parent.name in ("bin", "etc"):
                                f.write_text(f.read_text().replace(str(partial), str(template)))
                    write_executable_tree(own_paths)
                    os.replace(partial, template)
        release_home = re.compile(re.escape(str(self.home)) + r"(?![\w.-])")     # not the template's own paths

        def node_copy() -> None:
            # bin/artemis is copied, edited, then executed: written where no other thread forks (SPAWN_LOCK)
            shutil.copytree(template / "instance", instance, symlinks=True)
            for f in instance.rglob("*"):
                if f.is_file() and f.parent.name in ("bin", "etc"):
                    text = f.read_text()
                    new = (text.replace(str(template / "instance"), str(instance))
                           .replace(str(template / "data"), str(data))
                           .replace(f"http://127.0.0.1:{TEMPLATE_HTTP_PORT}", f"http://127.0.0.1:{http_port}"))
                    if self.run_home is not None:
                        new = release_home.sub(str(self.run_home).replace("\\", "\\\\"), new)
                    if new != text:
                        f.write_text(new)
        write_executable_tree(node_copy)
        data.mkdir(parents=True, exist_ok=True)

    def _configure(self, instance: Path, port: int) -> None:
        """One AMQP acceptor on `port` (the created ones are dropped), disk usage checked every 100 ms, anycast
        (queue) addresses and queues when an attach creates them, a journal that writes at once (its store is
        a tmpfs), and a heap, GC and JIT that fit a small machine."""
        broker_xml = instance / "etc" / "broker.xml"
        text = broker_xml.read_text()
        acceptor = (f'<acceptor name="amqp">tcp://127.0.0.1:{port}?protocols=AMQP;useEpoll=false;'
                    "amqpCredits=1000;amqpLowCredits=300</acceptor>")
        text, count = re.subn(r"<acceptors>.*?</acceptors>", f"<acceptors>{acceptor}</acceptors>", text, flags=re.S)
        if count != 1:
            raise BrokerStartFailed(f"{self.kind}: the created broker.xml has no <acceptors> section to configure")
        text = re.sub(r"<disk-scan-period>\d+</disk-scan-period>",
                      f"<disk-scan-period>{DISK_SCAN_MS}</disk-scan-period>", text)
        # the store is a tmpfs: batch a durable write for 10 us, not NIO's default 3.3 ms (each synchronous
        # publisher's message waited that long for its outcome)
        text, count = re.subn(r"(<journal-type>\w+</journal-type>)",
                              rf"\1<journal-buffer-timeout>{JOURNAL_BUFFER_NS}</journal-buffer-timeout>", text)
        if count != 1:
            raise BrokerStartFailed(f"{self.kind}: the created broker.xml has no <journal-type> to configure")
        # queue semantics for addresses made on attach (Artemis' default routing type is multicast)
        text, count = re.subn(r'(<address-setting match="#">)', r"\1<default-address-routing-type>ANYCAST"
                              r"</default-address-routing-type><default-queue-routing-type>ANYCAST"
                              r"</default-queue-routing-type>", text)
        if count != 1:
            raise BrokerStartFailed(f"{self.kind}: the created broker.xml has no catch-all address-setting")
        broker_xml.write_text(text)
        profile = instance / "etc" / "artemis.profile"
        if profile.exists():
            text = re.sub(r"-Xmx\S+", "-Xmx512M", re.sub(r"-Xms\S+", "-Xms64M", profile.read_text()))
            # a throwaway node on a small machine: the JIT's first tier only and one GC thread start it sooner
            text = re.sub(r" ?-XX:\+UseStringDeduplication", "", text.replace("-XX:+UseG1GC", JVM_FLAGS))
            profile.write_text(text)


def artemis_class(version: str, *, kind: str | None = None, run_home: Path | None = None,
                  description: str | None = None) -> type[Artemis]:
    """The managed kind of release `version`; with `run_home`, of a build on top of it (named `kind`)."""
    profile = "artemis" if version_tuple(version) >= (2, 32) else "artemis-before-2.32"
    return type(f"Artemis_{version.replace('.', '_')}", (Artemis,), {
        "kind": kind or f"artemis-{version}", "version": version, "profile_name": profile, "run_home": run_home,
        "description": description or f"ActiveMQ Artemis {version} from Maven Central (Java 17)"})


RELEASES: dict[str, type[Artemis]] = {f"artemis-{v}": artemis_class(v) for v in VERSIONS}
