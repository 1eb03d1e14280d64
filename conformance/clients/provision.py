"""Installing a client library from its own package registry into the shared cache, and how to start its driver.

`provision(lib)` installs once into `<cache>/clients/<label>/` (pip `--target`, npm `--prefix`, Maven
`dependency:copy-dependencies` into `lib/` then `javac` of the driver, `go build` with the module cache,
`cargo build --release` against crates.io with one target folder shared by the crate's releases, `apt-get
install` of the Debian package then `g++` of the driver), each registry's ordinary client as the machine has it
configured. A compiled driver (Java, Go, Rust, C++) is built into
`build/<stamp>/`, the stamp naming the driver sources it was built from: a changed driver is built beside the
others (checkouts with different drivers share the cache without rebuilding each other's), an unchanged one
costs nothing. Whatever cannot be installed is one line naming what is missing (`ProvisionFailed`, exit 8).
`command(lib)` is the argv, environment and working directory of the driver process.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from ..brokers.jvm import copy_dependencies
from ..brokers.managed import cache_dir, progress
from ..errors import ProvisionFailed
from .library import Library

TIMEOUT = 1800
COMPILED = ("maven", "go", "crates", "debian")      # registries whose driver is built into the cache folder

# what a Python library's `pip install --target` must leave importable, and whether pip brings its dependencies
# (python-qpid-proton's only one, cffi, is the suite's own; the Azure SDK needs azure-core and the rest)
PYPI_IMPORT = {"python-qpid-proton": ("proton", False), "azure-servicebus": ("azure/servicebus/_pyamqp", True)}


def home(lib: Library) -> Path:
    return cache_dir() / "clients" / lib.label


def _stamp(lib: Library) -> str:
    """What the installed folder was made from: the release, and the driver sources where they are compiled
    into it (Java, Go, Rust, C++); a Python or Node.js driver runs from clients/ as it is."""
    digest = hashlib.sha256(lib.label.encode())
    if lib.registry in COMPILED:
        for path in sorted(lib.driver_dir.rglob("*")):
            if path.is_file():
                digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def build_dir(lib: Library) -> Path:
    """Where the driver built from the current sources lives (Java classes, a Go, Rust or C++ binary)."""
    return home(lib) / "build" / _stamp(lib)


def provisioned(lib: Library) -> bool:
    if lib.registry in COMPILED:
        return (build_dir(lib) / ".built").exists()
    stamp = home(lib) / ".provisioned"
    return stamp.exists() and stamp.read_text().strip() == _stamp(lib)


def _run(argv: list[str], what: str, tool: str, *, cwd: Path | None = None, env: dict | None = None) -> None:
    exe = shutil.which(argv[0]) if not os.path.isabs(argv[0]) else argv[0]
    if exe is None:
        raise ProvisionFailed(f"{what}: `{argv[0]}` is not installed; install {tool} (`./dev setup all` does)")
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
                              env=env)
    except subprocess.TimeoutExpired:
        raise ProvisionFailed(f"{what}: {argv[0]} did not finish within {TIMEOUT} s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower() or "ERR" in ln] or lines
        raise ProvisionFailed(f"{what}: {argv[0]} failed ({(errors[0] if errors else f'exit {proc.returncode}')[:200]}); "
                              "check the network and the registry client's settings")


def provision(lib: Library) -> Path:
    """Install `lib` and build its driver (idempotent); its cache folder."""
    dest = home(lib)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock", timeout=TIMEOUT):
        if provisioned(lib):
            return dest
        progress(f"provisioning client {lib.label} ({lib.registry})")
        dest.mkdir(exist_ok=True)
        what = f"client {lib.label}"
        if lib.registry == "pypi":
            _pypi(lib, dest, what)
        elif lib.registry == "npm":
            _npm(lib, dest, what)
        elif lib.registry == "maven":
            _maven(lib, dest, what)
        elif lib.registry == "go":
            _go(lib, dest, what)
        elif lib.registry == "crates":
            _cargo(lib, dest, what)
        elif lib.registry == "debian":
            _debian(lib, dest, what)
        else:                                                     # pragma: no cover - the table is ours
            raise ProvisionFailed(f"{what}: unknown registry {lib.registry}")
        if lib.registry in COMPILED:
            (build_dir(lib) / ".built").write_text(_stamp(lib) + "\n")
        else:
            (dest / ".provisioned").write_text(_stamp(lib) + "\n")
    return dest


def _pypi(lib: Library, dest: Path, what: str) -> None:
    site = dest / "site"
    module, deps = PYPI_IMPORT[lib.package]
    if not (site / module).exists():
        partial = dest / "site.partial"
        shutil.rmtree(partial, ignore_errors=True)
        _run([sys.executable, "-m", "pip", "install", "--quiet", *([] if deps else ["--no-deps"]), "--target",
              str(partial), f"{lib.package}=={lib.version}"], what, "pip")
        shutil.rmtree(site, ignore_errors=True)
        os.replace(partial, site)


def _npm(lib: Library, dest: Path, what: str) -> None:
    if not (dest / "node_modules" / lib.package / "package.json").exists():
        _run(["npm", "install", "--prefix", str(dest), "--no-audit", "--no-fund", "--loglevel=error",
              f"{lib.package}@{lib.version}"], what, "Node.js and npm (apt-get install nodejs npm)")


def _maven(lib: Library, dest: Path, what: str) -> None:
    jars = dest / "lib"
    if not any(jars.glob(f"{lib.package.split(':')[1]}-*.jar")):
        copy_dependencies([f"{lib.package}:{lib.version}"], jars, what)
    build = build_dir(lib)
    classes = build / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    src = build / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    jms = "jakarta.jms" if any(jars.glob("jakarta.jms-api-3*.jar")) else "javax.jms"
    for java in lib.driver_dir.glob("*.java"):
        (src / java.name).write_text(java.read_text().replace("JMS_PACKAGE", jms))
    _run(["javac", "-nowarn", "-d", str(classes), "-cp", str(jars / "*"), *map(str, sorted(src.glob("*.java")))],
         what, "a JDK (apt-get install openjdk-17-jdk-headless)")


def _go(lib: Library, dest: Path, what: str) -> None:
    work = build_dir(lib) / "src"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for f in lib.driver_dir.glob("*.go"):
        shutil.copy(f, work / f.name)
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    _run(["go", "mod", "init", "amqpconformance/driver"], what, "Go (apt-get install golang)", cwd=work, env=env)
    _run(["go", "get", f"{lib.package}@v{lib.version}"], what, "Go", cwd=work, env=env)
    _run(["go", "build", "-o", str(build_dir(lib) / "driver"), "."], what, "Go", cwd=work, env=env)


def _cargo(lib: Library, dest: Path, what: str) -> None:
    """The driver crate (clients/<driver>/) with the pinned release as its dependency (`=VERSION`), built with
    cargo into a target folder the releases share (their common dependencies, tokio and serde, compile once)."""
    build_dir(lib).mkdir(parents=True, exist_ok=True)
    work = build_dir(lib) / "src"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(lib.driver_dir, work)
    manifest = work / "Cargo.toml"
    manifest.write_text(manifest.read_text().replace("PINNED_VERSION", lib.version))
    target = cache_dir() / "clients" / f".cargo-target-{lib.driver}"
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    progress(f"cargo build --release of the {lib.label} driver (about a minute the first time)")
    _run(["cargo", "build", "--release", "--quiet"], what, "Rust's cargo (rustup or apt-get install cargo)",
         cwd=work, env=env)
    built = target / "release" / manifest_name(manifest)
    shutil.copy2(built, build_dir(lib) / "driver.partial")
    os.replace(build_dir(lib) / "driver.partial", build_dir(lib) / "driver")


def manifest_name(manifest: Path) -> str:
    for line in manifest.read_text().splitlines():
        if line.strip().startswith("name"):
            return line.split("=", 1)[1].strip().strip('"')
    raise ProvisionFailed(f"{manifest}: no package name")                  # pragma: no cover - ours


def _debian(lib: Library, dest: Path, what: str) -> None:
    """The Debian package from apt as the machine has it configured (root), checked to be the pinned upstream
    release, then the driver compiled against it with g++."""
    from ..brokers.managed import apt_install
    from ..errors import PermissionProblem
    try:
        apt_install([lib.package], what)
    except PermissionProblem as exc:
        raise ProvisionFailed(f"{what}: {exc}") from None
    have = subprocess.run(["dpkg-query", "-W", "-f=${Version}", lib.package], capture_output=True,
                          text=True).stdout.strip()
    upstream = have.split(":")[-1].split("-")[0].split("+")[0]
    if upstream != lib.version:
        raise ProvisionFailed(f"{what}: apt installed {lib.package} {have or '(nothing)'}, not release "
                              f"{lib.version}; use a Debian suite that has {lib.version}")
    sources = sorted(str(p) for p in lib.driver_dir.glob("*.cpp"))
    build_dir(lib).mkdir(parents=True, exist_ok=True)
    _run(["g++", "-std=c++17", "-O1", "-pthread", "-o", str(build_dir(lib) / "driver"), *sources, "-lqpid-proton-cpp"],
         what, "a C++ compiler (apt-get install g++)")


def command(lib: Library) -> tuple[list[str], dict, str | None]:
    """argv, environment and working directory of `lib`'s driver (provisioned)."""
    dest = home(lib)
    env = dict(os.environ)
    if lib.registry == "pypi":
        env["PYTHONPATH"] = str(dest / "site")
        return [sys.executable, str(lib.driver_dir / "driver.py")], env, None
    if lib.registry == "npm":
        env["NODE_PATH"] = str(dest / "node_modules")
        return ["node", str(lib.driver_dir / "driver.js")], env, None
    if lib.registry == "maven":
        java = shutil.which("java") or "java"
        cp = f"{build_dir(lib) / 'classes'}:{dest / 'lib' / '*'}"
        return [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "Driver"], env, None
    return [str(build_dir(lib) / "driver")], env, None
