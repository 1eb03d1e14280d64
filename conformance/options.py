"""The options of a run: one dataclass, one set of defaults, one validation, one set of command-line flags.

This module owns `RunOptions` and nothing else defines these defaults: the `run`, `selfcheck`, `bisect`,
`bisect-run` and `replay` commands take their flags from `add_arguments`, the pytest plugin its `--quiet-period`
and `--frame-timeout` from `FIELDS`; `--broker` and `--profile` are declared once, by `add_broker_arguments`,
for every command that takes them (run, selfcheck, bisect-run, replay and the pytest plugin), and every layer below (the one-case runner, the case vocabulary, the
peer's timeouts) reads the values off the object it is handed. It is plain data: it imports nothing of the
suite but the error types, so any layer may read it.

Validation (`RunOptions(...)` raises UsageError, exit 2, one line naming the flag): every duration is a
finite number of seconds greater than 0. A quiet period of 0 is refused too: it would watch nothing, so an
absence would be "proved" without looking (the spec's rules are about what a broker never sends). `workers`
is 0..64 (0 and 1 both mean: in this process).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .errors import UsageError

MAX_WORKERS = 64


def default_reports_dir() -> Path:
    """Where run directories go unless --reports-dir says otherwise (AMQP_CONFORMANCE_REPORTS or reports/)."""
    return Path(os.environ.get("AMQP_CONFORMANCE_REPORTS", "reports"))


@dataclass(frozen=True)
class RunOptions:
    frame_timeout: float = field(default=5.0, metadata={
        "flag": "--frame-timeout", "help": "bound on every wait for an expected frame, and on the connection "
                                          "check before the run (seconds, default 5)"})
    quiet_period: float = field(default=0.5, metadata={
        "flag": "--quiet-period", "help": "how long a case watches that nothing more arrives after a round trip "
                                         "(seconds, > 0, default 0.5)"})
    connect_timeout: float = field(default=5.0, metadata={
        "flag": "--connect-timeout", "help": "bound on opening a TCP/TLS connection (seconds, default 5)"})
    workers: int = field(default=2, metadata={
        "flag": "-n", "help": "parallel worker processes (0 or 1: none; 'auto': one per core; default 2, or "
                              "for `run` the brokers' profiles' [broker] workers)"})
    reports_dir: Path = field(default_factory=default_reports_dir, metadata={
        "flag": "--reports-dir", "help": "where run directories go (default reports/, or $AMQP_CONFORMANCE_REPORTS)"})

    def __post_init__(self):
        for name in ("frame_timeout", "quiet_period", "connect_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise UsageError(f"{flag(name)} {value!r}: give a finite number of seconds greater than 0")
            object.__setattr__(self, name, float(value))
        workers = self.workers
        if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= MAX_WORKERS:
            raise UsageError(f"-n {workers!r}: choose between 0 and {MAX_WORKERS} workers (or auto)")
        object.__setattr__(self, "reports_dir", Path(self.reports_dir))

    @property
    def in_process(self) -> bool:
        """Cases run in this process, one after another (no worker processes)."""
        return self.workers <= 1

    def to_json(self) -> dict:
        """The options as JSON-able data (run.json, pytest-xdist worker input); `from_json` reads it back."""
        data = asdict(self)
        data["reports_dir"] = str(self.reports_dir)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "RunOptions":
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


FIELDS = {f.name: f for f in fields(RunOptions)}
DEFAULTS = RunOptions()


def flag(name: str) -> str:
    return FIELDS[name].metadata["flag"]


def help_for(name: str) -> str:
    return FIELDS[name].metadata["help"]


def workers_arg(value: str) -> int:
    """The value of -n: a number or `auto` (one worker per core)."""
    if value == "auto":                     # the cores this process may run on (a container's, a taskset's)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return max(cores or 1, 1)
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"-n takes a number of workers or auto, not {value!r}") from None


def add_arguments(parser, *names: str) -> None:
    """Add the flags of the named options (default: all) to an argparse parser; defaults are None so that
    `from_args` can tell what was given, and the defaults stay those of RunOptions."""
    for name in names or tuple(FIELDS):
        f = FIELDS[name]
        kwargs = {"dest": name, "default": None, "help": f.metadata["help"]}
        if name == "workers":
            kwargs["type"] = str
            kwargs["metavar"] = "N"
        elif name == "reports_dir":
            kwargs["metavar"] = "DIR"
        else:
            kwargs["type"] = float
            kwargs["metavar"] = "SECONDS"
        parser.add_argument(f.metadata["flag"], **kwargs)


def from_args(args, **overrides) -> RunOptions:
    """RunOptions from parsed arguments (only the flags given) and overrides; validated."""
    given = {}
    for name in FIELDS:
        value = getattr(args, name, None)
        if value is None:
            continue
        given[name] = workers_arg(value) if name == "workers" else value
    given.update({k: v for k, v in overrides.items() if v is not None})
    return RunOptions(**given)


BROKER_HELP = ("a managed broker (qpid-proton-c, rabbitmq-3.10|4.0|4.3, qpid-broker-j-9.2, artemis-2.40.0, "
               "activemq-6.3.1, ...: `brokers list`) or amqp[s]://user:pass@host:port")
PROFILE_HELP = ("profile for a broker given by URL: rabbitmq-4, rabbitmq-3, qpid-broker-j, artemis, "
                "artemis-before-2.32, activemq, qpid-proton-c, generic, or a .toml file")


def add_broker_arguments(add, *, many: bool = False, required: bool = False, note: str = "") -> None:
    """Declare --broker and --profile with `add` (an argparse parser's `add_argument` or a pytest option
    group's `addoption`). `many`: --broker is repeatable (a list, empty when not given); else one value (None
    when not given) or, `required`, exactly one. `note` ends --broker's help (what happens without it)."""
    kwargs = {"action": "append", "default": []} if many else {"default": None, "required": required}
    extra = ("; repeatable" if many else "") + (f"; {note}" if note else "")
    add("--broker", metavar="NAME|URL", help=BROKER_HELP + extra, **kwargs)
    add("--profile", default=None, metavar="NAME|FILE", help=PROFILE_HELP)
