"""Conformance cases, one module per spec section (`s2_6_8_synchronous_get` holds the 2.6.8 cases); the
vocabulary they are written in lives in `conformance.casekit`.

Importing this package registers every case in `REGISTRY` (id -> CaseSpec). Case ids are
`<section>/<n>`, e.g. `2.6.8/1`; `select()` resolves ids, section prefixes and requirement ids.
"""

from __future__ import annotations

import importlib
import pkgutil

from .. import catalogue
from ..errors import RunBroken, UnknownCaseError
from ..casekit.spec import CLIENT_REGISTRY, REGISTRY, CaseSpec, case  # noqa: F401

_loaded: set[str] = set()      # the module prefixes already imported


def _load(prefix: str, registry: dict) -> dict[str, CaseSpec]:
    """Import every module named `<prefix><digit>...` (idempotent); `registry` ordered by section and number."""
    if prefix not in _loaded:
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith(prefix) and info.name[len(prefix):len(prefix) + 1].isdigit():
                _import_section(f"{__name__}.{info.name}")
        _loaded.add(prefix)
    return dict(sorted(registry.items(), key=lambda kv: case_sort_key(kv[0])))


def load_all() -> dict[str, CaseSpec]:
    """Import every section module (idempotent) and return the registry ordered by section and number."""
    return _load("s", REGISTRY)


def load_clients() -> dict[str, CaseSpec]:
    """The client cases (modules `client_s<section>_...`: the suite plays the broker, a client library is
    judged), ordered like `load_all`; kept apart from the broker cases."""
    return _load("client_s", CLIENT_REGISTRY)


def _import_section(module: str) -> None:
    """Import one section module; one that fails to import is a suite error naming it (never a traceback,
    never a run that silently lacks its cases)."""
    try:
        importlib.import_module(module)
    except Exception as exc:     # whatever the module raised: the one documented error, naming the module
        raise RunBroken(f"suite error: the case module {module} does not import ({type(exc).__name__}: {exc}); "
                        "fix it (python -c 'import " + module + "' shows the traceback)") from exc


def case_sort_key(case_id: str) -> tuple:
    section, number = case_id.split("/")
    return catalogue.section_key(section) + (int(number),)


def select(selectors: list[str] | None, kind: str = "broker") -> list[CaseSpec]:
    """Cases named by ids (`2.6.8/1`), sections (`2.6.8`), or requirement ids; all when none given.
    `kind` "client": among the client cases."""
    cases = load_clients() if kind == "client" else load_all()
    if not selectors:
        return list(cases.values())
    chosen: dict[str, CaseSpec] = {}
    for sel in selectors:
        matched = [c for cid, c in cases.items()
                   if cid == sel or c.section == sel or c.section.startswith(sel + ".") or sel in c.requirements]
        if not matched:
            raise UnknownCaseError(
                f"unknown case, section or requirement {sel!r}; run `amqp-conformance list` to see the ids")
        for c in matched:
            chosen[c.id] = c
    return sorted(chosen.values(), key=lambda c: case_sort_key(c.id))
