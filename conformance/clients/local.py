"""A client-library team's own build as the subject of a run (`run --client NAME --client-from PATH`), and a
driver the suite does not ship (`run --client-driver CMD --label NAME`).

`--client-from PATH` judges what a library's CI built, through the driver the suite has for that library
(clients/<driver>/), instead of a release the suite pins. PATH is installed the way the registry's own client
installs a release, into its own cache entry `<cache>/clients/local/<label>/<stamp>/` (`stamp`: what PATH
held, so another build of the same label never overwrites one a run is using, and the same build is installed
once):

- pypi (python-qpid-proton): a wheel or sdist, or a directory pip installs (pyproject.toml / setup.py):
  `pip install --no-deps --target`; or an importable tree (a folder holding the `proton` package, like Proton's
  CMake build's `python/` folder): copied.
- npm (rhea): a package directory (package.json) or a tarball from `npm pack`: `npm install --install-links`
  (packed and installed like a published package, its dependencies from the registry).
- maven, go and the rest: not installed from a path (`LocalBuildUnsupported`, naming the other way: build the
  suite's driver against your build and give it with `--client-driver`; docs/clients.md#your-own-build).

Its label is `<name>-local` unless `--label` names it (results, expectations and history use it), its version
the version the build declares plus where it came from: `3.0.5+local`, or the checkout's `git describe`
(`3.0.5+v3.0.5-4-g1a2b3c4-dirty`). `--client-driver CMD` starts CMD as the driver of a library the suite does
not know (it speaks clients/PROTOCOL.md); its `ready` line names the library and version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from ..brokers.managed import cache_dir, progress
from ..errors import UsageError
from .library import Library
from .provision import TIMEOUT, _run

# registries a build is installed from a path for, and (pypi) the module an importable tree holds
FROM_PATH = ("pypi", "npm")
PYTHON_MODULE = {"python-qpid-proton": "proton"}
SKIP = {".git", "node_modules", "__pycache__", ".tox", ".venv", ".mypy_cache"}


class LocalBuildUnsupported(UsageError):
    """--client-from for a library whose registry the suite installs only releases from."""


@dataclass(frozen=True)
class LocalBuild:
    """What `--client-from` installed: the library, its label, version, where from, and the driver's command."""
    lib: Library
    label: str
    version: str
    source: str
    describe: str | None
    home: Path
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]

    def meta(self) -> dict:
        """What run.json says of the build (`client_builds`)."""
        return {"library": self.lib.name, "from": self.source, "version": self.version, "git": self.describe,
                "installed": str(self.home)}


def default_label(lib: Library) -> str:
    return f"{lib.name}-local"


def check_label(label: str) -> str:
    """A label for a build or driver of the team's own: a file name, and not a pinned release's label."""
    from .library import BY_LABEL
    if label in BY_LABEL:
        raise UsageError(f"--label {label}: that is the label of the pinned release; name your build otherwise "
                         "(default: NAME-local)")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", label):
        raise UsageError(f"--label {label!r}: use letters, digits and . _ + - (it names files and results)")
    return label


def git_describe(path: Path) -> str | None:
    """`git describe --tags --always --dirty` of the checkout holding `path`, or None outside one."""
    where = path if path.is_dir() else path.parent
    try:
        proc = subprocess.run(["git", "-C", str(where), "describe", "--tags", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = proc.stdout.strip()
    return re.sub(r"[^A-Za-z0-9._-]", "-", found) if proc.returncode == 0 and found else None


def stamp(path: Path) -> str:
    """What PATH holds: a file's bytes, a directory's files (name, size, modification time; not .git,
    node_modules or caches): a rebuilt checkout gets an entry of its own, the same build is installed once."""
    digest = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    else:
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIP)
            for name in sorted(files):
                st = os.stat(os.path.join(root, name))
                digest.update(f"{os.path.relpath(os.path.join(root, name), path)}\0{st.st_size}\0"
                              f"{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def install(lib: Library, path: str, label: str | None = None) -> LocalBuild:
    """Install the build at `path` of `lib` into its own cache entry (once per build) and say how to start its
    driver. UsageError (exit 2) for a path that is not such a build, ProvisionFailed (exit 8) when the registry's
    client fails on it."""
    if lib.registry not in FROM_PATH:
        raise LocalBuildUnsupported(
            f"--client-from is not supported for {lib.name} ({lib.registry}): the suite installs it from its "
            f"registry only; build the suite's driver (clients/{lib.driver}/) against your build and give it with "
            f"--client-driver CMD --label NAME (docs/clients.md#your-own-build)")
    source = Path(path).expanduser().resolve()
    if not source.exists():
        raise UsageError(f"--client-from {path}: no such file or directory; give your build of {lib.name} "
                         f"({_accepted(lib)})")
    label = check_label(label or default_label(lib))
    kind = _check(lib, source)
    home = cache_dir() / "clients" / "local" / label / stamp(source)
    home.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home) + ".lock", timeout=TIMEOUT):
        if not (home / ".installed").exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            progress(f"installing {lib.name} from {source} as {label}")
            _install(lib, kind, source, home, f"{label} from {path}")
            (home / ".installed").write_text(str(source) + "\n")
    declared = _declared_version(lib, home) or "unknown"
    describe = git_describe(source)
    version = f"{declared}+{describe or 'local'}"
    if lib.registry == "pypi":
        argv, env = (sys.executable, str(lib.driver_dir / "driver.py")), {"PYTHONPATH": str(home / "site")}
    else:
        argv, env = ("node", str(lib.driver_dir / "driver.js")), {"NODE_PATH": str(home / "node_modules")}
    return LocalBuild(lib, label, version, str(source), describe, home, argv, tuple(env.items()))


def _accepted(lib: Library) -> str:
    if lib.registry == "pypi":
        return "a wheel, an sdist, a directory pip installs, or a folder holding the importable package"
    return "a package directory with package.json, or a tarball from npm pack"


def _check(lib: Library, source: Path) -> str:
    """What kind of build `source` is ("tree", "pip", "npm"), or UsageError naming what it should be."""
    if lib.registry == "pypi":
        module = PYTHON_MODULE.get(lib.name)
        if source.is_dir() and module and (source / module / "__init__.py").exists():
            return "tree"
        if source.suffix == ".whl" or source.name.endswith((".tar.gz", ".zip")) or (
                source.is_dir() and any((source / f).exists() for f in ("pyproject.toml", "setup.py"))):
            return "pip"
        raise UsageError(f"--client-from {source}: not a build of {lib.name} pip can install; give "
                         f"{_accepted(lib)}")
    if source.is_dir():
        manifest = source / "package.json"
        if not manifest.exists():
            raise UsageError(f"--client-from {source}: no package.json there; give {_accepted(lib)}")
        try:
            name = json.loads(manifest.read_text()).get("name")
        except ValueError:
            raise UsageError(f"--client-from {manifest}: not JSON; is it your {lib.name} checkout?") from None
        if name != lib.package:
            raise UsageError(f"--client-from {source}: its package.json names {name!r}, not {lib.package!r}")
    elif not source.name.endswith((".tgz", ".tar.gz")):
        raise UsageError(f"--client-from {source}: give {_accepted(lib)}")
    return "npm"


def _install(lib: Library, kind: str, source: Path, home: Path, what: str) -> None:
    if kind == "tree":                                  # an importable tree: used as it is
        shutil.copytree(source, home / "site", ignore=shutil.ignore_patterns(*SKIP), symlinks=True)
    elif kind == "pip":
        _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(home / "site"),
              str(source)], what, "pip")
        module = PYTHON_MODULE.get(lib.name)
        if module and not (home / "site" / module).exists():
            raise UsageError(f"--client-from {source}: pip installed it, but it holds no `{module}` package: is "
                             f"it {lib.name}?")
    else:
        # packed and installed as a published package; its lifecycle scripts are not run again (the team's CI
        # built the checkout: its prepare step, e.g. rhea's lint and tsc, needs devDependencies)
        (home / "package.json").write_text('{"private": true}\n')
        _run(["npm", "install", "--prefix", str(home), "--install-links", "--ignore-scripts", "--no-audit",
              "--no-fund", "--no-save", "--loglevel=error", str(source)], what,
             "Node.js and npm (apt-get install nodejs npm)")
        if not (home / "node_modules" / lib.package / "package.json").exists():
            raise UsageError(f"--client-from {source}: npm installed it, but not as the package {lib.package!r}")


def _declared_version(lib: Library, home: Path) -> str | None:
    """The version the installed build says it is (package.json, the dist-info's METADATA)."""
    if lib.registry == "npm":
        try:
            return str(json.loads((home / "node_modules" / lib.package / "package.json").read_text())["version"])
        except (OSError, ValueError, KeyError):
            return None
    for metadata in sorted((home / "site").glob("*.dist-info/METADATA")):
        fields = dict(line.split(": ", 1) for line in metadata.read_text(errors="replace").splitlines()[:20]
                      if ": " in line)
        if re.sub(r"[-_.]+", "-", fields.get("Name", "")).lower() == lib.package.lower():
            return fields.get("Version")
    return None


def driver_command(command: str) -> list[str]:
    """`--client-driver CMD` split like a shell line; a missing program is one line (exit 2) before the run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--client-driver {command!r}: {exc}") from None
    if not argv:
        raise UsageError("--client-driver needs a command: the program that runs your library's driver")
    if shutil.which(argv[0]) is None:
        raise UsageError(f"--client-driver: `{argv[0]}` is not a program here (not on PATH, not executable)")
    return argv
