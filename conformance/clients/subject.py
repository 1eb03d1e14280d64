"""A client library as the subject of a run: the handle the run pipeline and the executor treat like a broker.

`ClientSubject(lib)` has what the executor asks of any subject (`name` = the library's label, `product`,
`version`, `lock_key`, `alive()`, `log_tail()`, `has_hook()` (none)) and what client cases need:
`driver()`, one driver process kept for the whole run (a JVM starts once), started when first asked for and
started afresh after one that hung or crashed (`discard()`). Given its driver's `argv` and no version (a
driver the suite does not ship), the driver's `ready` line names the product and version. It is no broker:
it has no URL or queues (the case's scripted broker is the server).
"""

from __future__ import annotations

import contextlib

from .driver import Driver
from .library import Library
from .provision import command, provision, provisioned
from ..errors import ProvisionFailed


class ClientSubject:
    kind = "client"
    url = redacted_url = "client-driver"
    tls = None
    sasl_mechanism = None
    pid = None

    def __init__(self, lib: Library, *, argv: list[str] | None = None, env: dict | None = None,
                 name: str | None = None, product: str | None = None, version: str | None = None,
                 ready_timeout: float = 60.0):
        self.lib = lib
        self.name = name or lib.label
        self.product = product or lib.name
        self.version = version or lib.version
        self._ask_driver = argv is not None and not version      # a driver the suite does not ship says who it is
        self._argv, self._env = argv, env
        self.ready_timeout = ready_timeout
        self._driver: Driver | None = None
        self.starts = 0
        self._last_log = ""

    @property
    def lock_key(self) -> str:
        return f"client-{self.name}"

    def check(self) -> None:
        """Before a run: the library is provisioned (ProvisionFailed, exit 8, naming the command otherwise)."""
        if self._argv is None and not provisioned(self.lib):
            raise ProvisionFailed(f"client {self.lib.label} is not provisioned; run `amqp-conformance clients "
                                  f"provision {self.lib.label}`")

    def driver(self) -> Driver:
        if self._driver is not None and self._driver.alive():
            return self._driver
        self.discard()
        if self._argv is not None:
            argv, env, cwd = self._argv, self._env, None
        else:
            provision(self.lib)
            argv, env, cwd = command(self.lib)
        self._driver = Driver(argv, name=self.name, env=env, cwd=cwd, ready_timeout=self.ready_timeout)
        self.starts += 1
        hello = self._driver.hello
        if self._ask_driver:
            self.version = str(hello.get("version") or self.version or "unknown")
            self.product = str(hello.get("library") or self.product)
        return self._driver

    def discard(self) -> None:
        """End the driver (after it hung or crashed, or at the end of the run)."""
        if self._driver is not None:
            with contextlib.suppress(Exception):
                self._last_log = self._driver.log_tail(40)
            self._driver.kill()
            self._driver = None

    close = stop = discard

    # -- what the executor asks of every subject ----------------------------------------------------------

    def alive(self) -> bool:
        return True             # a driver that died is the case's error (DriverError), not a dead broker

    def log_tail(self, lines: int = 40) -> str:
        if self._driver is not None:
            return self._driver.log_tail(lines)
        return "\n".join(self._last_log.splitlines()[-lines:])

    def has_hook(self, name: str) -> bool:
        return False
