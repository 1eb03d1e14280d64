"""Managed Qpid Proton C example broker, built from the example source Debian ships
(libqpid-proton11-dev-examples). Queues are created on demand by address; SASL ANONYMOUS only."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

from ..errors import BrokerStartFailed
from .managed import ManagedBroker, NodeRecord, apt_install, cache_dir, progress, run, run_command

EXAMPLES = Path("/usr/share/proton/examples/c")


class ProtonCBroker(ManagedBroker):
    kind = "qpid-proton-c"
    description = "the Qpid Proton C example broker (Debian bookworm libqpid-proton11, built with gcc)"
    profile_name = "qpid-proton-c"
    startup_timeout = 20.0

    @property
    def binary(self) -> Path:
        return cache_dir() / "qpid-proton-c" / "broker"

    @property
    def version(self) -> str:
        out = run_command(["dpkg-query", "-W", "-f=${Version}", "libqpid-proton11"], timeout=60)
        return out.stdout.strip() or "unknown"

    def provisioned(self) -> bool:
        return self.binary.exists()

    def provision(self) -> None:
        apt_install(["libqpid-proton11-dev", "libqpid-proton11-dev-examples", "gcc", "libc6-dev"],
                    "provisioning qpid-proton-c")
        build = self.binary.parent
        tmp = build.with_name(build.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for source in ("broker.c", "thread.h"):
            shutil.copy(EXAMPLES / source, tmp / source)
        progress("building the Qpid Proton C example broker")
        run(["gcc", "-O2", "-o", str(tmp / "broker"), str(tmp / "broker.c"), "-lqpid-proton", "-lpthread"],
            timeout=300, what="building the Proton C example broker")
        shutil.rmtree(build, ignore_errors=True)
        os.replace(tmp, build)

    def _start(self, workdir: Path, port: int | None) -> NodeRecord:
        progress("starting qpid-proton-c")
        # port 0: the broker binds a free port itself and prints it (no race)
        self._spawn(["stdbuf", "-oL", str(self.binary), "127.0.0.1", str(port or 0)], dict(os.environ), workdir)
        port_holder = {}

        def listening() -> bool:
            match = re.search(r"listening on (\d+)", self.log_path.read_text(errors="replace"))
            if match:
                port_holder["port"] = int(match.group(1))
            return bool(match)

        self.wait_ready(listening, "its 'listening on' line")
        port = port_holder["port"]
        if port <= 0:
            raise BrokerStartFailed("qpid-proton-c reported no port")
        return NodeRecord(name=f"proton{port}", kind=self.kind, url=f"amqp://127.0.0.1:{port}",
                          pid=self.process.pid, workdir=str(workdir), started_at=time.time(), owner_pid=os.getpid(),
                          extra={"product": "qpid-proton-c example broker", "version": self.version})

    def _stop(self, node: NodeRecord) -> None:
        if self.process is not None:
            self.process.terminate()
