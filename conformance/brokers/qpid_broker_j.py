"""Managed Qpid Broker-J nodes, one per release line, on the machine's Java 17.

Provisioning resolves the broker's modules (core, AMQP 1.0 protocol, HTTP management, memory and Derby
stores, logback logging, and the `qpid-broker` launcher with the other plugins, less Berkeley DB JE, which
Maven Central does not carry) with Maven into the cache:
one classpath directory per release. A node is a throwaway: its own work directory, an initial
configuration written by the suite (an AMQP port with SASL PLAIN for user guest, a second AMQP port with
ANONYMOUS, HTTP management with basic auth, all on 127.0.0.1) and a Derby virtual host whose store sits on a
small tmpfs of its own, so that filling that file system raises the virtual host's disk-usage flow control
(`store.filesystem.maxUsagePercent`, checked every housekeeping period). The `qpid-broker-j` profile
drives queues and limits through the REST API (`/api/latest`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ..errors import BrokerStartFailed, ProvisionFailed
from . import diskfill
from .jvm import JvmBroker, redacted_tools, cache_dir, copy_dependencies, java_command, wait_http
from .managed import NodeRecord, PortRace, free_port, progress

MODULES = ("qpid-broker-core", "qpid-broker-plugins-amqp-1-0-protocol", "qpid-broker-plugins-management-http",
           "qpid-broker-plugins-memory-store", "qpid-broker-plugins-derby-store",
           "qpid-broker-plugins-logging-logback")
STORE_MB = 64                     # the tmpfs under the virtual host's store
MAX_USAGE_PERCENT = 90            # Broker-J's default threshold for blocking producers
FULL = r"VHT-1006"                 # Broker-J operational log: "Filesystem is over N per cent full"
NOT_FULL = r"VHT-1007"             # ... "is no longer over N per cent full"


# a connection's open hostname (127.0.0.1 here) picks the virtual host: the machine's names and addresses, the
# virtual host's own name, or none at all all reach "default"
ALIASES = [{"name": "nameAlias", "type": "nameAlias"}, {"name": "defaultAlias", "type": "defaultAlias"},
           {"name": "hostnameAlias", "type": "hostnameAlias"}]


def initial_config(values: dict) -> dict:
    """The broker's initial configuration for one node (ports, paths and model version from `values`)."""
    rules = [{"name": "Root", "type": "NameAndLevel", "level": "WARN", "loggerName": "ROOT"},
             {"name": "Qpid", "type": "NameAndLevel", "level": "INFO", "loggerName": "org.apache.qpid.*"},
             {"name": "Operational", "type": "NameAndLevel", "level": "INFO", "loggerName": "qpid.message.*"}]
    virtualhost = {"type": "DERBY", "storePath": values["store_dir"], "housekeepingCheckPeriod": 500,
                   "context": {"store.filesystem.maxUsagePercent": str(MAX_USAGE_PERCENT)}}
    return {
        "name": "amqp-conformance",
        "modelVersion": values["model_version"],
        "authenticationproviders": [
            {"name": "plain", "type": "Plain", "secureOnlyMechanisms": [],
             "users": [{"name": "guest", "type": "managed", "password": "guest"}]},
            {"name": "anonymous", "type": "Anonymous"}],
        "brokerloggers": [{"name": "logfile", "type": "File", "fileName": values["log_file"],
                           "brokerloginclusionrules": rules}],
        "ports": [
            {"name": "AMQP", "port": values["amqp_port"], "bindingAddress": "127.0.0.1",
             "authenticationProvider": "plain", "protocols": ["AMQP_1_0"],
             "virtualhostaliases": ALIASES},
            {"name": "AMQP-ANONYMOUS", "port": values["anonymous_port"], "bindingAddress": "127.0.0.1",
             "authenticationProvider": "anonymous", "protocols": ["AMQP_1_0"],
             "virtualhostaliases": ALIASES},
            {"name": "HTTP", "port": values["http_port"], "bindingAddress": "127.0.0.1",
             "authenticationProvider": "plain", "protocols": ["HTTP"]}],
        "virtualhostnodes": [{"name": "default", "type": "JSON", "defaultVirtualHostNode": "true",
                              "virtualHostInitialConfiguration": json.dumps(virtualhost)}],
        "plugins": [{"type": "MANAGEMENT-HTTP", "name": "httpManagement", "httpBasicAuthenticationEnabled": True}],
    }


class QpidBrokerJ(JvmBroker):
    """One release of Broker-J (subclasses name it)."""

    profile_name = "qpid-broker-j"
    version = ""
    model_version = ""

    @property
    def lib(self) -> Path:
        return cache_dir() / "qpid-broker-j" / self.version / "lib"

    def provisioned(self) -> bool:
        return (self.lib / f"qpid-broker-{self.version}.jar").exists()

    def provision(self) -> None:
        java_command()
        coords = [f"org.apache.qpid:{m}:{self.version}" for m in MODULES]
        coords.append(f"org.apache.qpid:qpid-broker:{self.version}")        # Main and the other plugins
        # Berkeley DB JE (the BDB store's library) is not on Maven Central; the suite uses the Derby store
        copy_dependencies(coords, self.lib, f"provisioning {self.kind}", exclude=("com.sleepycat:je",))
        if not self.provisioned():
            raise ProvisionFailed(f"{self.kind}: Maven resolved the modules but qpid-broker-{self.version}.jar is "
                                  f"missing from {self.lib}; provision again")

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        port = port or free_port()
        anonymous_port, http_port = free_port(), free_port()
        store = workdir / "store"
        self._tmpfs = self._mount_store(store, STORE_MB)
        config = workdir / "initial-config.json"
        log_file = workdir / "qpid.log"
        self._log_file = log_file
        values = {"amqp_port": port, "anonymous_port": anonymous_port, "http_port": http_port,
                  "store_dir": str(store / "derby"), "log_file": str(log_file), "model_version": self.model_version}
        config.write_text(json.dumps(initial_config(values), indent=1))
        argv = [java_command(), "-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m",
                f"-Dqpid.work_dir={workdir / 'work'}", f"-Dqpid.home_dir={workdir}",
                "-cp", f"{self.lib}/*", "org.apache.qpid.server.Main", "-icp", str(config)]
        progress(f"starting {self.kind} on 127.0.0.1:{port}")
        self._spawn(argv, self._java_env(workdir), workdir)
        url = f"amqp://guest:guest@127.0.0.1:{port}"
        opened = self._wait_amqp(url, port)
        api = f"http://127.0.0.1:{http_port}/api/latest"
        # the AMQP port answers before the virtual host is up (a connection then gets open + close(forced)); many
        # nodes starting at once on a small machine take a while (the bound is the node's own start bound)
        try:
            wait_http(f"{api}/virtualhost/default/default", self.startup_timeout,
                      f"{self.kind} virtual host 'default' ACTIVE", user="guest", password="guest",
                      until=lambda body: isinstance(body, dict) and body.get("state") == "ACTIVE")
        except BrokerStartFailed:
            if self._port_race():            # its web port was taken meanwhile: the node runs without it
                raise PortRace() from None
            raise
        self.tools = {"http": [f"http://guest:guest@127.0.0.1:{http_port}/api/latest"]}
        if self._tmpfs:
            fill = [sys.executable, diskfill.__file__]
            watch = [str(log_file), FULL, NOT_FULL]
            self.tools.update({"disk-fill": [*fill, "raise", str(store), *watch],
                               "disk-free": [*fill, "clear", str(store), *watch],
                               "disk-status": [*fill, "status", str(store), *watch]})
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
        return NodeRecord(name=f"qpid{port}", kind=self.kind, url=url, pid=self.process.pid, workdir=str(workdir),
                          started_at=time.time(), owner_pid=os.getpid(),
                          extra={"product": str(opened.get("product", "qpid-broker-j")),
                                 "version": str(opened.get("version", self.version)),
                                 "tools": redacted_tools(self.tools),
                                 "env": self.env, "anonymous_url": f"amqp://127.0.0.1:{anonymous_port}",
                                 "http_port": http_port, "mounts": [str(store)] if self._tmpfs else []})


class QpidBrokerJ92(QpidBrokerJ):
    kind = "qpid-broker-j-9.2"
    description = "Qpid Broker-J 9.2.1 from Maven Central (Java 17)"
    version = "9.2.1"
    model_version = "8.0"


class QpidBrokerJ100(QpidBrokerJ):
    kind = "qpid-broker-j-10.0"
    description = "Qpid Broker-J 10.0.1 from Maven Central (Java 17)"
    version = "10.0.1"
    model_version = "8.0"


class QpidBrokerJ80(QpidBrokerJ):
    kind = "qpid-broker-j-8.0"
    description = "Qpid Broker-J 8.0.6 from Maven Central (Java 17)"
    version = "8.0.6"
    model_version = "8.0"

