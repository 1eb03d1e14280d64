"""The package's import structure, read with `ast` (nothing is imported): layers import only downward, no
module takes part in an import circle, and cases are run into a run directory in one place only.

Every import counts, also those inside functions. Importing `conformance.a.b` also runs the package
`conformance.a` (its __init__), so an import from outside a package counts as an import of each package on
the way; imports inside one package do not (a package always runs its own __init__ first).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "conformance"

# The layers, lowest first. A module belongs to the layer of the longest prefix that names it ("=name": that
# module only); it may import modules of its own layer and of the layers below, never above.
# (docs/architecture.md draws the same table.)
LAYERS: list[tuple[str, ...]] = [
    ("=conformance", "conformance.errors"),                      # the version, the exit-code table
    ("conformance.verdict", "conformance.catalogue",             # vocabulary: verdicts, requirements,
     "conformance.wire", "conformance.options",                  # the codec; run options are plain data;
     "conformance.expectations"),                                # a team's expected verdicts (the CI gate)
    ("conformance.model", "conformance.report"),                 # the sans-IO model; rendering a report model
    ("conformance.peer",),                                       # the scripted peer (sockets, threads)
    ("conformance.brokers", "conformance.clients"),              # brokers and client libraries under test
    ("conformance.cases", "conformance.casekit"),                # the case vocabulary and the cases
    ("conformance.run",),                                        # the run pipeline: every case of every run
    ("conformance.pytest_plugin", "conformance.suite",           # what runs on the pipeline, or beside it:
     "conformance.explore", "conformance.faultproxy",               # pytest's face, exploring, selfcheck,
     "conformance.history", "conformance.selftest",              # history / report / bisect, reference runs,
     "conformance.traffic"),                                     # judging captures and observed traffic
    ("conformance.cli",),                                        # the command line
]

def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str) -> bool:
    base = PACKAGE.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _is_package(name: str) -> bool:
    return (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()


def imports_of(path: Path) -> set[str]:
    """The conformance modules `path` imports (a `from X import name` counts X.name when that is a module)."""
    name = module_name(path)
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{a.name}" if _exists(f"{module}.{a.name}") else module for a in node.names]
        else:
            continue
        for target in targets:
            if target == "conformance" or target.startswith("conformance."):
                found.add(target)
                parts = target.split(".")                 # the packages on the way run too
                for i in range(1, len(parts)):
                    parent = ".".join(parts[:i])
                    if _is_package(parent) and not (name == parent or name.startswith(parent + ".")):
                        found.add(parent)
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(name: str) -> int:
    best, layer = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix.startswith("="):
                if name == prefix[1:]:
                    return index
            elif (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, layer = len(prefix), index
    assert layer is not None, f"{name} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return layer


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports that run up a layer."""
    return sorted((src, dst) for src, dsts in edges.items() for dst in dsts if layer_of(dst) > layer_of(src))


def test_every_module_has_a_layer():
    for name in graph():
        layer_of(name)


def test_a_module_in_no_layer_is_reported():
    """Only the package's own __init__ is layer 0 by name: a new module must be placed in LAYERS."""
    assert layer_of("conformance") == 0 and layer_of("conformance.wire.serial") == 1
    for new in ("conformance.newthing", "conformance.newpackage.module"):
        with pytest.raises(AssertionError, match="in no layer"):
            layer_of(new)


def test_imports_go_down_only():
    assert upward(graph()) == [], "imports running up a layer (see LAYERS)"


def test_no_import_circles():
    assert circles(graph()) == []


def test_the_checks_see_an_upward_import_and_a_circle():
    """No exception list: the checks above, run on the real graph with one planted import, report it."""
    edges = graph()
    edges["conformance.wire.serial"] = edges["conformance.wire.serial"] | {"conformance.peer.state"}
    assert upward(edges) == [("conformance.wire.serial", "conformance.peer.state")]
    assert ["conformance.peer.state", "conformance.wire.serial"] in [
        [m for m in c if m in ("conformance.peer.state", "conformance.wire.serial")] for c in circles(edges)]
    edges = graph()                                  # one layer up is up too
    edges["conformance.wire.serial"] = edges["conformance.wire.serial"] | {"conformance.model.endpoints"}
    assert upward(edges) == [("conformance.wire.serial", "conformance.model.endpoints")]
    # the smallest circle, and none where there is none
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def _dotted(func) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = _dotted(func.value)
        return f"{inner}.{func.attr}" if inner else func.attr
    return None


def calls(name: str) -> dict[str, int]:
    """module -> how many calls of `name` it makes (`run_case(...)`, `runner.run_case(...)`; `pytest.main`)."""
    found: dict[str, int] = defaultdict(int)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                called = _dotted(node.func) or ""
                if called == name or called.endswith("." + name):
                    found[module_name(path)] += 1
    return dict(found)


def test_one_run_loop():
    """Cases are run in one place (Pipeline.run_one) by one engine (pytest.main in conformance.run.engine)."""
    assert calls("run_case") == {"conformance.run.engine": 1}
    assert calls("pytest.main") == {"conformance.run.engine": 1}


def test_run_directories_are_written_by_the_pipeline_only():
    assert set(calls("RunDirectory.create")) | set(calls("RunDirectory.at")) == {"conformance.run.engine"}
    assert {m for m in calls("record") if m.startswith("conformance.")} <= {"conformance.run.engine"}


# -- written once: serial arithmetic, session and link bookkeeping -------------------------------------------

SERIAL_HOME = "conformance.wire.serial"
BOOKS_HOME = "conformance.peer.state"
# the flow-control model judges what the bookkeeping helps to produce, so it keeps its own on purpose; the
# codec's composites (Flow, Begin, ...) name the same fields because they are the frames
INDEPENDENT = ("conformance.model", "conformance.wire")
LINK_FIELDS = {"delivery_count", "link_credit"}
SESSION_FIELDS = {"next_outgoing_id", "next_incoming_id"}


def _constant(node) -> int | None:
    """The value of a constant integer expression (0xFFFFFFFF, 1 << 32, 2 ** 32 - 1), else None."""
    if not all(isinstance(n, (ast.Constant, ast.BinOp, ast.operator, ast.UnaryOp, ast.unaryop))
               for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<constant>", "eval"), {"__builtins__": {}})
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), ast.parse(path.read_text("utf-8"))


def test_one_serial_number_helper():
    """RFC 1982 arithmetic (add, compare, distance) and the 2^32 modulus are defined in wire.serial only."""
    found = []
    for name, tree in _modules():
        if name == SERIAL_HOME:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.decorator_list and (   # (a case may be named so)
                    "serial" in node.name or node.name.endswith("_room")):
                found.append(f"{name}: def {node.name}")
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) and node.value is not None else []
            if targets and not name.startswith("conformance.wire.") and \
                    _constant(node.value) in (1 << 32, (1 << 32) - 1, 1 << 31):
                found.append(f"{name}: {ast.unparse(targets[0])} = {ast.unparse(node.value)}")
    assert found == [], "serial arithmetic outside conformance.wire.serial: " + "; ".join(found)


def test_one_session_and_link_bookkeeping():
    """Classes that keep a link's delivery-count and credit, or a session's transfer ids, live in
    peer.state only (the model and the codec's frames aside)."""
    found = []
    for name, tree in _modules():
        if name == BOOKS_HOME or name.startswith(INDEPENDENT):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            fields = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            fields |= {t.attr for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets
                       if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
            if LINK_FIELDS <= fields or SESSION_FIELDS <= fields:
                found.append(f"{name}.{node.name}")
    assert found == [], "a second copy of session/link bookkeeping (use conformance.peer.state): " + ", ".join(found)


@pytest.mark.parametrize("user", ["conformance.faultproxy.faults", "conformance.selftest.broker"])
def test_the_proxy_and_the_reference_broker_keep_their_books_in_peer_state(user):
    assert BOOKS_HOME in graph()[user]


# -- written once: the verdict vocabulary ---------------------------------------------------------------------

VERDICT_HOME = "conformance.verdict"
VERDICT_NAMES = {"pass", "fail", "non-strict", "informational", "unsupported", "error"}


def test_one_verdict_vocabulary():
    """The verdict names, their orders, colours and groups (judged, broken...) are spelled out in
    conformance.verdict only: no other module writes a tuple, list, set or dict (keys) of three or more of them."""
    found = []
    for name, tree in _modules():
        if name == VERDICT_HOME:
            continue
        for node in ast.walk(tree):
            items = node.keys if isinstance(node, ast.Dict) else \
                node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
            named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in VERDICT_NAMES}
            if len(named) >= 3:
                found.append(f"{name}:{node.lineno} {sorted(named)}")
    assert found == [], "verdict names spelled out again (import them from conformance.verdict): " + "; ".join(found)


# -- no import hidden in a string ----------------------------------------------------------------------------

def test_no_module_named_above_in_a_string():
    """A string that names a conformance module ("conformance.x.y", "conformance.x:callable", e.g. for
    importlib or pytest's -p) counts as an import: it may name only its own layer or those below."""
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.startswith("conformance.") and " " not in node.value:
                target = node.value.split(":")[0]
                if _exists(target) and layer_of(target) > layer_of(name):
                    found.append(f"{name}:{node.lineno} names {node.value}")
    assert found == [], "modules named above their own layer: " + "; ".join(found)
