"""What a Java build at a commit needs beyond the release's jars, read from the poms: the dependencies whose
versions changed since the release, those it did not ship, and the compile-only ones.

`parse_pom` reads a pom.xml (properties, dependencyManagement, dependencies); `plan_dependencies` is pure: given
the release's jars (`LibJar`, from each jar's own pom.properties) and the dependencies the rebuilt modules
declare at the commit, it says which release jars are replaced by which versions (a changed version also moves
the jars of the same group that shipped at the same version: netty's, jetty's), which runtime dependencies are
added, and which are only needed to compile (provided, optional). `resolve` gets those artifacts with Maven in
one run (each without its own dependencies) into the suite's local repository.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

REACTOR = "${project.version}"          # a dependency on a module of the same build


@dataclass(frozen=True)
class Dependency:
    group: str
    artifact: str
    version: str | None = None           # as written (may hold ${properties}); None: managed elsewhere
    scope: str = "compile"
    type: str = "jar"
    classifier: str = ""
    optional: bool = False


@dataclass
class Pom:
    group: str | None = None
    artifact: str | None = None
    version: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    managed: dict[tuple[str, str, str], Dependency] = field(default_factory=dict)   # (group, artifact, classifier)
    dependencies: list[Dependency] = field(default_factory=list)
    filtered: list[str] = field(default_factory=list)     # resource directories Maven filters (${...} filled in)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(node, name: str):
    for c in node:
        if _local(c.tag) == name:
            return c
    return None


def _text(node, name: str) -> str | None:
    c = _child(node, name)
    return c.text.strip() if c is not None and c.text and c.text.strip() else None


def _dependencies(node) -> list[Dependency]:
    out = []
    if node is None:
        return out
    for d in node:
        if _local(d.tag) != "dependency":
            continue
        group, artifact = _text(d, "groupId"), _text(d, "artifactId")
        if not group or not artifact:
            continue
        out.append(Dependency(group, artifact, _text(d, "version"), _text(d, "scope") or "compile",
                              _text(d, "type") or "jar", _text(d, "classifier") or "",
                              (_text(d, "optional") or "false").lower() == "true"))
    return out


def parse_pom(data: bytes) -> Pom:
    """The parts of a pom.xml a build needs; ValueError when it is not XML."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"not a pom ({exc})") from None
    pom = Pom(_text(root, "groupId"), _text(root, "artifactId"), _text(root, "version"))
    parent = _child(root, "parent")
    if parent is not None:
        pom.group = pom.group or _text(parent, "groupId")
        pom.version = pom.version or _text(parent, "version")
    props = _child(root, "properties")
    if props is not None:
        pom.properties = {_local(p.tag): (p.text or "").strip() for p in props}
    management = _child(root, "dependencyManagement")
    if management is not None:
        for d in _dependencies(_child(management, "dependencies")):
            if d.version:
                pom.managed[(d.group, d.artifact, d.classifier)] = d
    pom.dependencies = _dependencies(_child(root, "dependencies"))
    build = _child(root, "build")
    resources = _child(build, "resources") if build is not None else None
    for r in resources if resources is not None else ():
        if _local(r.tag) == "resource" and (_text(r, "filtering") or "").lower() == "true":
            pom.filtered.append((_text(r, "directory") or "src/main/resources").rstrip("/"))
    return pom


def filter_text(text: str, props: dict[str, str]) -> str:
    """Maven resource filtering: every `${name}` whose value is known is filled in (others stay)."""
    def value(match: re.Match) -> str:
        filled = expand(match.group(0), props)
        return filled if filled is not None else match.group(0)
    return re.sub(r"\$\{[^}]+\}", value, text)


def merge(poms: list[Pom]) -> tuple[dict[str, str], dict[tuple[str, str, str], Dependency]]:
    """Properties and managed dependencies of a parent-first chain of poms (a child's value wins)."""
    props: dict[str, str] = {}
    managed: dict[tuple[str, str, str], Dependency] = {}
    for pom in poms:
        if pom.version:
            props["project.version"] = pom.version
        props.update(pom.properties)
        managed.update(pom.managed)
    return props, managed


def expand(value: str | None, props: dict[str, str]) -> str | None:
    """`${name}` references filled from `props` (nested ones too); None when one cannot be filled."""
    if value is None:
        return None
    for _ in range(10):
        names = re.findall(r"\$\{([^}]+)\}", value)
        if not names:
            return value
        for name in names:
            if name not in props:
                return None
            value = value.replace("${" + name + "}", props[name])
    return None


@dataclass(frozen=True)
class LibJar:
    file: str                # its file name in the distribution's lib directory
    group: str               # "" when the jar does not say (known from its file name only)
    artifact: str
    version: str
    classifier: str = ""

    def coords(self, version: str | None = None) -> str:
        v = version or self.version
        return f"{self.group}:{self.artifact}:{v}" + (f":jar:{self.classifier}" if self.classifier else "")


def jar_identity(path: Path) -> LibJar | None:
    """A jar's Maven coordinates from its META-INF/maven/<group>/<artifact>/pom.properties (the classifier from
    its file name); from the file name alone (group unknown) for a jar that carries none or several (a shaded
    jar); None when neither says."""
    try:
        with zipfile.ZipFile(path) as z:
            found = [n for n in z.namelist() if n.startswith("META-INF/maven/") and n.endswith("/pom.properties")]
            candidates = []
            for name in found:
                values = dict(line.split("=", 1) for line in z.read(name).decode("utf-8", "replace").splitlines()
                              if "=" in line and not line.startswith("#"))
                g, a, v = (values.get(k, "").strip() for k in ("groupId", "artifactId", "version"))
                if g and a and v and path.name.startswith(f"{a}-{v}"):
                    candidates.append((g, a, v))
    except (OSError, zipfile.BadZipFile):
        return None
    if len(candidates) != 1:
        return _from_name(path.name)
    g, a, v = candidates[0]
    rest = path.name[len(f"{a}-{v}"):-len(".jar")]
    return LibJar(path.name, g, a, v, rest[1:] if rest.startswith("-") else "")


_NAME = re.compile(r"(?P<a>[A-Za-z][\w.]*(?:-[A-Za-z][\w.]*)*?)-(?P<v>\d[\w.]*(?:-(?:jre|android|Final|GA|RELEASE))?)"
                   r"(?:-(?P<c>[A-Za-z][\w.-]*))?\.jar")


def _from_name(name: str) -> LibJar | None:
    """artifact-version[-classifier].jar, for a jar without Maven metadata (its group unknown)."""
    match = _NAME.fullmatch(name)
    return LibJar(name, "", match["a"], match["v"], match["c"] or "") if match else None


@dataclass
class DependencyPlan:
    swaps: dict[str, str] = field(default_factory=dict)     # release jar file -> coordinates replacing it
    added: list[str] = field(default_factory=list)          # runtime dependencies the release did not ship
    compile_only: list[str] = field(default_factory=list)   # needed by javac only (provided, optional)
    notes: list[str] = field(default_factory=list)          # what could not be planned

    @property
    def coords(self) -> list[str]:
        return sorted(set(self.swaps.values()) | set(self.added) | set(self.compile_only))

    def describe(self) -> str:
        groups = sorted({c.split(":")[0] for c in self.swaps.values()})
        parts = []
        if self.swaps:
            shown = ", ".join(groups[:4]) + (f" and {len(groups) - 4} more" if len(groups) > 4 else "")
            parts.append(f"{len(self.swaps)} dependency jar(s) at the commit's versions ({shown})")
        if self.added:
            parts.append(f"{len(self.added)} dependency jar(s) added")
        return ", ".join(parts)


def _family(a: LibJar, b: LibJar) -> bool:
    """Two jars released together (same group, or, without metadata, the same first name part)."""
    if a.group and b.group:
        return a.group == b.group
    return a.artifact.split("-")[0] == b.artifact.split("-")[0]


def plan_dependencies(lib: list[LibJar], declared: list[Dependency], props: dict[str, str],
                      managed: dict[tuple[str, str, str], Dependency]) -> DependencyPlan:
    plan = DependencyPlan()
    by_key = {(j.group, j.artifact, j.classifier): j for j in lib}
    by_name = {(j.artifact, j.classifier): j for j in lib if not j.group}
    pinned: set[str] = set()             # files whose new version a declaration gives directly
    moves: list[tuple[LibJar, str, str]] = []     # (the shipped jar, its new version, its group)
    for d in declared:
        rule = managed.get((d.group, d.artifact, d.classifier)) or managed.get((d.group, d.artifact, ""))
        scope = d.scope if d.scope != "compile" or rule is None else (rule.scope or "compile")
        if scope in ("test", "system", "import") or d.type not in ("jar", "bundle"):
            continue
        raw = d.version or (rule.version if rule is not None else None)
        if raw is None or REACTOR in raw:
            continue                     # a module of this build (or managed where we cannot see): not a jar to get
        version, classifier = expand(raw, props), expand(d.classifier, props)
        if version is None or classifier is None:
            plan.notes.append(f"{d.group}:{d.artifact}: {raw} {d.classifier} not resolved")
            continue
        coords = f"{d.group}:{d.artifact}:{version}" + (f":jar:{classifier}" if classifier else "")
        shipped = by_key.get((d.group, d.artifact, classifier)) or by_name.get((d.artifact, classifier))
        if shipped is not None:
            if shipped.version != version:
                plan.swaps[shipped.file] = coords
                pinned.add(shipped.file)
                moves.append((shipped, version, d.group))
        elif scope == "provided" or d.optional:
            plan.compile_only.append(coords)
        else:
            plan.added.append(coords)
    for moved, version, group in moves:  # what was released with it (same group and version) moves with it
        for j in lib:
            if j.version == moved.version and _family(j, moved) and j.file not in pinned:
                plan.swaps[j.file] = LibJar(j.file, j.group or group, j.artifact, j.version, j.classifier).coords(version)
    plan.added = sorted(set(plan.added))
    plan.compile_only = sorted(set(plan.compile_only) - set(plan.added))
    return plan


def resolution_pom(coords: list[str]) -> str:
    """A pom whose dependencies are `coords` (group:artifact:version[:type[:classifier]]), each alone."""
    deps = []
    for c in coords:
        parts = c.split(":")
        group, artifact, version = (escape(p) for p in parts[:3])
        classifier = f"<classifier>{escape(parts[4])}</classifier>" if len(parts) > 4 else ""
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}"
                    f"</version>{classifier}<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
                    "</exclusion></exclusions></dependency>")
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>amqp-conformance</groupId><artifactId>commit-build</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>\n")


def resolve(coords: list[str], work: Path, what: str) -> dict[str, Path]:
    """The jar of each coordinate in the suite's local Maven repository, fetched in one Maven run (each without
    its dependencies) when some are missing; ProvisionFailed (one line) when Maven cannot get one."""
    from ..jvm import DEPENDENCY_PLUGIN, _mvn, artifact_path

    def path_of(c: str) -> Path:
        parts = c.split(":")
        return artifact_path(":".join(parts[:3] + ["jar"] + parts[4:5]))

    missing = [c for c in coords if not path_of(c).exists()]
    if missing:
        work.mkdir(parents=True, exist_ok=True)
        (work / "pom.xml").write_text(resolution_pom(missing))
        _mvn(["-f", str(work / "pom.xml"), f"{DEPENDENCY_PLUGIN}:resolve"], what, timeout=900)
    return {c: path_of(c) for c in coords}
