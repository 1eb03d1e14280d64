"""bisect --repo: from the release answer to the commit answer, over a small git repository made here (a tiny
broker whose drain breaks at a known commit, on a branch merged into the main line, with a commit that does not
build in the middle), with a `commands` recipe; the clone stays as it was; builds are cached per commit and
every commit's run lands in the history labelled by the commit; recipe errors are one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.brokers.source import load_recipe
from conformance.cli import main

CASE = "2.6.8/2"        # drain on an empty queue: the reference broker's ignore_drain fault breaks it

BUILD_SH = """#!/bin/sh
# the tiny broker's build: reads its configuration and writes the launcher into the build directory ($1)
set -e
. ./broker.conf
cat > "$1/broker" <<LAUNCHER
#!/bin/sh
exec "$2" -m conformance.reference "\\$@" $FAULT
LAUNCHER
chmod +x "$1/broker"
"""

RECIPE = """
name = "tiny"
description = "the suite's reference broker, configured by the repository"
[releases]
tag = "v{version}"
label = "tiny-{version}"
versions = ["1.0", "1.1", "1.2"]
[build]
kind = "commands"
commands = [["sh", "build.sh", "{out}", "{python}"]]
[start]
command = "{out}/broker --port {port}"
url = "amqp://127.0.0.1:{port}"
ready_timeout = 30
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
                               "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org"})
    return done.stdout.strip()


def commit(repo: Path, message: str, conf: str | None = None) -> str:
    if conf is not None:
        (repo / "broker.conf").write_text(conf)
    (repo / "notes").mkdir(exist_ok=True)
    (repo / "notes" / message.split(":")[0].replace(" ", "-")).write_text(message + "\n")   # a file of its own
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def tiny(tmp_path):
    return make_tiny(tmp_path)


def make_tiny(tmp_path: Path):
    """The repository: v1.0, v1.1, then on the main line a1 a2 BROKEN a4 MERGE a6 v1.2, where MERGE brings in a
    branch (forked at a1) of b1, b2 (drain broken: the culprit), b3."""
    repo = tmp_path / "tiny-broker"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "build.sh").write_text(BUILD_SH)
    ids = {}
    ids["c1"] = commit(repo, "first", 'FAULT=""\n')
    git(repo, "tag", "v1.0")
    ids["c2"] = commit(repo, "second")
    git(repo, "tag", "v1.1")
    ids["a1"] = commit(repo, "a1: main line")
    git(repo, "checkout", "-q", "-b", "feature")
    ids["b1"] = commit(repo, "b1: feature work")
    ids["b2"] = commit(repo, "TINY-7 drain answers later", 'FAULT="--fault ignore_drain"\n')
    ids["b3"] = commit(repo, "b3: feature work")
    git(repo, "checkout", "-q", "main")
    ids["a2"] = commit(repo, "a2: main line")
    ids["broken"] = commit(repo, "a3: broken configuration", 'FAULT="\n')
    ids["a4"] = commit(repo, "a4: repaired", 'FAULT=""\n')
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    ids["merge"] = git(repo, "rev-parse", "HEAD")
    ids["a6"] = commit(repo, "a6: main line")
    git(repo, "tag", "v1.2")
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(RECIPE)
    return repo, recipe, ids


def test_bisect_to_the_commit_then_again_from_the_cache_and_the_history(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    repo, recipe, ids = tiny
    state = (git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD"), git(repo, "worktree", "list"),
             git(repo, "for-each-ref"))
    reports = tmp_path / "reports"
    argv = ["bisect", CASE, "--recipe", str(recipe), "--repo", str(repo), "--reports-dir", str(reports)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "the verdict of 2.6.8/2 changes between tiny-1.1 and tiny-1.2: pass -> fail (regression)" in out, out
    assert f"first commit with fail for 2.6.8/2 (regression): {ids['b2']}" in out, out
    assert "subject:       TINY-7 drain answers later" in out
    assert "first release: v1.2" in out
    assert re.search(r"author date:   \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} \(Dev\)", out)
    # the commit that does not build was tried and skipped, and said so
    assert re.search(rf"^ +\d+\. {ids['broken'][:10]}  skip +not built +does not build: `sh build.sh \{{out\}} "
                     r"\{python\}` exited 2: .*Syntax error", out, re.M), out
    # the merge sent the search down the branch it merged
    assert f"commits searched (the branch merged by {ids['merge'][:10]}): 3" in out
    assert re.search(rf"before: +pass at {ids['b1'][:10]} \(tiny-v1\.1-\d+-g{ids['b1'][:10]}\)", out), out
    assert re.search(r"deciding finding: +2\.6\.\d/[\w-]+ \(MUST, (case|model)\): expected ", out), out
    # the clone is as it was: no checkout, no index change, no ref, no worktree
    assert state == (git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD"),
                     git(repo, "worktree", "list"), git(repo, "for-each-ref"))
    # every commit run is an ordinary run labelled by its commit
    labels = {p.read_text().split('"broker": "')[1].split('"')[0] for p in (reports / "runs").glob("*/results.jsonl")}
    assert f"tiny-v1.1-4-g{ids['b2'][:10]}" in labels or any(lb.endswith(ids["b2"][:10]) for lb in labels), labels
    runs = len(list((reports / "runs").iterdir()))

    # again without the history: every build comes from the cache
    assert main(argv + ["--no-history"]) == 0
    out = capsys.readouterr().out
    assert f"first commit with fail for 2.6.8/2 (regression): {ids['b2']}" in out
    assert re.search(r"\d+ commit\(s\) tested \(0 built, \d+ builds from the cache", out), out

    # once the runs are in the history, nothing is built or run at all
    assert main(["report", "--reports-dir", str(reports)]) == 0
    capsys.readouterr()
    runs = len(list((reports / "runs").iterdir()))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"first commit with fail for 2.6.8/2 (regression): {ids['b2']}" in out
    assert "0 run(s)" in out and "from the history" in out
    assert len(list((reports / "runs").iterdir())) == runs


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("commands = [", "comands = ["), r"recipe .*tiny\.toml: \[build\] has unknown keys \['comands'\]"),
    (lambda t: t.replace('tag = "v{version}"', 'tag = "v"'), r"releases\.tag = 'v' does not name \{version\}"),
    (lambda t: t.replace('"{out}/broker --port {port}"', '"{out}/broker --port {prt}"'), r"start\.command uses \{prt\}"),
    (lambda t: t.replace('"1.2"]', '"1.3"]'), r"the clone at .* has no tag v1\.3 \(release tiny-1\.3\); fetch the tags"),
    (lambda t: t + "\n[extra]\n", r"unknown keys \['extra'\]"),
    (lambda t: "not = [toml", r"is not valid TOML"),
])
def test_a_recipe_error_is_one_line(tiny, tmp_path, edit, message):
    repo, recipe, _ = tiny
    recipe.write_text(edit(RECIPE))
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "bisect", CASE, "--recipe", str(recipe),
                           "--repo", str(repo), "--reports-dir", str(tmp_path / "r")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: "), done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert not (tmp_path / "r" / "runs").exists()           # nothing ran


def test_bisect_repo_bad_input(tiny, tmp_path, capsys):
    repo, recipe, _ = tiny
    cases = [
        (["--recipe", str(recipe), "--repo", str(tmp_path / "nope")], "no such directory"),
        (["--recipe", str(recipe), "--repo", str(tmp_path)], "is not a git repository"),
        (["--recipe", str(recipe)], "give --repo PATH too"),
        (["--repo", str(repo)], "give --series NAME or --recipe"),
        (["--series", "rabbitmq", "--repo", str(repo)], "no recipe builds the series 'rabbitmq'"),
        (["--recipe", "artemis", "--series", "rabbitmq", "--repo", str(repo)], "recipe artemis is for the series"),
        (["--recipe", "nonesuch", "--repo", str(repo)], "unknown recipe 'nonesuch'"),
        (["--recipe", str(recipe), "--repo", str(repo), "--build", "qpid-proton-c"], "give builds one way|not --build"),
    ]
    for extra, message in cases:
        assert main(["bisect", CASE, *extra, "--reports-dir", str(tmp_path / "r")]) == 2, extra
        err = capsys.readouterr().err
        assert re.search(message, err), (extra, err)


def test_the_shipped_recipes_load():
    for name in ("artemis",):
        recipe = load_recipe(name)
        assert recipe.releases.series and recipe.version_of(recipe.release_label("2.35.0")) == "2.35.0"
        assert recipe.tag("2.35.0") == "2.35.0"


def test_a_range_the_recipe_cannot_build_ends_the_search_with_the_reason(tmp_path, capsys, monkeypatch):
    """Twenty commits that do not build between the releases: the search gives up after a bounded number of
    skips instead of trying every commit, and says why."""
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "tiny-broker"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "build.sh").write_text(BUILD_SH)
    commit(repo, "first", 'FAULT=""\n')
    git(repo, "tag", "v1.0")
    git(repo, "tag", "v1.1")
    for i in range(20):
        commit(repo, f"broken {i}", f'FAULT="{i}\n')
    commit(repo, "TINY-9 drain answers later", 'FAULT="--fault ignore_drain"\n')
    git(repo, "tag", "v1.2")
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(RECIPE)
    code = main(["bisect", CASE, "--recipe", str(recipe), "--repo", str(repo), "--reports-dir", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert re.search(r"no commit found: 15 commits could not be built or started \(the last: does not build: "
                     r"`sh build.sh \{out\} \{python\}` exited 2: .*\); the recipe does not fit these commits", out), out
