"""The requirement catalogue: every normative flow-control sentence with a stable id.

This module owns loading `requirements.toml` (the single source of requirement ids, sections, levels and
verbatim text) and looking requirements up. It knows nothing about cases or brokers.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources

LEVELS = ("MUST", "SHOULD", "MAY", "informative")


@dataclass(frozen=True)
class Requirement:
    id: str
    section: str
    level: str
    text: str
    observable: bool
    obligation: bool = False     # a request the broker must answer: ending the session/connection with an
                                 # error while it is open breaks the requirement
    unobservable_because: str = ""   # observable false: why no frame of the broker's can show it kept

    @property
    def part(self) -> str:
        """The spec part the section belongs to, e.g. "Part 2: Transport"."""
        return {"1": "Part 1: Types", "2": "Part 2: Transport", "3": "Part 3: Messaging",
                "4": "Part 4: Transactions", "5": "Part 5: Security"}[self.section.split(".")[0]]


class UnknownRequirement(KeyError):
    pass


def _section_key(section: str) -> tuple:
    return tuple(int(p) for p in section.split("."))


@functools.lru_cache(maxsize=1)
def load() -> dict[str, Requirement]:
    data = tomllib.loads(resources.files(__package__).joinpath("requirements.toml").read_text("utf-8"))
    out: dict[str, Requirement] = {}
    for row in data["requirement"]:
        req = Requirement(row["id"], row["section"], row["level"], row["text"], bool(row["observable"]),
                          bool(row.get("obligation", False)), str(row.get("unobservable_because", "")).strip())
        if req.observable == bool(req.unobservable_because):
            raise ValueError(f"requirement {req.id}: unobservable_because is required when observable is false, "
                             "and only then")
        if req.level not in LEVELS:
            raise ValueError(f"requirement {req.id}: unknown level {req.level!r}")
        if req.id in out:
            raise ValueError(f"requirement {req.id} is listed twice")
        if not req.id.startswith(req.section + "/"):
            raise ValueError(f"requirement {req.id} does not start with its section {req.section}")
        out[req.id] = req
    return dict(sorted(out.items(), key=lambda kv: (_section_key(kv[1].section), kv[0])))


def get(requirement_id: str) -> Requirement:
    try:
        return load()[requirement_id]
    except KeyError:
        raise UnknownRequirement(requirement_id) from None


def section_key(section: str) -> tuple:
    return _section_key(section)
