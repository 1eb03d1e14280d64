"""The `amqp-conformance` command: list the catalogue, run the cases, manage brokers, report.

This module owns argument parsing, the exit-code contract (conformance.errors) and turning every
ConformanceError into a one-line `error: ...` message. Each subcommand is registered by the `cli` module of
the package that does its work (`COMMANDS`); they are imported plainly, so a broken module fails loudly
instead of silently removing its command.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__, catalogue
from .brokers import cli as brokers_cli
from .clients import cli as clients_cli
from .errors import EXIT_INTERRUPTED, EXIT_OK, ConformanceError, UsageError
from .explore import cli as explore_cli
from .history import cli as history_cli
from .faultproxy import cli as faultproxy_cli
from .run import cli as run_cli
from .traffic import cli as traffic_cli

# The packages whose `register(subparsers)` adds commands, in the order `--help` lists them.
COMMANDS = (run_cli, explore_cli, history_cli, brokers_cli, clients_cli, faultproxy_cli, traffic_cli)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 2, as for every usage error
        raise UsageError(f"{message}; see `{self.prog} --help`")


def _cmd_list(args) -> int:
    from .casekit import MODEL_REQUIREMENTS
    from .cases import load_all
    cases = load_all()
    by_req: dict[str, list[str]] = {}
    for c in cases.values():
        for r in c.requirements:
            by_req.setdefault(r, []).append(c.id + ("*" if r in c.subject else ""))
    if args.cases:
        for c in cases.values():
            flags = (" [needs " + ", ".join(c.needs) + "]" if c.needs else "") + (" [exclusive]" if c.exclusive else "")
            print(f"{c.id:<10} {c.level:<11} {c.title}{flags}")
            if args.verbose:
                print(f"      subject: {', '.join(c.subject)}")
                print(f"      judges:  {', '.join(r for r in c.requirements if r not in c.subject) or '-'}"
                      " (and what the model judges over every exchange)")
        return EXIT_OK
    print("cases: * marks a case's subject; the flow-control model judges its requirements over every case's "
          "exchange")
    current = None
    for req in catalogue.load().values():
        if req.section != current:
            current = req.section
            print(f"\n§{current}")
        covered = ", ".join(by_req.get(req.id, [])) or ("-" if req.observable else "(not observable from a peer)")
        if req.id in MODEL_REQUIREMENTS:
            covered = ("" if covered == "-" else covered + "; ") + "model: every case"
        if req.obligation:
            covered += " [obligation]"
        print(f"  {req.id:<44} {req.level:<11} cases: {covered}")
        if args.verbose:
            print(f"      “{req.text}”")
            if req.unobservable_because:
                print(f"      not observable: {req.unobservable_because}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="amqp-conformance",
                     description="Conformance test suite for AMQP 1.0 link and session flow control.")
    parser.add_argument("--version", action="version", version=f"amqp-conformance {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("list", help="print the requirement catalogue with the cases that test each requirement")
    p.add_argument("--cases", action="store_true", help="list the cases instead of the requirements")
    p.add_argument("-v", "--verbose", action="store_true", help="quote each requirement's sentence")
    p.set_defaults(func=_cmd_list)

    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        argv = list(sys.argv[1:] if argv is None else argv)
        extra: list[str] = []
        if "--" in argv:
            cut = argv.index("--")
            argv, extra = argv[:cut], argv[cut + 1:]
        args = parser.parse_args(argv)
        if extra:
            if getattr(args, "command", None) != "run":
                raise UsageError("only `run` passes options after -- to pytest")
            args.pytest_args = list(getattr(args, "pytest_args", [])) + extra
        if not getattr(args, "command", None):
            parser.print_help()
            return EXIT_OK
        return int(args.func(args) or EXIT_OK)
    except ConformanceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # output piped into `head` and the like
        try:
            sys.stdout = open("/dev/null", "w")
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        print("error: interrupted; results of the cases that finished are kept", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
