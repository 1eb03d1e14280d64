"""`amqp-conformance clients list|provision`: the client libraries the suite drives, and installing them."""

from __future__ import annotations

import sys

from ..errors import EXIT_OK, ProvisionFailed


def register(sub) -> None:
    p = sub.add_parser("clients", help="list or provision the client libraries the suite judges")
    p.add_argument("action", choices=["list", "provision"])
    p.add_argument("names", nargs="*", help="library names (newest release) or labels (rhea-2.0.8); default: all")
    p.add_argument("--all", action="store_true", help="every pinned release of every library")
    p.set_defaults(func=cmd_clients)


def cmd_clients(args) -> int:
    from . import LIBRARIES, resolve, series
    from .provision import home, provision, provisioned
    if args.all or not args.names:
        libs = list(LIBRARIES)
    else:
        libs = []
        for name in args.names:
            libs += series(name) if name in {l.name for l in LIBRARIES} else [resolve(name)]
    if args.action == "list":
        print(f"{'label':28} {'language':11} {'registry':9} {'installed':10} what the driver uses")
        for lib in libs:
            print(f"{lib.label:28} {lib.language:11} {lib.registry:9} {'yes' if provisioned(lib) else 'no':10} "
                  f"{lib.summary}")
        return EXIT_OK
    failed = []
    for lib in libs:
        try:
            path = provision(lib)
            print(f"{lib.label}: ready in {path}")
        except ProvisionFailed as exc:
            failed.append(exc)
            print(f"error: {exc}", file=sys.stderr)
    if failed:
        raise ProvisionFailed(f"{len(failed)} of {len(libs)} client libraries could not be installed "
                              f"(first: {failed[0]})")
    return EXIT_OK
