"""The case registry: how a conformance case is declared (`@case`) and what its declaration says.

A case declares its *subject* (the requirement(s) it exists to judge) and every other requirement its
steps may record a finding on. The flow-control model judges every transcript after the case (and a
connection the broker dropped without a close frame is judged too), so those requirements are judged by
every case (`CaseSpec.judged`). A finding on a requirement outside
`judged` is a suite error (`conformance.casekit.executor`): declared = judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .. import catalogue
from ..model import emitted_requirement_ids

CASE_ID = re.compile(r"^\d+(\.\d+)+/\d+$")

# What is judged over every case's whole exchange, in catalogue order: the model's requirements, and a
# connection dropped without a close frame while the broker is alive (2.4.3).
MODEL_REQUIREMENTS: tuple[str, ...] = tuple(r for r in catalogue.load() if r in emitted_requirement_ids()
                                            or r == "2.4.3/close-frame-first")


@dataclass(frozen=True)
class CaseSpec:
    """A registered case: its id (`<section>/<n>`, e.g. `2.6.8/1`), what it checks, and its body."""

    id: str
    title: str
    requirements: tuple[str, ...]      # every requirement the case's own steps may judge, subject first
    func: Callable[[Any], Any]
    figure: str | None = None
    expectation: str = ""
    needs: tuple[str, ...] = ()       # profile hooks the case needs (else: unsupported)
    exclusive: bool = False           # broker-wide side effects (alarms): never concurrent with others
    module: str = ""
    subject: tuple[str, ...] = ()     # the requirement(s) the case exists to judge
    own_node: bool = False            # node-wide state (alarms, queue limits): on a node of its own when the run
                                      # has one (a managed broker's second node), else on the broker itself
    deliberate: tuple[str, ...] = ()  # requirements our own frames break on purpose: the case's subject is the
                                      # broker's answer to that error (tests/cases/test_own_frames.py)
    kind: str = "broker"              # whose frames are judged: "broker", or "client" (a client library driven
                                      # through its API against a scripted broker: casekit/client_context.py)
    refusals_judged: tuple[str, ...] = ()   # error conditions that are the case's subject, not a refusal

    @property
    def answers(self) -> tuple[str, ...]:
        """Error conditions the case judges as the broker's answer (never read as a refusal by configuration):
        its own, and resource-limit-exceeded for a case that raises alarms or fills queues (a broker may close
        or detach with it: that is the behaviour the case records)."""
        limits = ("amqp:resource-limit-exceeded",) if any(
            h.endswith("_alarm") or h.startswith("queue_") for h in self.needs) else ()
        return self.refusals_judged + limits

    @property
    def section(self) -> str:
        return self.id.split("/")[0]

    @property
    def judged(self) -> tuple[str, ...]:
        """Every requirement a finding of this case may name: its own, then the model's."""
        return self.requirements + tuple(r for r in MODEL_REQUIREMENTS if r not in self.requirements)

    @property
    def level(self) -> str:
        """The strongest level among the requirements the case's own steps check."""
        levels = [catalogue.get(r).level for r in self.requirements]
        for lv in catalogue.LEVELS:
            if lv in levels:
                return lv
        return "informative"

    @property
    def description(self) -> str:
        return (self.func.__doc__ or "").strip()


def missing_hook_reason(hook: str) -> str:
    """The one-line reason of a case that needs a hook its broker's profile lacks (verdict unsupported)."""
    if "|" in hook:
        names = " or ".join(repr(h) for h in hook.split("|"))
        return f"the broker profile has none of the hooks {names}; add one to the profile to run this case"
    return f"the broker profile has no {hook!r} hook; add one to the profile to run this case"


def has_need(holder, need: str) -> bool:
    """Whether `holder` (a broker handle or profile: `has_hook(name)`) provides `need`: one hook name, or
    alternatives "a|b" (any of them will do, e.g. a queue limit in messages or in bytes)."""
    return any(holder.has_hook(name) for name in need.split("|"))


REGISTRY: dict[str, CaseSpec] = {}
CLIENT_REGISTRY: dict[str, CaseSpec] = {}    # client cases (kind "client"), numbered from 101 in their section


def case(id: str, title: str, requirements: list[str] | tuple[str, ...], *, subject: list[str] | tuple[str, ...] = (),
         figure: str | None = None, expectation: str = "", needs: tuple[str, ...] = (), exclusive: bool = False,
         own_node: bool = False, deliberate: list[str] | tuple[str, ...] = (), refusals_judged: tuple[str, ...] = (),
         kind: str = "broker"):
    """Register a conformance case. The decorated function takes a CaseContext. `subject` defaults to the
    first requirement; the subject must be among `requirements`. `needs`: profile hooks, "a|b" for either (checked before
    anything else: unsupported without them); `exclusive`: nothing runs beside it on its broker (implies
    `own_node`); `own_node`: runs on the run's second node of a managed broker, away from the other cases;
    `deliberate`: the MUST/SHOULD requirements our own frames break on purpose (the subject is the broker's
    answer to that error); our frames break nothing else. `refusals_judged`: error conditions of
    `findings.REFUSALS` that are the case's subject (see `CaseSpec.answers`). `kind`: "client" registers a
    client case (casekit/client_context.py)."""
    if not CASE_ID.match(id):
        raise ValueError(f"case id {id!r} must look like <section>/<n>, e.g. 2.6.8/1")
    subject = tuple(subject) or tuple(requirements[:1])
    if kind == "client" and (needs or exclusive or own_node or refusals_judged):
        # what a broker's profile, node or configuration answers: a client subject has none of it
        raise ValueError(f"case {id}: a client case takes no broker hooks, nodes or refusals (needs, exclusive, "
                         "own_node, refusals_judged)")

    registry = CLIENT_REGISTRY if kind == "client" else REGISTRY

    def register(func):
        if id in REGISTRY or id in CLIENT_REGISTRY:
            known = (REGISTRY.get(id) or CLIENT_REGISTRY[id]).module
            raise ValueError(f"case id {id} registered twice ({known} and {func.__module__})")
        for r in requirements:
            catalogue.get(r)  # raises UnknownRequirement for a typo
        missing = [r for r in subject if r not in requirements]
        if missing:
            raise ValueError(f"case {id}: subject {missing} is not among its requirements")
        for r in deliberate:
            catalogue.get(r)
        registry[id] = CaseSpec(id, title, tuple(requirements), func, figure, expectation, tuple(needs),
                                exclusive, func.__module__, subject, own_node or exclusive, tuple(deliberate), kind,
                                tuple(refusals_judged))
        return func

    return register
