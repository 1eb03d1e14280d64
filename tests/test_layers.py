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
    ("conformance.verdict", "conformance.results",               # vocabulary: verdicts, the case record,
     "conformance.catalogue", "conformance.wire",                # requirements, the codec; run options are
     "conformance.options", "conformance.expectations"),         # plain data; a team's expected verdicts
    ("conformance.model", "conformance.report"),                 # the sans-IO model; rendering a report model
    ("conformance.peer",),                                       # the scripted peer (sockets, threads)
    ("conformance.brokers", "conformance.clients"),              # brokers and client libraries under test
    ("conformance.cases", "conformance.casekit"),                # the case vocabulary and the cases
    ("conformance.run",),                                        # the run pipeline: every case of every run
    ("conformance.pytest_plugin", "conformance.suite",           # what runs on the pipeline, or beside it:
     "conformance.explore", "conformance.faultproxy",               # pytest's face, exploring, selfcheck,
     "conformance.history", "conformance.reference",              # history / report / bisect, reference runs,
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
    """Cases are run in one place (CaseRunner.run_one) by one engine (pytest.main in conformance.run.engine)."""
    assert calls("run_case") == {"conformance.run.runner": 1}
    assert calls("pytest.main") == {"conformance.run.engine": 1}


def test_run_directories_are_written_by_the_pipeline_only():
    assert set(calls("RunDirectory.create")) | set(calls("RunDirectory.at")) == {"conformance.run.controller"}
    assert {m for m in calls("record") if m.startswith("conformance.")} <= {"conformance.run.runner"}


def test_the_record_is_read_from_its_own_room():
    """Readers of results import conformance.results, not the run pipeline's run directory; and no module imports
    a private name (`_name`) from another room."""
    assert {m for m, deps in graph().items() if "conformance.run.directory" in deps} <= \
        {m for m in graph() if m.startswith("conformance.run.")}
    found = []
    for name, tree in _modules():
        room = name.split(".")[:2]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                here = name.split(".") if _is_package(name) else name.split(".")[:-1]
                base = here[:len(here) - node.level + 1] + (node.module.split(".") if node.module else [])
                if base[:2] != room:
                    found += [f"{name} imports {'.'.join(base)}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == [], "private names imported across rooms: " + "; ".join(found)


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


@pytest.mark.parametrize("user", ["conformance.faultproxy.faults", "conformance.reference.broker"])
def test_the_proxy_and_the_reference_broker_keep_their_books_in_peer_state(user):
    assert BOOKS_HOME in graph()[user]


# -- written once: the verdict vocabulary and the exit codes ---------------------------------------------------

VERDICT_HOME = "conformance.verdict"
VERDICT_NAMES = {"pass", "fail", "non-strict", "informational", "unsupported", "error"}
# Modules that print AMQP's own names, two of which are also verdict words: the `error` field of detach, end,
# close and rejected and the `error` type, Discharge's `fail` field (the codec's tables from the spec; the
# ladder's columns for those fields). They hold no verdict.
AMQP_NAMES = ("conformance.wire", "conformance.peer.ladder")
KEY_CALLS = {"get", "pop", "setdefault", "getattr", "hasattr", "setattr"}
TEXT_CALLS = {"lower", "upper", "casefold", "strip"}


def _parents(tree) -> dict:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _names_a_field(node, parent) -> bool:
    """A verdict word used as a name, not as a verdict: a dict key, a subscript (`record["error"]`), the key of
    .get / .pop / .setdefault / getattr (`answer.get("error")`), or a word searched for in text
    (`"error" in line.lower()`)."""
    if isinstance(parent, ast.Dict) and any(k is node for k in parent.keys):
        return True
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, ast.Call) and parent.args and (
            parent.args[0] is node or (len(parent.args) > 1 and parent.args[1] is node and
                                       _dotted(parent.func) in ("getattr", "hasattr", "setattr"))):
        called = (_dotted(parent.func) or "").rsplit(".", 1)[-1]
        return called in KEY_CALLS and (parent.args[0] is node) != (called in ("getattr", "hasattr", "setattr"))
    if isinstance(parent, ast.Compare) and parent.left is node and isinstance(parent.ops[0], (ast.In, ast.NotIn)):
        right = parent.comparators[0]
        return isinstance(right, ast.Call) and (_dotted(right.func) or "").rsplit(".", 1)[-1] in TEXT_CALLS
    return False


def verdict_literals(tree) -> list[str]:
    """`line: 'word'` for each verdict name written as a string literal where it stands for a verdict."""
    parents = _parents(tree)
    found = [node for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VERDICT_NAMES
             and not _names_a_field(node, parents.get(node))]
    return [f"{node.lineno}: {node.value!r}" for node in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def test_one_verdict_vocabulary():
    """The verdict names, their orders, colours and groups (judged, broken...) are spelled out in
    conformance.verdict only: no other module writes a single verdict name as a string literal (use
    `Verdict.FAIL`, the groups or the predicates of conformance.results)."""
    found = []
    for name, tree in _modules():
        if name == VERDICT_HOME or name.startswith(AMQP_NAMES):
            continue
        found += [f"{name}:{where}" for where in verdict_literals(tree)]
    assert found == [], "verdict names spelled out (import them from conformance.verdict): " + "; ".join(found)


def test_the_verdict_guard_sees_one_literal_and_passes_field_names():
    flagged = verdict_literals(ast.parse(
        'if record["verdict"] == "fail":\n    pass\n'
        'x = record.get("verdict", "error")\n'
        'kinds = {"regression": ("pass",)}\n'
        'badge("informational", "caught")\n'))
    assert flagged == ["1: 'fail'", "3: 'error'", "4: 'pass'", "5: 'informational'"]
    assert verdict_literals(ast.parse(
        'a = {"error": None}; b = reply["error"]; c = answer.get("error"); d = getattr(frame, "error", None)\n'
        'e = "error" in line.lower()\n')) == []


EXIT_HOME = "conformance.errors"


def _is_exit_code(node, names: set) -> bool:
    """`exit_code`, `x.exit_code`, `exit_code(...)`, or a name given one of those."""
    if isinstance(node, ast.Call):
        node = node.func
    dotted = _dotted(node) or ""
    return dotted.rsplit(".", 1)[-1] == "exit_code" or (isinstance(node, ast.Name) and node.id in names)


def exit_code_literals(name: str, tree) -> list[str]:
    """Exit codes written as numbers: `exit_code=7`, `sys.exit(2)` / `SystemExit(2)`, `EXIT_X = 3`, `code == 14`,
    and in a command-line module (`cli`, `__main__`) a function returning a number (`return 0`, `... else 2`)."""
    found = []

    def ints(node) -> list:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return [node]
        if isinstance(node, ast.IfExp):
            return ints(node.body) + ints(node.orelse)
        if isinstance(node, ast.BoolOp):
            return [n for v in node.values for n in ints(v)]
        return []

    command_line = name.rsplit(".", 1)[-1] in ("cli", "__main__")
    exit_names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _is_exit_code(node.value, set())
                  for t in node.targets if isinstance(t, ast.Name)}       # code = exit_code(records)
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "exit_code":
            found += [f"{n.lineno}: exit_code={n.value}" for n in ints(node.value)]
        elif isinstance(node, ast.Call) and (_dotted(node.func) or "") in ("sys.exit", "exit", "SystemExit"):
            found += [f"{n.lineno}: exit({n.value})" for a in node.args[:1] for n in ints(a)]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("EXIT_")
                                                  for t in node.targets):
            found += [f"{n.lineno}: EXIT_... = {n.value}" for n in ints(node.value)]
        elif isinstance(node, ast.Compare) and _is_exit_code(node.left, exit_names):
            found += [f"{n.lineno}: code == {n.value}" for c in node.comparators for n in ints(c)]
        elif command_line and isinstance(node, ast.Return) and node.value is not None:
            found += [f"{n.lineno}: return {n.value}" for n in ints(node.value)]
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_exit_codes_come_from_the_table():
    """Every exit code of the suite is a name from conformance.errors (git bisect run's own codes, in
    history.bisect, are a protocol of git's)."""
    found = []
    for name, tree in _modules():
        if name != EXIT_HOME:
            found += [f"{name}:{where}" for where in exit_code_literals(name, tree)]
    assert found == [], "exit codes written as numbers (use conformance.errors.EXIT_*): " + "; ".join(found)


def test_the_exit_code_guard_sees_a_number():
    tree = ast.parse("def cmd(a):\n    if a:\n        return 2\n    return EXIT_OK if a else 0\n"
                     "raise ConformanceError('x', exit_code=7)\ncode = exit_code(records)\nif code == 14:\n    pass\n")
    assert exit_code_literals("conformance.x.cli", tree) == ["3: return 2", "4: return 0", "5: exit_code=7",
                                                             "7: code == 14"]
    assert exit_code_literals("conformance.x.engine", ast.parse("def f():\n    return 0\n")) == []


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


# The codec and the model follow the spec's tables, one type or rule after another: they may run long. Every
# other module says one thing and stays within this many lines (split a module that outgrows it by concern).
MAX_LINES = 500
LONG_ALLOWED = ("conformance.wire", "conformance.model")


def long_modules(root: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    return sorted(f"{module_name(p)} ({n} lines)" for p in root.rglob("*.py")
                  if not module_name(p).startswith(LONG_ALLOWED)
                  and (n := len(p.read_text("utf-8").splitlines())) > limit)


def test_no_module_outgrows_its_concern():
    assert long_modules() == [], f"modules over {MAX_LINES} lines (split by concern): {long_modules()}"


def test_the_size_guard_sees_a_long_module():
    assert long_modules(limit=50), "a limit every module breaks must name modules"
