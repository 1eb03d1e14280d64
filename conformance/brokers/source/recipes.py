"""Build recipes: how a broker family is built and started at any commit of its repository, as data.

A recipe is a TOML file, by name from fixtures/recipes/ or a user's own path (fixtures/recipes/README.md
documents every key). It says which tags name releases, where the releases come from (a managed release
series, or the tags built from source), how a commit is built (`java-overlay`: on top of the older release's
distribution; `commands`: any build tool, run in a checkout) and, for `commands`, how a build is started.
This module only loads and checks recipes: a bad one is a one-line `UsageError` naming the file, the key and
the fix. Nothing runs here.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ..profiles import named_toml
from .git import tag_pattern

RECIPES_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "recipes"
KINDS = ("java-overlay", "commands")

# what each table may hold (anything else is refused, so a typo never silently does nothing)
TOP_KEYS = {"name", "description", "releases", "build", "start"}
RELEASE_KEYS = {"tag", "label", "series", "versions"}
JAVA_KEYS = {"kind", "base", "modules", "processors", "keep", "poms", "lib", "jar", "javac", "apt"}
COMMAND_KEYS = {"kind", "commands", "timeout", "apt"}
START_KEYS = {"command", "url", "profile", "ready_timeout"}

# placeholders a command may use: {src} the checkout, {work} a directory kept from commit to commit (an
# incremental build's), {out} this commit's build output (cached), {python} this Python, {jobs} the CPUs,
# {commit} the full hash; a start command has {out}, {port}, {python}
BUILD_PLACEHOLDERS = {"src", "work", "out", "python", "jobs", "commit"}
START_PLACEHOLDERS = {"out", "port", "python"}
JAVAC_DEFAULT = ("-nowarn", "-g", "-encoding", "UTF-8", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1")


@dataclass(frozen=True)
class Releases:
    tag: str                         # git tag of release {version}
    label: str                       # the release's build label ({version}); a managed broker's name for series
    series: str | None = None        # a managed release series (`bisect --series`): its brokers are the releases
    versions: tuple[str, ...] = ()   # or: releases built from their tags, oldest first


@dataclass(frozen=True)
class JavaOverlay:
    """Compile the changed runtime modules' main sources and run them ahead of the older release's jars."""

    base: str                        # the managed broker of release {version} the build goes on top of
    modules: tuple[str, ...]         # the runtime modules (directories with src/main/java and a pom.xml)
    processors: tuple[str, ...] = ()  # annotation-processor modules, compiled first and given to javac
    keep: tuple[str, ...] = ()       # source paths (prefixes) whose classes stay the release's (e.g. compiled
                                     # against relocated, shaded dependencies)
    poms: tuple[str, ...] = ("pom.xml",)   # where dependency versions are managed (parent first)
    lib: str = "lib"                 # the distribution's jar directory
    jar: str = "000-build.jar"       # the build's jar in it (the broker's loader must put it first: sorted name)
    javac: tuple[str, ...] = JAVAC_DEFAULT
    apt: tuple[str, ...] = ("openjdk-17-jdk-headless",)   # Debian packages the build needs (javac)
    kind: str = "java-overlay"


@dataclass(frozen=True)
class Commands:
    """Run commands in a checkout of the commit; what they leave in {out} is the build."""

    commands: tuple[tuple[str, ...], ...]
    timeout: float = 1800.0
    apt: tuple[str, ...] = ()
    kind: str = "commands"


@dataclass(frozen=True)
class Start:
    command: str                     # starts the build ({out}, {port}, {python}); stopped with SIGTERM
    url: str                         # where it listens (amqp://127.0.0.1:{port})
    profile: str = "generic"
    ready_timeout: float = 30.0


@dataclass(frozen=True)
class Recipe:
    name: str                        # commit builds are labelled <name>-<git describe>
    description: str
    path: Path
    digest: str                      # of the file's bytes: a changed recipe builds anew
    releases: Releases
    build: JavaOverlay | Commands
    start: Start | None = None

    def tag(self, version: str) -> str:
        return self.releases.tag.replace("{version}", version)

    def release_label(self, version: str) -> str:
        return self.releases.label.replace("{version}", version)

    def version_of(self, label: str) -> str | None:
        """The version of a release label (`artemis-2.35.0` -> 2.35.0), None when it is not one."""
        head, _, tail = self.releases.label.partition("{version}")
        match = re.fullmatch(re.escape(head) + r"(.+?)" + re.escape(tail), label)
        return match.group(1) if match else None

    @property
    def tag_glob(self) -> str:
        return tag_pattern(self.releases.tag)[0]

    @property
    def tag_regex(self) -> re.Pattern:
        return tag_pattern(self.releases.tag)[1]


def available_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.toml"))


def recipe_for_series(series: str) -> Recipe | None:
    """The recipe in fixtures/recipes/ whose releases are the managed series `series` or whose name it is."""
    for name in available_recipes():
        recipe = load_recipe(name)
        if series in (recipe.name, recipe.releases.series):
            return recipe
    return None


def load_recipe(name_or_path: str) -> Recipe:
    path = named_toml(name_or_path, RECIPES_DIR, "recipe", "fixtures/recipes/README.md")
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"recipe {path} is not valid TOML ({exc}); fix the file") from None
    return parse_recipe(data, path=path, digest=recipe_digest(data))


def recipe_digest(data: dict) -> str:
    """The key of a recipe's builds in the cache: its keys and values, not its comments or layout (an edited
    comment keeps the builds)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


class _Checker:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, what: str, fix: str):
        raise UsageError(f"recipe {self.path}: {what}; {fix} (fixtures/recipes/README.md)")

    def table(self, data: dict, key: str, allowed: set[str], required: bool = True) -> dict:
        value = data.get(key)
        if value is None:
            if required:
                self.fail(f"no [{key}] table", f"add [{key}]")
            return {}
        if not isinstance(value, dict):
            self.fail(f"{key} is not a table", f"write it as [{key}]")
        unknown = sorted(set(value) - allowed)
        if unknown:
            self.fail(f"[{key}] has unknown keys {unknown}", f"use only {sorted(allowed)}")
        return value

    def string(self, table: dict, where: str, key: str, default=None, required=False) -> str | None:
        value = table.get(key, default)
        if value is None and required:
            self.fail(f"{where}.{key} is missing", f"set {key} = \"...\" in [{where}]")
        if value is not None and (not isinstance(value, str) or not value.strip()):
            self.fail(f"{where}.{key} must be a non-empty string", f"fix {key} in [{where}]")
        return value

    def strings(self, table: dict, where: str, key: str, default=(), required=False) -> tuple[str, ...]:
        value = table.get(key, None)
        if value is None:
            if required:
                self.fail(f"{where}.{key} is missing", f"set {key} = [\"...\"] in [{where}]")
            return tuple(default)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(f"{where}.{key} must be a list of strings", f"fix {key} in [{where}]")
        return tuple(value)

    def number(self, table: dict, where: str, key: str, default: float) -> float:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            self.fail(f"{where}.{key} must be a positive number", f"fix {key} in [{where}]")
        return float(value)

    def placeholders(self, text: str, where: str, allowed: set[str]) -> None:
        for name in re.findall(r"\{(\w*)\}", text):
            if name not in allowed:
                self.fail(f"{where} uses {{{name}}}", f"use only {', '.join('{' + a + '}' for a in sorted(allowed))}")


def parse_recipe(data: dict, *, path: Path, digest: str = "") -> Recipe:
    c = _Checker(path)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        c.fail(f"unknown keys {unknown}", f"use only {sorted(TOP_KEYS)}")
    name = c.string(data, "recipe", "name", default=path.stem)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        c.fail(f"name {name!r} is not a plain name", "use letters, digits, '.', '_' and '-'")
    rel = c.table(data, "releases", RELEASE_KEYS)
    tag = c.string(rel, "releases", "tag", required=True)
    label = c.string(rel, "releases", "label", required=True)
    for key, value in (("tag", tag), ("label", label)):
        if value.count("{version}") != 1:
            c.fail(f"releases.{key} = {value!r} does not name {{version}} exactly once",
                   f"write it like \"{'v' if key == 'tag' else name + '-'}{{version}}\"")
    series = c.string(rel, "releases", "series")
    versions = c.strings(rel, "releases", "versions")
    if bool(series) == bool(versions):
        c.fail("[releases] needs either series (a managed release series) or versions (tags built from source)",
               "give one of them")
    releases = Releases(tag, label, series, versions)

    b = data.get("build")
    if not isinstance(b, dict):
        c.fail("no [build] table", "add [build] with kind = \"java-overlay\" or \"commands\"")
    kind = b.get("kind")
    if kind not in KINDS:
        c.fail(f"build.kind = {kind!r} is not one of {list(KINDS)}", "set kind in [build]")
    if kind == "java-overlay":
        b = c.table(data, "build", JAVA_KEYS)
        base = c.string(b, "build", "base", required=True)
        if base.count("{version}") != 1:
            c.fail(f"build.base = {base!r} does not name {{version}}", "write the managed release, e.g. "
                                                                       "\"artemis-{version}\"")
        build = JavaOverlay(base=base, modules=c.strings(b, "build", "modules", required=True),
                            processors=c.strings(b, "build", "processors"), keep=c.strings(b, "build", "keep"),
                            poms=c.strings(b, "build", "poms", default=("pom.xml",)),
                            lib=c.string(b, "build", "lib", default="lib"),
                            jar=c.string(b, "build", "jar", default="000-build.jar"),
                            javac=c.strings(b, "build", "javac", default=JAVAC_DEFAULT),
                            apt=c.strings(b, "build", "apt", default=("openjdk-17-jdk-headless",)))
        if not build.modules:
            c.fail("build.modules is empty", "list the runtime modules")
        if not build.jar.endswith(".jar") or "/" in build.jar:
            c.fail(f"build.jar = {build.jar!r} is not a jar file name", "e.g. jar = \"000-build.jar\"")
        if "start" in data:
            c.fail("a java-overlay build has no [start]", "it starts as its base release does; remove [start]")
        return Recipe(name, (c.string(data, "recipe", "description") or ""), path, digest, releases, build)

    b = c.table(data, "build", COMMAND_KEYS)
    commands = b.get("commands")
    if (not isinstance(commands, list) or not commands
            or not all(isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd) for cmd in commands)):
        c.fail("build.commands must be a list of argv lists", "e.g. commands = [[\"make\", \"-C\", \"{src}\"]]")
    for cmd in commands:
        for arg in cmd:
            c.placeholders(arg, "build.commands", BUILD_PLACEHOLDERS)
    build = Commands(tuple(tuple(cmd) for cmd in commands), c.number(b, "build", "timeout", 1800.0),
                     c.strings(b, "build", "apt"))
    s = c.table(data, "start", START_KEYS)
    start = Start(c.string(s, "start", "command", required=True), c.string(s, "start", "url", required=True),
                  c.string(s, "start", "profile", default="generic"), c.number(s, "start", "ready_timeout", 30.0))
    c.placeholders(start.command, "start.command", START_PLACEHOLDERS)
    c.placeholders(start.url, "start.url", {"port"})
    return Recipe(name, (c.string(data, "recipe", "description") or ""), path, digest, releases, build, start)
