"""The README stays a page (at most 8,000 characters) and every relative link in README.md and docs/*.md
leads to a file that exists and, with a #fragment, to a heading of that file (GitHub's anchor rules)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
README_LIMIT = 8000


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces to dashes,
    a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)                      # a link-like text in code is no link
    return [target for target in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def test_readme_fits_on_a_page():
    size = len((ROOT / "README.md").read_text(encoding="utf-8"))
    assert size <= README_LIMIT, \
        f"README.md is {size} characters (at most {README_LIMIT}): move reference material into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{fragment} in {dest.name}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_the_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[ok](#a-title) [bad](#no-such) [gone](missing.md) `[code](x.md)`\n")
    assert links(page) == ["#a-title", "#no-such", "missing.md"]
    assert anchors(page) == {"a-title"}


# -- every module, file and function the docs name exists -----------------------------------------------------

import ast  # noqa: E402
import builtins  # noqa: E402
import importlib.util  # noqa: E402

PACKAGE = ROOT / "conformance"
SPAN = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\((.*)\))?$")
CALL = re.compile(r"`([A-Za-z_]\w*)\(([^`]*)\)`")
PARAMS = re.compile(r"\s*[a-z_]\w*\s*(,\s*[a-z_]\w*\s*)*")
FILE_SUFFIXES = (".json", ".jsonl", ".md", ".py", ".toml", ".txt", ".html", ".xml", ".log", ".sh", ".ini", ".lock")
TOP = sorted(p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
             if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists()))
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _module_file(dotted: str) -> Path | None:
    base = ROOT / dotted.replace(".", "/")
    return base / "__init__.py" if (base / "__init__.py").exists() else \
        base.with_suffix(".py") if base.with_suffix(".py").exists() else None


def _tree(path: Path, cache: dict = {}) -> ast.Module:    # noqa: B006  (a cache for this test run)
    if path not in cache:
        cache[path] = ast.parse(path.read_text("utf-8"))
    return cache[path]


def _top_names(path: Path) -> dict:
    """name -> its def/class node (None for assignments and imports) at the top of a module."""
    names: dict = {}
    for node in _tree(path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update({n.id: None for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
    return names


def _members(cls: ast.ClassDef) -> set[str]:
    out = set()
    for n in ast.walk(cls):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
    return out


def _takes(node, params: list[str]) -> bool:
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            return set(params) <= _members(node)
        node = init
    a = node.args
    known = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x}
    return a.kwarg is not None or set(params) <= known


def resolve(dotted: str, params: list[str] | None = None) -> str | None:
    """None when `conformance.x.y[.Name[.member]]` names a module and what it defines; else what is missing."""
    parts = dotted.split(".")
    cut = next((i for i in range(len(parts), 0, -1) if _module_file(".".join(parts[:i]))), 0)
    if not cut:
        return "no such module"
    rest, path = parts[cut:], _module_file(".".join(parts[:cut]))
    node = None
    for i, name in enumerate(rest):
        if i == 0:
            names = _top_names(path)
            if name not in names:
                return f"{'.'.join(parts[:cut])} defines no {name}"
            node = names[name]
        elif isinstance(node, ast.ClassDef):
            if name not in _members(node):
                return f"{node.name} has no {name}"
            node = next((n for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                         and n.name == name), None)
        else:
            break
    if params and node is not None and not isinstance(node, ast.Module) and not _takes(node, params):
        return f"{rest[-1]} takes no {', '.join(params)}"
    return None


def _text(page: Path) -> str:
    """The page without its fenced blocks (lines kept, so line numbers stay right)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text(encoding="utf-8"))


def named_paths(page: Path) -> list[str]:
    """Files, modules and functions named in `page` that do not exist, as `page:line: what: why`."""
    text, out = _text(page), []
    for m in SPAN.finditer(text):
        span, where = m.group(1).strip(), f"{page.name}:{text[:m.start()].count(chr(10)) + 1}"
        if re.match(r"(conformance|tests|benchmarks|fixtures|spec|docs)/", span):
            path = span.split()[0].rstrip("/")
            if not any(c in path for c in "<*{") and not (ROOT / path).exists():
                out.append(f"{where}: `{span}`: no such file")
            continue
        match = DOTTED.match(span)
        if not match or match.group(1).endswith(FILE_SUFFIXES):
            continue
        dotted, args = match.groups()
        first, later = dotted.split(".")[0], dotted.split(".")[1:]
        if first == "conformance":
            full = dotted
        elif first in TOP:
            full = "conformance." + dotted
        elif first[0].islower() and (len(later) > 1 or any(p[0].isupper() and len(p) > 1 for p in later)) and \
                importlib.util.find_spec(first) is None:
            full = "conformance." + dotted          # reads as a path of ours (room.module.Class, room.module.f)
        else:
            continue
        params = [p.strip() for p in args.split(",")] if args and PARAMS.fullmatch(args) else None
        why = resolve(full, params)
        if why:
            out.append(f"{where}: `{span}`: {why}")
    return out


def _defined_anywhere() -> dict[str, list]:
    found: dict[str, list] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"[A-Z][A-Za-z]+", node.value) and path.parent.name == "wire":
                found.setdefault(node.value, []).append(None)       # the codec's composites, made from its tables
    return found


def module_contracts(page: Path) -> list[str]:
    """In the module contracts (sections headed `## conformance.x`): a module named as `name`: `...` is a module
    of that package, and a call `name(a, b)` names something the package defines, taking those parameters."""
    text, out, defined = _text(page), [], _defined_anywhere()
    heads = list(re.finditer(r"^##\s+(.*)$", text, re.M))
    for head, after in zip(heads, heads[1:] + [None]):
        packages = re.findall(r"\b(conformance(?:\.\w+)+)", head.group(1))
        if not packages or not head.group(1).startswith("conformance."):
            continue
        start, end = head.end(), after.start() if after else len(text)
        body = text[start:end]
        for m in re.finditer(r"`([a-z_][\w.]*)`(?:\s*\([^)]*\))?:\s*`", body):
            name, where = m.group(1), f"{page.name}:{text[:start + m.start()].count(chr(10)) + 1}"
            if not any(_module_file(f"{p}.{name}") for p in packages) and not _module_file(f"conformance.{name}"):
                out.append(f"{where}: `{name}` is no module of {' or '.join(packages)}")
        for m in CALL.finditer(body):
            name, args = m.groups()
            where = f"{page.name}:{text[:start + m.start()].count(chr(10)) + 1}"
            if hasattr(builtins, name):
                continue
            if name not in defined:
                out.append(f"{where}: `{name}(...)` is defined nowhere in conformance/")
            elif PARAMS.fullmatch(args) and not any(n is None or _takes(n, [a.strip() for a in args.split(",")])
                                                   for n in defined[name]):
                out.append(f"{where}: `{name}({args})`: no {name} takes these parameters")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_modules_files_and_functions_exist(page):
    missing = named_paths(page) + (module_contracts(page) if page == ARCHITECTURE else [])
    assert not missing, "the page names what does not exist:\n" + "\n".join(missing)


def test_the_name_checks_see_a_stale_name(tmp_path):
    page = tmp_path / "architecture.md"
    page.write_text("# T\n\n## conformance.reference\n`engine` (sans-IO): `BrokerConnection`; `handle`: `X`.\n"
                    "`mutants.handle.ProxiedBroker`, `conformance.results.read_records`, `run.directory.nothing`,\n"
                    "`history.analysis.aggregate(records_df)`, `conformance/no_such.py`, `typing.Protocol`\n\n"
                    "## conformance.history\n`classify_change(before, after)`, `version_key(version)`, "
                    "`version_key(v)`\n")
    assert named_paths(page) == [
        "architecture.md:5: `mutants.handle.ProxiedBroker`: conformance defines no mutants",
        "architecture.md:5: `run.directory.nothing`: conformance.run.directory defines no nothing",
        "architecture.md:6: `history.analysis.aggregate(records_df)`: aggregate takes no records_df",
        "architecture.md:6: `conformance/no_such.py`: no such file"]
    assert module_contracts(page) == [
        "architecture.md:4: `engine` is no module of conformance.reference",
        "architecture.md:9: `classify_change(...)` is defined nowhere in conformance/",
        "architecture.md:9: `version_key(v)`: no version_key takes these parameters"]


def test_where_things_are_covers_every_package():
    """The table of docs/architecture.md names every package and top-level module of conformance/."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text[text.index("## Where things are"):]
    table = table[:table.index("\n\n", table.index("|"))]
    named = set(re.findall(r"`conformance/(\w+)", table))
    assert set(TOP) - {"__main__"} <= named, f"not in the table: {sorted(set(TOP) - named)}"
