"""A library team's own build under test: `run --client NAME --client-from PATH` installs the build into its
own cache entry and judges it through the suite's driver, as the release; `run --client-driver CMD --label
NAME` runs a driver the suite does not ship. The "builds" are the releases `./dev test` provisions, handed over
as a team's CI would: rhea's package directory as a checkout (also as a git checkout, whose `git describe`
names the version), python-qpid-proton as a wheel and as an importable tree (Proton's CMake build's python/)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.clients import resolve
from conformance.clients.provision import home, provisioned
from conformance.errors import EXIT_USAGE

CASES = ["2.7.4/101", "2.7.4/102"]
FAST = ["--frame-timeout", "2", "--quiet-period", "0.2"]


def release(label: str) -> Path:
    lib = resolve(label)
    if not provisioned(lib):
        pytest.skip(f"{label} is not provisioned; `./dev test` provisions it")
    return home(lib)


def run(tmp_path: Path, name: str, *argv: str) -> tuple[list[dict], dict]:
    reports = tmp_path / name
    code = main(["run", *argv, *CASES, "--reports-dir", str(reports), *FAST])
    assert code in (0, 1), code
    [run_dir] = (reports / "runs").iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return records, json.loads((run_dir / "run.json").read_text())


def own_cache(tmp_path: Path, monkeypatch) -> Path:
    """A cache of its own: every build is installed here, as on a fresh CI machine."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(cache))
    return cache


def git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=cwd, check=True,
                   capture_output=True)


def test_a_rhea_checkout_is_judged_as_its_release_under_its_own_label(tmp_path, monkeypatch):
    pinned = release("rhea-3.0.5")
    checkout = tmp_path / "rhea"
    shutil.copytree(pinned / "node_modules" / "rhea", checkout)
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "build")
    git(checkout, "tag", "v3.0.5-team")
    released, _ = run(tmp_path, "release", "--client", "rhea-3.0.5")      # the release, from the shared cache
    cache = own_cache(tmp_path, monkeypatch)
    built, meta = run(tmp_path, "build", "--client", "rhea", "--client-from", str(checkout))
    assert {r["case_id"]: r["verdict"] for r in built} == {r["case_id"]: r["verdict"] for r in released}
    for r in built:
        assert (r["broker"], r["broker_product"], r["broker_version"]) == ("rhea-local", "rhea", "3.0.5+v3.0.5-team")
        assert r["observations"]["driver_starts"] == 1
    build = meta["client_builds"]["rhea-local"]
    assert build["from"] == str(checkout) and build["git"] == "v3.0.5-team" and meta["subject_kind"] == "client"
    installed = Path(build["installed"])
    assert installed.parent == cache / "clients" / "local" / "rhea-local"
    assert (installed / "node_modules" / "rhea" / "lib" / "container.js").exists()     # installed, not linked
    assert not (installed / "node_modules" / "rhea").is_symlink()

    (checkout / "lib" / "container.js").write_text((checkout / "lib" / "container.js").read_text() + "\n// wip\n")
    rebuilt, meta = run(tmp_path, "rebuilt", "--client", "rhea", "--client-from", str(checkout), "--label", "rhea-wip")
    assert {r["broker_version"] for r in rebuilt} == {"3.0.5+v3.0.5-team-dirty"}
    again = Path(meta["client_builds"]["rhea-wip"]["installed"])
    assert again.parent.name == "rhea-wip" and again.name != installed.name      # a changed build: its own entry
    assert (again / "node_modules" / "rhea" / "lib" / "container.js").read_text().endswith("// wip\n")


def wheel_of(site: Path, out: Path) -> Path:
    """The installed release packed back into the wheel it came from (its RECORD names the files)."""
    info = next(site.glob("python_qpid_proton-*.dist-info"))
    tag = next(line.split(": ", 1)[1] for line in (info / "WHEEL").read_text().splitlines()
               if line.startswith("Tag: "))
    wheel = out / f"{info.name[:-len('.dist-info')]}-{tag}.whl"
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for line in (info / "RECORD").read_text().splitlines():
            name = line.rsplit(",", 2)[0]
            if name and "__pycache__" not in name and not name.startswith(".."):
                z.write(site / name, name)
    return wheel


def test_a_proton_wheel_and_an_importable_build_are_judged_as_the_release(tmp_path, monkeypatch):
    pinned = release("python-qpid-proton-0.40.0")
    released, _ = run(tmp_path, "release", "--client", "python-qpid-proton-0.40.0")
    own_cache(tmp_path, monkeypatch)
    expected = {r["case_id"]: r["verdict"] for r in released}
    wheel = wheel_of(pinned / "site", tmp_path / "dist")
    from_wheel, meta = run(tmp_path, "wheel", "--client", "python-qpid-proton", "--client-from", str(wheel),
                           "--label", "proton-main")
    assert {r["case_id"]: r["verdict"] for r in from_wheel} == expected
    assert {(r["broker"], r["broker_version"]) for r in from_wheel} == {("proton-main", "0.40.0+local")}
    assert (Path(meta["client_builds"]["proton-main"]["installed"]) / "site" / "proton" / "__init__.py").exists()

    tree = tmp_path / "build" / "python"                       # what Proton's CMake build leaves in build/python
    shutil.copytree(pinned / "site", tree)
    from_tree, meta = run(tmp_path, "tree", "--client", "python-qpid-proton", "--client-from", str(tree))
    assert {r["case_id"]: r["verdict"] for r in from_tree} == expected
    assert {r["broker"] for r in from_tree} == {"python-qpid-proton-local"}


def test_a_driver_the_suite_does_not_ship(tmp_path):
    """--client-driver: the reference client stands for a team's own driver; its ready line names it."""
    command = f"{sys.executable} -m conformance.reference.client"
    records, meta = run(tmp_path, "driver", "--client-driver", command, "--label", "mylib-dev")
    assert {(r["broker"], r["broker_product"], r["broker_version"]) for r in records} == \
        {("mylib-dev", "amqp-conformance-reference-client", "1.0")}
    assert {r["verdict"] for r in records} == {"pass"}
    assert meta["client_builds"] == {"mylib-dev": {"driver": command}}


def test_what_is_not_a_build_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    own_cache(tmp_path, monkeypatch)
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "package.json").write_text('{"name": "left-pad", "version": "1.0.0"}')
    cases = {
        ("--client", "rhea", "--client-from", str(tmp_path / "missing")): "no such file or directory",
        ("--client", "rhea", "--client-from", str(tmp_path / "empty")): "no package.json there",
        ("--client", "rhea", "--client-from", str(tmp_path / "other")): "names 'left-pad', not 'rhea'",
        ("--client", "python-qpid-proton", "--client-from", str(tmp_path / "empty")): "not a build of",
        ("--client", "go-amqp", "--client-from", str(tmp_path / "empty")): "--client-driver CMD --label NAME",
        ("--client", "rhea", "--client", "go-amqp", "--client-from", str(tmp_path)): "exactly one --client",
        ("--client", "rhea", "--client-from", str(tmp_path / "other"), "--label", "rhea-3.0.5"): "pinned release",
        ("--client", "rhea", "--client-from", str(tmp_path / "other"), "--label", "a/b"): "letters, digits",
        ("--client", "rhea-3.0.5", "--label", "x"): "a pinned release is named by its label",
        ("--client-driver", "no-such-program --x", "--label", "x"): "`no-such-program` is not a program here",
        ("--client-driver", sys.executable): "needs --label NAME",
        ("--client-driver", sys.executable, "--client-from", str(tmp_path), "--client", "rhea"): "give one of them",
    }
    for argv, message in cases.items():
        assert main(["run", *argv, "--reports-dir", str(tmp_path / "reports")]) == EXIT_USAGE, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], (argv, err)
    assert not (tmp_path / "reports").exists()                             # nothing ran
