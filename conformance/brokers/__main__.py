"""`python -m conformance.brokers list|up|down|status|provision [NAMES] [--all]`: the `brokers` command of
`amqp-conformance`, run from this package alone (same arguments, one-line errors and exit codes)."""

import argparse
import sys

from ..errors import ConformanceError, UsageError
from . import cli


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 2, as for every usage error
        raise UsageError(f"{message}; see `python -m conformance.brokers --help`")


def main(argv: list[str] | None = None) -> int:
    sub = _Parser(prog="amqp-conformance").add_subparsers(dest="command", parser_class=_Parser)
    cli.register(sub)
    parser = sub.choices["brokers"]
    parser.prog = "python -m conformance.brokers"
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        return int(args.func(args) or 0)
    except ConformanceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
