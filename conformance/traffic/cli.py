"""The `check` and `observe` commands (registered from conformance/cli.py like `run`)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("check", help="judge captured AMQP traffic (pcap/pcapng, transcripts), both endpoints")
    p.add_argument("captures", nargs="+", metavar="CAPTURE",
                   help="pcap / pcapng files, transcript .json files, or directories holding them")
    p.add_argument("--spark", metavar="MASTER", nargs="?", const="local[2]", default=None,
                   help="judge the connections in parallel on Spark: local[N], spark://HOST:PORT or sc://HOST:PORT")
    p.add_argument("--reports-dir", default=None, help="where traffic/<run-id>/ is written (default: reports/)")
    p.add_argument("--history", default=None,
                   help="with --spark: the Parquet history to add the findings to (default: <reports-dir>/history)")
    p.set_defaults(func=_check)

    p = sub.add_parser("observe", help="transparent recording proxy: judge a real application's traffic live")
    p.add_argument("--listen", required=True, metavar="HOST:PORT", help="where applications connect")
    p.add_argument("--upstream", required=True, metavar="amqp://HOST:PORT", help="the broker")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--connections", type=int, default=None, help="stop after N connections ended")
    p.add_argument("--reports-dir", default=None, help="where traffic/<run-id>/ is written (default: reports/)")
    p.set_defaults(func=_observe)


def _check(args) -> int:
    if args.spark:
        from .spark import check_on_spark
        return check_on_spark(args, print)
    from .check import cmd_check
    return cmd_check(args)


def _observe(args) -> int:
    from .observe import cmd_observe
    return cmd_observe(args)
