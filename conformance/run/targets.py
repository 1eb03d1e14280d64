"""What the cases of a run run against: the brokers (started once per run) and the targets over them.

A *broker* is a `--broker` value resolved to a `conformance.brokers.BrokerSpec` (a managed node, started and
stopped here, or a URL, checked here) or a broker handle already running in this process (the reference
broker of the suite's own tests); either way the cases get a `conformance.brokers.Broker`. A *target* is what a case result is labelled with: one broker as it is, or
one broker seen through a wrapper that each process applies to its own handle (selfcheck puts the mutant
proxy in front of the broker this way: `Target("rabbitmq-4.0+drain-stripped", "rabbitmq-4.0",
wrap="mutant-proxy", wrap_arg="drain-stripped")`). A target names its wrapper (a name crosses to pytest-xdist
workers); the layer that defines the wrapper registers it in every process of the run with
`register_wrapper(name, factory)` (selfcheck does so through the pytest plugin it hands the run), so this
layer neither imports nor loads by name anything above it. `factory(handle, wrap_arg, label)` returns a
`conformance.brokers.WrappedBroker` whose `name` is the label: a Broker with `annotate(result)` (add what it
saw to a case result) and `close()` (called when the process is done with it).

The check before a run (a URL broker's handshake, which also records its product and version) is bounded by
the run's --frame-timeout, like every other wait; a server that accepts the connection and never speaks AMQP
is a one-line BrokerUnreachable (exit 4). Managed nodes that were started are stopped again however the run
ends, also when a later broker fails to start.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable

from ..options import RunOptions


@dataclass(frozen=True)
class Target:
    label: str                     # the broker name in records, test ids and the verdict table
    broker: str                    # the name of the broker it runs against
    wrap: str | None = None        # the registered wrapper (`register_wrapper`) applied to the broker's handle
    wrap_arg: str | None = None

    def to_json(self) -> dict:
        return {"label": self.label, "broker": self.broker, "wrap": self.wrap, "wrap_arg": self.wrap_arg}


_WRAPPERS: dict[str, Callable] = {}


def register_wrapper(name: str, factory: Callable) -> None:
    """Make `Target(wrap=name)` mean `factory(handle, wrap_arg, label)` in this process (idempotent)."""
    _WRAPPERS[name] = factory


def resolve(values: Iterable[str], profile: str | None = None) -> list:
    """BrokerSpecs for --broker values (the default broker when none; a value named twice runs once)."""
    from .. import brokers
    names = list(dict.fromkeys(values)) or [brokers.DEFAULT_BROKER]
    specs = [brokers.resolve(v, profile) for v in names]       # UsageError (exit 2) for an unknown name or URL
    if profile:
        brokers.load_profile(profile)                          # a bad profile fails before anything starts
    return specs


def default_workers(specs) -> int:
    """`run`'s worker processes when -n is not given: the least that the brokers' profiles ask for (`[broker]
    workers`, e.g. ActiveMQ's 4: a light broker whose cases mostly wait), else RunOptions' default (2)."""
    from .. import brokers
    from ..options import DEFAULTS
    return min((brokers.load_profile(s.profile).workers or DEFAULTS.workers for s in specs),
               default=DEFAULTS.workers)


def _split(record: dict) -> tuple[dict, dict]:
    """A broker's description as (what may cross to a worker, its credentials: `brokers.SECRET_FIELDS`), its
    own node's likewise."""
    from ..brokers import SECRET_FIELDS
    public = {k: v for k, v in record.items() if k not in SECRET_FIELDS and k != "own_node"}
    secret = {k: record[k] for k in SECRET_FIELDS if k in record}
    if "own_node" in record:
        public["own_node"], secret["own_node"] = _split(record["own_node"])
    return public, secret


def _joined(public: dict, secret: dict) -> dict:
    record = {**public, **{k: v for k, v in secret.items() if k != "own_node"}}
    if "own_node" in public:
        record["own_node"] = _joined(public["own_node"], secret.get("own_node", {}))
    return record


def _name_of(source) -> str:
    return source.name


class Brokers:
    """The broker handles of one run in one process, by name: started (the run's controller), attached from
    the controller's records (pytest-xdist workers) or given (handles running in this process)."""

    def __init__(self):
        self.handles: dict[str, object] = {}
        self.records: dict[str, dict] = {}        # name -> its description, brokers.describe (credentials: never print)
        self.specs: dict[str, object] = {}
        self._started: list = []                  # handles whose managed node this process stopped/starts
        self.own_nodes: dict[str, object] = {}    # name -> the handle of its second node (own-node cases)
        self.start_seconds: dict[str, float] = {}  # controller: how long each node took to start
        self._wrapped: dict[str, object] = {}
        self._credentials: str | None = None      # controller: the 0600 file the workers read credentials from
        self.failed: dict[str, str] = {}          # name -> why its managed node did not start (one line)
        self.answer_timeout: float | None = None  # the run's --frame-timeout: bounds housekeeping answers too

    # -- controller ---------------------------------------------------------------------------------------

    @classmethod
    def start(cls, sources: Iterable, options: RunOptions, say: Callable[[str], None] | None = None,
              own_node_cases: Iterable = ()) -> "Brokers":
        """Start or check every broker (BrokerSpecs) and take the given handles as they are. A managed broker
        whose profile has the hooks of one of `own_node_cases` (alarms, queue limits) gets a second throwaway
        node of its own for those cases; all nodes start in parallel. A broker by URL that fails its check
        stops the run before it starts (the nodes already started are stopped, the error raised with its exit
        code); so does a managed node that fails to start when no broker could start. Otherwise a managed node
        that failed is that broker's (or its own-node cases') `error`, its reason one line (`failed`), and the
        others run: one broker's failed start never takes a matrix down."""
        from .. import brokers
        self = cls()
        sources = list(sources)
        specs = [s for s in sources if isinstance(s, brokers.BrokerSpec)]
        if any(s.address is None for s in specs):
            brokers.install_cleanup()          # nodes started here stop at exit and on SIGTERM/SIGHUP
        own_node = [s for s in specs if s.address is None and _wants_own_node(s, own_node_cases)]
        jobs = [(s, False) for s in specs] + [(s, True) for s in own_node]
        try:
            for source in sources:
                if not isinstance(source, brokers.BrokerSpec):         # a handle running in this process
                    self.handles[_name_of(source)] = source
            pool = ThreadPoolExecutor(max_workers=max(1, len(jobs)))
            futures = [pool.submit(_timed_start, spec, options) for spec, _ in jobs]
            try:
                done = [f.exception() or f.result() for f in futures]
            finally:
                # every start ends before we go on, also when a signal cut the wait short: a node that came up
                # meanwhile is then one of ours to stop (below, or by the caller's close)
                pool.shutdown(wait=True)
                for f in futures:
                    if f.exception() is None and f.result()[0].managed is not None:
                        self._started.append(f.result()[0])
            failures = {}
            for (spec, second), outcome in zip(jobs, done):
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, Exception) or spec.address is not None:
                        raise outcome                     # an interrupt; a URL broker: before anything runs
                    failures[(spec.name, second)] = _start_error(spec, outcome)
            if failures and not self.handles and all((s.name, False) in failures for s in specs):
                raise next(iter(failures.values()))      # no broker at all: the first one's error, its exit code
            jobs_ok = []
            for (spec, second), outcome in zip(jobs, done):
                failure = failures.get((spec.name, second))
                if failure is None:
                    jobs_ok.append(((spec, second), outcome))
                elif not second:
                    self.failed[spec.name] = failure.message
                    self.specs[spec.name] = spec
                    self.records[spec.name] = {"name": spec.name, "profile": spec.profile,
                                               "failed": failure.message}
                if failure is not None and say is not None:
                    role = " (the node of its own for alarm and queue-limit cases)" if second else ""
                    cases = "its alarm and queue-limit cases" if second else "its cases"
                    say(f"broker {spec.name}{role}: did not start ({failure.message}); {cases} are `error`")
            for (spec, second), (handle, seconds) in jobs_ok:
                if second:
                    self.own_nodes[spec.name] = handle
                    self.records[spec.name]["own_node"] = brokers.describe(handle, spec)
                    continue
                self.handles[spec.name] = handle
                self.specs[spec.name] = spec
                self.records[spec.name] = brokers.describe(handle, spec)
                self.start_seconds[spec.name] = round(seconds, 2)
            for (name, second), failure in failures.items():       # keyed by the broker's name
                if second and name in self.records:
                    self.records[name]["own_node_failed"] = failure.message
            for (spec, second), (handle, seconds) in jobs_ok:
                if second:
                    self.start_seconds[spec.name + " (own node)"] = round(seconds, 2)
                if say is not None:
                    what = " ".join(x for x in (handle.product, handle.version) if x) or "unknown product"
                    role = " (the node of its own for alarm and queue-limit cases)" if second else ""
                    say(f"broker {spec.name}{role}: {what} at {handle.redacted_url} "
                        f"({'started' if handle.managed is not None else 'checked'} in {seconds:.1f} s)")
        except BaseException:
            self.close()
            raise
        return self

    # -- worker -------------------------------------------------------------------------------------------

    def crossing(self) -> tuple[dict[str, dict], str]:
        """What a pytest-xdist worker gets: the brokers' records without credentials (plain values), and the
        path of a file only this user can read (0600, removed by `close`) holding the credentials."""
        split = {name: _split(record) for name, record in self.records.items()}
        if self._credentials is None:
            fd, self._credentials = tempfile.mkstemp(prefix="amqp-conformance-", suffix=".credentials.json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:          # mkstemp: 0600, this user's only
                json.dump({name: secret for name, (_, secret) in split.items()}, fh)
        return {name: public for name, (public, _) in split.items()}, self._credentials

    @classmethod
    def attached(cls, records: dict[str, dict], credentials: str) -> "Brokers":
        """Handles for brokers another process started (from its `crossing`), made when first asked for."""
        self = cls()
        with open(credentials, encoding="utf-8") as fh:
            secrets = json.load(fh)
        self.records = {name: _joined(public, secrets.get(name, {})) for name, public in records.items()}
        return self

    # -- both ---------------------------------------------------------------------------------------------

    def broker(self, name: str):
        handle = self.handles.get(name)
        if handle is None:
            from .. import brokers
            record = self.records[name]
            if record.get("failed"):
                from ..errors import BrokerStartFailed
                raise BrokerStartFailed(record["failed"])
            handle = self.handles[name] = brokers.attach(record, name)
            self.bound(handle)
        return handle

    def bound(self, handle) -> None:
        """A hung broker costs a housekeeping step (preload, queue set-up, depth) --frame-timeout, not 30 s."""
        from ..brokers.handle import BrokerHandle
        if isinstance(handle, BrokerHandle) and self.answer_timeout is not None:
            handle.answer_timeout = self.answer_timeout

    def own_node(self, name: str):
        """The handle of broker `name`'s second node (own-node cases), or None when the run has none."""
        handle = self.own_nodes.get(name)
        if handle is None and self.records.get(name, {}).get("own_node_failed"):
            from ..errors import BrokerStartFailed
            raise BrokerStartFailed(self.records[name]["own_node_failed"])
        if handle is None and "own_node" in self.records.get(name, {}):
            from .. import brokers
            handle = self.own_nodes[name] = brokers.attach(self.records[name]["own_node"], name)
            self.bound(handle)
        return handle

    def for_case(self, handle, case):
        """Where `case` runs when its target's handle is `handle`: an own-node case (alarms, queue limits) on
        the broker's second node when the run has one, everything else (and any wrapped target) on `handle`."""
        if not getattr(case, "own_node", False):
            return handle
        for name, base in self.handles.items():
            if base is handle:
                return self.own_node(name) or handle
        return handle

    def handle(self, target: Target):
        """The handle a case of `target` runs against (its wrapper applied once per process)."""
        base = self.broker(target.broker)
        if target.wrap is None:
            return base
        wrapped = self._wrapped.get(target.label)
        if wrapped is None:
            factory = _WRAPPERS.get(target.wrap)
            if factory is None:
                raise LookupError(f"no wrapper {target.wrap!r} is registered in this process (registered: "
                                  f"{', '.join(sorted(_WRAPPERS)) or 'none'}); the layer that defines it calls "
                                  "conformance.run.targets.register_wrapper in every process of the run")
            wrapped = factory(base, target.wrap_arg, target.label)
            from ..brokers.interface import WrappedBroker
            if not isinstance(wrapped, WrappedBroker):
                raise TypeError(f"{target.wrap} returned a {type(wrapped).__name__}, not a WrappedBroker")
            self._wrapped[target.label] = wrapped
        return wrapped

    def identities(self) -> dict[str, dict]:
        """name -> url (redacted), profile, product, version: what run.json says about each broker."""
        out = {}
        for name, handle in self.handles.items():
            spec = self.specs.get(name)
            out[name] = {"url": handle.redacted_url, "profile": spec.profile if spec is not None else None,
                         "product": handle.product, "version": handle.version}
            if name in self.start_seconds:
                out[name]["start_s"] = self.start_seconds[name]
            second = self.own_nodes.get(name)
            if second is not None:
                out[name]["own_node"] = {"url": second.redacted_url,
                                         "start_s": self.start_seconds.get(name + " (own node)")}
            elif self.records.get(name, {}).get("own_node_failed"):
                out[name]["own_node"] = {"start_error": self.records[name]["own_node_failed"]}
        for name, why in self.failed.items():
            spec = self.specs.get(name)
            out[name] = {"url": None, "profile": spec.profile if spec is not None else None, "product": None,
                         "version": None, "start_error": why}
        return out

    def close(self) -> None:
        """Close the wrappers made here and stop the managed nodes started here."""
        for wrapped in self._wrapped.values():
            with contextlib.suppress(Exception):
                wrapped.close()
        self._wrapped = {}
        if self._credentials is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._credentials)
            self._credentials = None
        with ThreadPoolExecutor(max_workers=max(1, len(self._started))) as pool:    # nodes stop in parallel
            for handle in self._started:
                pool.submit(_stop_quietly, handle)
        self._started = []


def _stop_quietly(handle) -> None:
    with contextlib.suppress(Exception):
        handle.managed.stop()


def _wants_own_node(spec, cases) -> bool:
    """Whether a managed broker's profile has every hook some own-node case needs (else those cases are
    unsupported on it and a second node would only cost its start)."""
    from .. import brokers
    from ..casekit.spec import has_need
    profile = brokers.load_profile(spec.profile)
    return any(getattr(c, "own_node", False) and all(has_need(profile, h) for h in c.needs) for c in cases)


def _start_error(spec, exc: Exception):
    """A failed start as a ConformanceError with one line (what is not one already: an OSError, say)."""
    from ..errors import BrokerStartFailed, ConformanceError
    if isinstance(exc, ConformanceError):
        return exc
    text = " ".join(str(exc).split()) or "no message"
    return BrokerStartFailed(f"{spec.name} did not start: {type(exc).__name__}: {text}")


def _timed_start(spec, options: RunOptions):
    t0 = time.monotonic()
    handle = _start_one(spec, options)
    return handle, time.monotonic() - t0


def _start_one(spec, options: RunOptions):
    """A managed node started, or a URL broker checked (handshake bounded by --frame-timeout)."""
    from .. import brokers
    return brokers.start(spec, timeout=options.frame_timeout)
