"""`python -m conformance.reference --port N [--fault NAME[=VALUE] ...]`: the reference broker as a process
(NAME: a fault of the catalogue, conformance.catalogue.faults, or a switch of `Faults`).

Serves until SIGTERM or SIGINT. Used as a stand-in broker build (bisect tests, demos): with faults it
misbehaves exactly as `Faults` describes.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading

from ..errors import EXIT_OK, EXIT_PORT_IN_USE
from .broker import BrokerConfig, Faults
from .listener import ReferenceBroker


def parse_faults(items: list[str]) -> Faults:
    """`--fault` values: a name of the fault catalogue (e.g. drain-stripped) or a `Faults` switch
    (ignore_drain, extra_transfers=2)."""
    from ..catalogue import faults as fault_catalogue
    fields = {f.name: f for f in dataclasses.fields(Faults)}
    values = {}
    for item in items:
        name, _, raw = item.partition("=")
        entry = fault_catalogue.BY_NAME.get(name)
        if entry is not None and entry.reference and not raw:
            values.update(entry.reference)
            continue
        name = name.replace("-", "_")
        if name not in fields:
            known = [f.name for f in fault_catalogue.of_kind("protocol", "variant", reference=True)]
            raise SystemExit(f"error: unknown fault {name!r}; known: {', '.join(known)}")
        default = fields[name].default
        if isinstance(default, bool):
            values[name] = raw.lower() not in ("0", "false", "no") if raw else True
        else:
            values[name] = int(raw or "1")
    return Faults(**values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.reference",
                                     description="Run the suite's reference broker on loopback.")
    parser.add_argument("--port", type=int, default=5672)
    parser.add_argument("--fault", action="append", default=[], metavar="NAME[=VALUE]")
    parser.add_argument("--version", default="1.0", help="version the broker announces in its open frame")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        broker = ReferenceBroker(BrokerConfig(version=args.version), faults=parse_faults(args.fault)).start(args.port)
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pick another --port",
              file=sys.stderr)
        return EXIT_PORT_IN_USE
    print(f"reference broker listening on {broker.url}", flush=True)
    stop.wait()
    broker.stop()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
