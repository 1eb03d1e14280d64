"""`amqp-conformance replay`: run a saved reproducer again against a broker.

This module owns the command's arguments and exit codes: 0 when the model finds nothing to flag, 1 when the
broker still breaks the requirement, 14 when the replay itself broke (the broker stopped answering), 12 for
a file that is not a reproducer, and the broker codes of `run` (2, 4, 6, 7) before anything is sent.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import EXIT_MUST_FAILED, EXIT_OK, BadResults, ConformanceError, RunBroken, UsageError
from .. import options as run_options


def register(sub) -> None:
    r = sub.add_parser("replay", help="run a saved reproducer (<reports-dir>/reproducers/*.json) against a broker")
    r.add_argument("reproducer", help="the JSON file an exploration saved, or its name under "
                                      "<reports-dir>/reproducers/")
    run_options.add_broker_arguments(r.add_argument, note="the broker to replay against (default: qpid-proton-c)")
    run_options.add_arguments(r, "frame_timeout", "quiet_period", "connect_timeout", "reports_dir")
    r.set_defaults(func=cmd_replay)


def find_reproducer(value: str, reports_dir: Path) -> Path:
    from .receiver import reproducers_dir
    for path in (Path(value), reproducers_dir(reports_dir) / value):
        if path.is_file():
            return path
    raise UsageError(f"no reproducer at {value} (nor in {reproducers_dir(reports_dir)}); pass a file an "
                     "exploration saved")


def cmd_replay(args) -> int:
    from ..peer import PeerError
    from ..run.targets import Brokers, resolve
    from .receiver import ExploreError, Violated, load_reproducer, replay
    options = run_options.from_args(args)
    path = find_reproducer(args.reproducer, options.reports_dir)
    try:
        load_reproducer(path)
    except (ValueError, KeyError, OSError) as exc:
        raise BadResults(f"{path} is not a reproducer ({exc}); pass a file from <reports-dir>/reproducers/") \
            from None
    [spec] = resolve([args.broker] if args.broker else [], args.profile)
    started = Brokers.start([spec], options)
    try:
        replay(path, started.broker(spec.name), options)
    except Violated as exc:
        print(f"FAIL {path.name} on {spec.name}: {exc}")
        return EXIT_MUST_FAILED
    except ConformanceError:
        raise
    except (PeerError, ExploreError) as exc:
        raise RunBroken(f"the replay of {path.name} on {spec.name} broke: {exc}") from None
    finally:
        started.close()
    print(f"PASS {path.name} on {spec.name}: the model found nothing to flag")
    return EXIT_OK
