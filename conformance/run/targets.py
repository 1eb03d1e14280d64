"""What the cases of a run run against: the brokers (started once per run) and the targets over them.

A *broker* is a `--broker` value resolved to a `conformance.brokers.BrokerSpec` (a managed node, started and
stopped here, or a URL, checked here) or a broker handle already running in this process (the reference
broker of the suite's own tests); either way the cases get a `conformance.brokers.Broker`. A *target* is what a case result is labelled with: one broker as it is, or
one broker seen through a wrapper that each process applies to its own handle (selfcheck puts the mutant
proxy in front of the broker this way: `Target("rabbitmq-4.0+drain-stripped", "rabbitmq-4.0",
wrap="conformance.mutants.selfcheck:proxied", wrap_arg="drain-stripped")`). The wrapper is named, not
imported, so this layer never imports the layers above it: `factory(handle, wrap_arg, label)` returns a
`conformance.brokers.WrappedBroker` whose `name` is the label: a Broker with `annotate(result)` (add what it
saw to a case result) and `close()` (called when the process is done with it).

The check before a run (a URL broker's handshake, which also records its product and version) is bounded by
the run's --frame-timeout, like every other wait; a server that accepts the connection and never speaks AMQP
is a one-line BrokerUnreachable (exit 4). Managed nodes that were started are stopped again however the run
ends, also when a later broker fails to start.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from .options import RunOptions


@dataclass(frozen=True)
class Target:
    label: str                     # the broker name in records, test ids and the verdict table
    broker: str                    # the name of the broker it runs against
    wrap: str | None = None        # "module:callable" that wraps the broker's handle in each process
    wrap_arg: str | None = None

    def to_json(self) -> dict:
        return {"label": self.label, "broker": self.broker, "wrap": self.wrap, "wrap_arg": self.wrap_arg}


def resolve(values: Iterable[str], profile: str | None = None) -> list:
    """BrokerSpecs for --broker values (the default broker when none; a value named twice runs once)."""
    from .. import brokers
    names = list(dict.fromkeys(values)) or [brokers.DEFAULT_BROKER]
    specs = [brokers.resolve(v, profile) for v in names]       # UsageError (exit 2) for an unknown name or URL
    if profile:
        brokers.load_profile(profile)                          # a bad profile fails before anything starts
    return specs


def _name_of(source) -> str:
    return source.name


class Brokers:
    """The broker handles of one run in one process, by name: started (the run's controller), attached from
    the controller's records (pytest-xdist workers) or given (handles running in this process)."""

    def __init__(self):
        self.handles: dict[str, object] = {}
        self.records: dict[str, dict] = {}        # name -> brokers.describe(...) (carries credentials: never print)
        self.specs: dict[str, object] = {}
        self._started: list = []                  # handles whose managed node this process stopped/starts
        self._wrapped: dict[str, object] = {}

    # -- controller ---------------------------------------------------------------------------------------

    @classmethod
    def start(cls, sources: Iterable, options: RunOptions, say: Callable[[str], None] | None = None) -> "Brokers":
        """Start or check every broker (BrokerSpecs) and take the given handles as they are. On any failure
        the nodes already started are stopped and the error (a ConformanceError with its exit code) raised."""
        from .. import brokers
        self = cls()
        try:
            for source in sources:
                if not isinstance(source, brokers.BrokerSpec):         # a handle running in this process
                    self.handles[_name_of(source)] = source
                    continue
                t0 = time.monotonic()
                handle = _start_one(source, options)
                if handle.managed is not None:
                    self._started.append(handle)
                self.handles[source.name] = handle
                self.specs[source.name] = source
                self.records[source.name] = brokers.describe(handle, source)
                if say is not None:
                    what = " ".join(x for x in (handle.product, handle.version) if x) or "unknown product"
                    say(f"broker {source.name}: {what} at {handle.redacted_url} "
                        f"({'started' if handle.managed is not None else 'checked'} in {time.monotonic() - t0:.1f} s)")
        except BaseException:
            self.close()
            raise
        return self

    # -- worker -------------------------------------------------------------------------------------------

    @classmethod
    def attached(cls, records: dict[str, dict]) -> "Brokers":
        """Handles for brokers another process started (from its `records`), made when first asked for."""
        self = cls()
        self.records = dict(records)
        return self

    # -- both ---------------------------------------------------------------------------------------------

    def broker(self, name: str):
        handle = self.handles.get(name)
        if handle is None:
            from .. import brokers
            record = self.records[name]
            spec = brokers.BrokerSpec(name, record["url"] if not record["managed"] else None, record["profile"])
            handle = self.handles[name] = brokers.attach(spec, record)
        return handle

    def handle(self, target: Target):
        """The handle a case of `target` runs against (its wrapper applied once per process)."""
        base = self.broker(target.broker)
        if target.wrap is None:
            return base
        wrapped = self._wrapped.get(target.label)
        if wrapped is None:
            module, _, name = target.wrap.partition(":")
            factory = getattr(importlib.import_module(module), name)
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
        return out

    def close(self) -> None:
        """Close the wrappers made here and stop the managed nodes started here."""
        for wrapped in self._wrapped.values():
            with contextlib.suppress(Exception):
                wrapped.close()
        self._wrapped = {}
        for handle in self._started:
            with contextlib.suppress(Exception):
                handle.managed.stop()
        self._started = []


def _start_one(spec, options: RunOptions):
    """A managed node started, or a URL broker checked (handshake bounded by --frame-timeout)."""
    from .. import brokers
    return brokers.start(spec, timeout=options.frame_timeout)
