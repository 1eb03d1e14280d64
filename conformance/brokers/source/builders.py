"""Building a broker at a commit of the user's clone, as its recipe says, cached per commit.

`Builder.build(commit)` returns a `Built`: the build's directory and what it took, or why the commit does not
build (a compile error, a failing command: the bisect skips such a commit). A build is kept in the cache
(`<cache>/builds/<recipe>-<digest>/...`, keyed by the commit and, for an overlay, the release under it), so
asking again costs nothing; a recipe that changes builds anew. What fails for a reason outside the commit (no
Maven, no javac) is not kept, and raised as the one-line error it is.

- `java-overlay`: on top of the older release's provisioned distribution. The runtime modules whose main
  sources differ from the release's tag are compiled whole with javac (the annotation processors the recipe
  names compiled first from the same commit), against the release's jars, with the dependencies the poms
  changed since the tag (and those javac alone needs) resolved from Maven; the resources that changed are
  copied beside the classes. The build is a home laid out like the release's: its files linked, its `lib/`
  holding the build's jar first (by name), the release's jars, and the changed dependencies in place of
  theirs. The release's managed broker runs from that home (`run_home`).
- `commands`: the recipe's commands run in a private checkout of the commit ({src}); {work} persists from
  commit to commit (an incremental CMake or make build), {out} is this commit's build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from filelock import FileLock

from ...errors import ConformanceError, ProvisionFailed, UsageError
from ..managed import apt_install, cache_dir
from . import maven
from .git import Checkout, Clone
from .recipes import Commands, JavaOverlay, Recipe

STAMP = "build.json"


class BuildFailed(Exception):
    """The commit does not build (its own fault: kept in the cache, the bisect skips the commit)."""


@dataclass
class Built:
    commit: str
    ok: bool
    dir: Path
    error: str = ""                 # why it does not build (one line)
    summary: str = ""               # what was built, e.g. "javac 1,402 sources of 4 modules"
    seconds: float = 0.0            # the build's own time (when it was made)
    cached: bool = False
    details: dict = field(default_factory=dict)


def builds_root(recipe: Recipe) -> Path:
    path = cache_dir() / "builds" / f"{recipe.name}-{recipe.digest}"
    path.mkdir(parents=True, exist_ok=True)
    return path


class Builder:
    """Builds of one recipe from one clone (`base_version`: the release a java-overlay goes on top of)."""

    def __init__(self, recipe: Recipe, clone: Clone, base_version: str | None = None,
                 say: Callable[[str], None] | None = None):
        self.recipe = recipe
        self.clone = clone
        self.base_version = base_version
        self.say = say or (lambda message: None)
        self.root = builds_root(recipe)
        self.checkout = Checkout(clone, self.root / "checkout")
        if isinstance(recipe.build, JavaOverlay) and not base_version:
            raise UsageError(f"recipe {recipe.name}: a java-overlay build needs the release it goes on top of")

    @property
    def scope(self) -> str:
        return f"on-{self.base_version}" if isinstance(self.recipe.build, JavaOverlay) else "src"

    def cached(self, commit: str) -> Built | None:
        stamp = self.root / "commits" / self.scope / commit / STAMP
        if not stamp.exists():
            return None
        with contextlib.suppress(ValueError, OSError, KeyError):
            data = json.loads(stamp.read_text())
            return Built(commit, data["ok"], stamp.parent, data.get("error", ""), data.get("summary", ""),
                         data.get("seconds", 0.0), True, data.get("details", {}))
        return None

    def build(self, commit: str) -> Built:
        """The build of `commit` (from the cache when it was made before)."""
        done = self.cached(commit)
        if done is not None:
            return done
        self._prepare()
        with FileLock(str(self.root / "build.lock")).acquire(timeout=3600):
            done = self.cached(commit)
            if done is not None:
                return done
            out = self.root / "commits" / self.scope / commit
            partial = out.with_name(out.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            t0 = time.monotonic()
            details: dict = {}
            try:
                if isinstance(self.recipe.build, JavaOverlay):
                    summary = self._java(commit, partial, out, details)
                else:
                    summary = self._commands(commit, partial, out)
                ok, error = True, ""
            except BuildFailed as exc:
                ok, error, summary = False, str(exc), ""
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            seconds = round(time.monotonic() - t0, 1)
            (partial / STAMP).write_text(json.dumps({"commit": commit, "ok": ok, "error": error, "summary": summary,
                                                     "seconds": seconds, "recipe": self.recipe.digest,
                                                     "details": details}, indent=1))
            shutil.rmtree(out, ignore_errors=True)
            os.replace(partial, out)
            return Built(commit, ok, out, error, summary, seconds, False, details)

    def _prepare(self) -> None:
        build = self.recipe.build
        if build.apt:
            needed = [p for p in build.apt if not _tool_present(p)]
            if needed:
                apt_install(needed, f"building {self.recipe.name} from source")

    # -- commands -------------------------------------------------------------------------------------------

    def _commands(self, commit: str, partial: Path, out: Path) -> str:
        build: Commands = self.recipe.build
        src = self.checkout.at(commit)
        work = self.root / "work"
        work.mkdir(exist_ok=True)
        values = {"src": str(src), "work": str(work), "out": str(out), "python": sys.executable,
                  "jobs": str(os.cpu_count() or 1), "commit": commit}
        deadline = time.monotonic() + build.timeout
        # the commands write into {out}: the directory the build ends up in; made now, renamed back after
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(partial, out)
        try:
            with open(out / "build.log", "w") as fh:
                for argv in build.commands:
                    args = [_fill(a, values) for a in argv]
                    shown = " ".join(argv)[:60]          # as the recipe writes it: short, no cache paths
                    fh.write(f"$ {shlex.join(args)}\n")
                    fh.flush()
                    try:
                        proc = subprocess.run(args, cwd=src, stdout=fh, stderr=subprocess.STDOUT,
                                              timeout=max(1.0, deadline - time.monotonic()),
                                              env={**os.environ, "SOURCE_COMMIT": commit})
                    except FileNotFoundError:
                        raise ProvisionFailed(f"recipe {self.recipe.name}: {args[0]} is not installed; install it "
                                              "(or list its Debian package under build.apt)") from None
                    except subprocess.TimeoutExpired:
                        raise BuildFailed(f"`{shown}` did not finish within "
                                          f"{build.timeout:.0f} s (build.timeout)") from None
                    if proc.returncode != 0:
                        fh.flush()
                        tail = [ln.strip() for ln in log_tail(out / "build.log", 40) if ln.strip()]
                        reason = next((ln for ln in reversed(tail) if "error" in ln.lower()), tail[-1] if tail else "")
                        raise BuildFailed(f"`{shown}` exited {proc.returncode}: {reason[:200]}")
        finally:
            os.replace(out, partial)
        return f"{len(build.commands)} command(s)"

    # -- java-overlay --------------------------------------------------------------------------------------------

    def base_class(self):
        from .. import MANAGED
        build: JavaOverlay = self.recipe.build
        name = build.base.replace("{version}", self.base_version)
        cls = MANAGED.get(name)
        if cls is None:
            raise UsageError(f"recipe {self.recipe.name}: build.base names {name!r}, which is not a managed broker; "
                             "use one `amqp-conformance brokers list` shows")
        if not cls.runs_builds:
            raise UsageError(f"recipe {self.recipe.name}: managed broker {name} cannot run a build on top of it "
                             "(its start does not take a build's home); use a commands recipe")
        return cls

    def base_home(self) -> Path:
        broker = self.base_class()()
        broker.ensure_provisioned()
        return broker.home

    def _java(self, commit: str, partial: Path, out: Path, details: dict) -> str:
        build: JavaOverlay = self.recipe.build
        tag = self.recipe.tag(self.base_version)
        tag_commit = self.clone.commit_of(tag)
        if tag_commit is None:
            raise UsageError(f"the clone at {self.clone.path} has no tag {tag}; fetch the tags (git fetch --tags)")
        home = self.base_home()
        lib_dir = home / build.lib
        if not lib_dir.is_dir():
            raise UsageError(f"recipe {self.recipe.name}: {lib_dir} is not a directory (build.lib = {build.lib!r})")
        lib = self._lib_index(lib_dir)
        changed = [m for m in build.modules if self.clone.changed_paths(tag_commit, commit, [f"{m}/src/main"])]
        src = self.checkout.export(commit, [*changed, *build.processors])    # only what javac reads
        missing = [m for m in changed if not (src / m / "pom.xml").exists()]
        if missing:
            raise BuildFailed(f"module {missing[0]} has no pom.xml at this commit (build.modules)")
        # the dependencies the rebuilt modules declare at this commit, against what the release shipped
        poms = []
        for path in build.poms:
            data = self.clone.show(commit, path)
            if data is not None:
                poms.append(_pom(data, path))
        declared: list[maven.Dependency] = []
        props, managed = maven.merge(poms)
        for m in changed:
            module = _pom((src / m / "pom.xml").read_bytes(), f"{m}/pom.xml")
            props = {**props, **module.properties}
            declared += module.dependencies
        plan = maven.plan_dependencies(list(lib.values()), declared, props, managed)
        try:
            jars = maven.resolve(plan.coords, self.root / "maven", f"building {commit[:10]}")
        except ProvisionFailed as exc:
            if "cannot get artifact" in exc.message:
                raise BuildFailed(exc.message) from None
            raise
        details.update({"modules": changed, "swapped": plan.swaps, "added": plan.added,
                        "compile_only": plan.compile_only, "notes": plan.notes})
        classes = partial / "classes"
        classes.mkdir()
        sources: list[Path] = []
        if changed:
            processors = self._processors(commit, src, lib_dir)
            keep = tuple(k.rstrip("/") for k in build.keep)
            for m in changed:
                for f in sorted((src / m / "src" / "main" / "java").rglob("*.java")):
                    rel = f.relative_to(src).as_posix()
                    if not any(rel == k or rel.startswith(k + "/") for k in keep):
                        sources.append(f)
            classpath = ([str(processors)] + [str(jars[c]) for c in plan.coords]
                         + [str(lib_dir / name) for name in sorted(lib_names(lib_dir)) if name not in plan.swaps])
            self.say(f"building {commit[:10]}: javac {len(sources):,} sources of {', '.join(changed)}"
                     + (f"; {plan.describe()}" if plan.swaps or plan.added else ""))
            _javac(build, sources, classpath, [str(processors)], classes, partial, src)
            for m in changed:
                # the module's resources as the release shipped them (filtered by its build: versions filled in),
                # so that a changed one finds its unchanged neighbours beside it (a schema's includes) ...
                module = _pom((src / m / "pom.xml").read_bytes(), f"{m}/pom.xml")
                artifact = module.artifact
                shipped = next((lib_dir / j.file for j in lib.values() if j.artifact == artifact
                                and j.version == self.base_version), None)
                if shipped is not None:
                    _resources_of(shipped, classes)
                # ... and those that changed since the release's tag, from the commit
                root = f"{m}/src/main/resources"
                filtered = tuple(f"{m}/{d}/" for d in module.filtered)
                for rel in self.clone.changed_paths(tag_commit, commit, [root], "AM"):
                    target = classes / rel[len(root) + 1:]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src / rel, target)
                    if rel.startswith(filtered):      # as Maven would: ${...} from the poms at this commit
                        with contextlib.suppress(UnicodeDecodeError):
                            target.write_text(maven.filter_text((src / rel).read_text("utf-8"),
                                                                {**props, **module.properties}), "utf-8")
        # the home: the release's files, lib/ with the build's jar first and the moved dependencies
        lay_out_home(home, partial / "home", build.lib, build.jar, classes if sources else None,
                     swapped=set(plan.swaps), new_jars=[jars[c] for c in sorted(set(plan.swaps.values()) | set(plan.added))])
        shutil.rmtree(classes)
        details["sources"] = len(sources)
        if not changed:
            return "no runtime module changed since " + tag + (f"; {plan.describe()}" if plan.swaps else "")
        return (f"javac {len(sources):,} sources of {len(changed)} module(s)"
                + (f"; {plan.describe()}" if plan.swaps or plan.added else ""))

    def _lib_index(self, lib_dir: Path) -> dict[str, maven.LibJar]:
        index = self.root / f"lib-{self.base_version}.json"
        if index.exists():
            with contextlib.suppress(ValueError, OSError, TypeError):
                return {k: maven.LibJar(**v) for k, v in json.loads(index.read_text()).items()}
        found = {}
        for name in sorted(lib_names(lib_dir)):
            identity = maven.jar_identity(lib_dir / name)
            if identity is not None:
                found[name] = identity
        index.write_text(json.dumps({k: v.__dict__ for k, v in found.items()}))
        return found

    def _processors(self, commit: str, src: Path, lib_dir: Path) -> Path:
        """The recipe's annotation processors compiled from this commit (cached by their source trees)."""
        build: JavaOverlay = self.recipe.build
        trees = [self.clone.tree_id(commit, f"{p}/src/main") or "none" for p in build.processors]
        key = hashlib.sha256(" ".join(trees).encode()).hexdigest()[:16]
        out = self.root / "processors" / key
        if (out / STAMP).exists():
            return out
        partial = out.with_name(key + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        files = [f for p in build.processors for f in sorted((src / p / "src" / "main" / "java").rglob("*.java"))]
        if files:
            _javac(build, files, [str(lib_dir / n) for n in sorted(lib_names(lib_dir))], None, partial, partial, src)
            for p in build.processors:
                resources = src / p / "src" / "main" / "resources"
                if resources.is_dir():
                    shutil.copytree(resources, partial, dirs_exist_ok=True)
        (partial / STAMP).write_text("{}")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(partial, out)
        return out


def lay_out_home(release: Path, home: Path, lib: str, jar: str, classes: Path | None, *, swapped: set[str],
                 new_jars: list[Path]) -> None:
    """A home laid out like the release's: its entries linked, but `lib` a directory of its own holding the
    build's classes as `jar` (when there are any), links to the release's jars except the `swapped` ones, and
    links to the `new_jars`."""
    home.mkdir(parents=True)
    for entry in release.iterdir():
        if entry.name != lib:
            (home / entry.name).symlink_to(entry)
    new_lib = home / lib
    new_lib.mkdir(parents=True)
    for name in lib_names(release / lib):
        if name not in swapped:
            (new_lib / name).symlink_to(release / lib / name)
    for path in new_jars:
        (new_lib / path.name).symlink_to(path)
    if classes is not None:
        _jar(classes, new_lib / jar)


def lib_names(lib_dir: Path) -> list[str]:
    return [p.name for p in lib_dir.iterdir() if p.suffix in (".jar", ".zip")]


def _pom(data: bytes, where: str) -> maven.Pom:
    try:
        return maven.parse_pom(data)
    except ValueError as exc:
        raise BuildFailed(f"{where}: {exc}") from None


def _javac(build: JavaOverlay, sources: list[Path], classpath: list[str], processorpath: list[str] | None,
           out: Path, work: Path, src: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        raise ProvisionFailed("a java-overlay build needs a JDK's javac; apt-get install openjdk-17-jdk-headless")
    argfile = work / "javac-args.txt"
    java_opts = [a for a in build.javac if a.startswith("-J")]          # for javac's own JVM
    lines = [a for a in build.javac if not a.startswith("-J")] + ["-d", str(out), "-cp", os.pathsep.join(classpath)]
    lines += ["-processorpath", os.pathsep.join(processorpath)] if processorpath else ["-proc:none"]
    # argument files split on whitespace: quote every path
    argfile.write_text("\n".join(_quoted(a) for a in lines + [str(s) for s in sources]) + "\n")
    proc = subprocess.run([javac, *java_opts, f"@{argfile}"], capture_output=True, text=True, timeout=1800)
    argfile.unlink(missing_ok=True)
    if proc.returncode != 0:
        errors = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ": error:" in ln]
        first = (errors[0] if errors else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1])
        raise BuildFailed(f"does not compile: {first.replace(str(src) + '/', '')[:220]}"
                          + (f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""))


def _quoted(arg: str) -> str:
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _jar(classes: Path, target: Path) -> None:
    tmp = target.with_name(target.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: amqp-conformance\n\n")
        for f in sorted(classes.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(classes).as_posix())
    os.replace(tmp, target)


def _resources_of(jar: Path, target: Path) -> None:
    """Every entry of `jar` but its classes and manifest, written under `target`."""
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.endswith("/") or name.endswith(".class") or name == "META-INF/MANIFEST.MF" \
                    or ".." in name.split("/"):
                continue
            path = target / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(name))


def log_tail(path: Path, lines: int) -> list[str]:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace").splitlines()[-lines:]
    return []


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _tool_present(package: str) -> bool:
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    except FileNotFoundError:          # not Debian: the build finds out itself
        return True
    return proc.stdout.strip() == "install ok installed"


def start_command(recipe: Recipe, built: Built) -> str:
    """A commands recipe's start command for a build ({out} and {python} filled in as plain paths; {port} left
    for the starter)."""
    values = {"out": str(built.dir), "python": sys.executable}
    return _fill(recipe.start.command, values)


__all__ = ["Builder", "Built", "BuildFailed", "start_command", "builds_root", "ConformanceError"]
