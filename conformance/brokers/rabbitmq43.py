"""Managed RabbitMQ 4.3 from Debian testing (forky), inside its own debootstrap root.

Like `rabbitmq-4.0` (rabbitmq.RabbitMQ40): the root is built once with debootstrap from the mirror apt
already uses, cached as a tarball, and each node runs chrooted with its own node name, AMQP port,
distribution port and epmd port on 127.0.0.1. What differs: bookworm's debootstrap has no script for
forky, so the sid script is passed explicitly, and the root gets an /etc/hosts (without a `localhost`
line the node cannot reach its own epmd).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from filelock import FileLock

from ..errors import ProvisionFailed
from .managed import apt_install, cache_dir, debian_mirror, progress, require_root, run
from .rabbitmq import RabbitMQ40

HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


class ChrootRabbitMQ(RabbitMQ40):
    """A RabbitMQ node from a Debian suite's debootstrap root (subclasses name the suite)."""

    suite = ""
    script = ""              # debootstrap script when the suite has none of its own name

    @property
    def root(self) -> Path:
        return cache_dir() / f"{self.kind}-root"

    @property
    def tarball(self) -> Path:
        return cache_dir() / f"{self.kind}-root.tar.gz"

    def _root_lock(self) -> FileLock:
        return FileLock(str(cache_dir() / f"{self.kind}-root.lock"), timeout=60)

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
            progress(f"debootstrap {self.suite} with rabbitmq-server from {mirror} (about a minute, ~300 MB)")
            script = [self.script] if self.script else []
            run(["debootstrap", "--variant=minbase", "--include=rabbitmq-server", self.suite, str(partial), mirror,
                 *script], timeout=1800, what=f"debootstrap of Debian {self.suite} for {self.kind}")
            shutil.rmtree(partial / "var/cache/apt/archives", ignore_errors=True)
            (partial / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
            hosts = partial / "etc/hosts"
            if "localhost" not in (hosts.read_text() if hosts.exists() else ""):
                hosts.write_text(HOSTS)
            progress(f"caching the root as {self.tarball}")
            tmp = self.tarball.with_suffix(".partial")
            run(["tar", "-czf", str(tmp), "-C", str(partial), "."], timeout=900, what=f"packing the {self.suite} root")
            os.replace(tmp, self.tarball)
        if not (partial / "usr/lib/rabbitmq/bin/rabbitmq-server").exists():
            raise ProvisionFailed(f"the {self.suite} root has no rabbitmq-server; delete {self.tarball} and "
                                  "provision again")
        os.replace(partial, self.root)


class RabbitMQ43(ChrootRabbitMQ):
    kind = "rabbitmq-4.3"
    description = "RabbitMQ 4.3 from Debian testing (forky, native AMQP 1.0), in a debootstrap root"
    profile_name = "rabbitmq-4"
    version = "4.3"
    suite = "forky"
    script = "/usr/share/debootstrap/scripts/sid"
