"""Bisect: the search itself (table-driven), end to end over a synthetic series of broker builds with a fault
introduced at a known point (reference brokers started by command), using the history first, and as a
`git bisect run` step over a real git repository."""

from __future__ import annotations

import os
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.history.bisect import BAD, GOOD, SKIP, first_change, search
from conformance.results import change_kind

CASE = "2.6.8/2"        # drain on an empty queue: the reference broker's ignore_drain fault breaks it


@pytest.mark.parametrize("outcomes, first_bad", [
    ("GGGGGGBB", 6), ("GB", 1), ("GGGGGGGB", 7), ("GBBBBBBB", 1), ("GGGG", None), ("BGGG", 0),
    ("GGSSGBBB", 5), ("GSSSB", 4), ("GGGSBB", 4),
])
def test_search_finds_the_first_bad_build(outcomes, first_bad):
    table = {"G": GOOD, "B": BAD, "S": SKIP}
    probed = []

    def probe(i):
        probed.append(i)
        return table[outcomes[i]], "run"

    result = search(len(outcomes), probe)
    assert result.first_bad == first_bad
    assert len(probed) == len(set(probed))           # never the same build twice
    if "S" not in outcomes and first_bad not in (None, 0):
        assert len(probed) <= 2 + (len(outcomes) - 2).bit_length()


@pytest.mark.parametrize("verdicts, changed, before, kind", [
    ("PPPPFF", 4, 3, "regression"), ("FFFFPP", 4, 3, "fix"), ("UUPPIII", 4, 3, "change"),
    ("PPEPPFF", 5, 4, "regression"), ("PPPP", None, None, None), ("UUUU", None, None, None),
    ("IIIIIIIIP", 8, 7, "change"), ("PFFFFFFFF", 1, 0, "regression"),
])
def test_first_change_finds_regressions_and_fixes(verdicts, changed, before, kind):
    names = {"P": "pass", "F": "fail", "I": "informational", "U": "unsupported", "E": "error"}
    probed = []

    def verdict_of(i):
        probed.append(i)
        return names[verdicts[i]], "run"

    result = first_change(len(verdicts), verdict_of)
    assert (result.changed, result.before) == (changed, before)
    assert len(probed) == len(set(probed))
    if kind:
        assert change_kind(result.verdict_before, result.verdict_after) == kind
        if "U" not in verdicts and "E" not in verdicts:
            assert len(probed) <= 2 + (len(verdicts) - 2).bit_length()


@pytest.mark.parametrize("verdicts, sources, changed, before, note", [
    # the newest builds error (the case ran and broke there, reproducibly): when did that start
    ("PPPPPPEE", "RRRRRRRR", 6, 5, ""),
    ("PPPPPPPE", "RRRRRRRR", 7, 6, ""),
    # ... and when did it stop: an error at the oldest end
    ("EEEPPPPP", "RRRRRRRR", 3, 2, ""),
    # an error at the newest end from a build that could not be started proves nothing: stepped around
    ("PPPPPPPE", "RRRRRRRS", None, None, "the newest testable build still gives pass"),
    # errors between two judged ends stay stepped around (a run that broke once says nothing of the build)
    ("PPEPPFF", "RRRRRRR", 5, 4, ""),
    ("PPPPPPUE", "RRRRRRRR", 7, 5, "builds 7..7 could not be tested; the first bad one is among them"),
])
def test_first_change_counts_an_error_at_an_end_of_the_series(verdicts, sources, changed, before, note):
    names = {"P": "pass", "F": "fail", "U": "unsupported", "E": "error"}
    runs = {"R": "run", "S": "start"}
    result = first_change(len(verdicts), lambda i: (names[verdicts[i]], runs[sources[i]]))
    assert (result.changed, result.before) == (changed, before), result
    assert result.note == note
    if changed is not None:
        assert {result.verdict_before, result.verdict_after} & {"error"} or "E" not in (verdicts[0], verdicts[-1])
        assert change_kind(result.verdict_before, result.verdict_after) in ("change", "regression")
        skipped = [s.index for s in result.steps if not result.counted(s)]
        assert all(verdicts[i] in "US" or sources[i] == "S" or not result.errors_counted for i in skipped)


def test_search_reports_untestable_ranges():
    result = search(5, lambda i: ({0: GOOD, 4: BAD}.get(i, SKIP), "run"))
    assert result.first_bad == 4 and "could not be tested" in result.note


def builds_file(tmp_path: Path, count: int, fault_from: int) -> Path:
    rows = []
    for i in range(1, count + 1):
        fault = " --fault ignore_drain" if i >= fault_from else ""
        command = f"{shlex.quote(sys.executable)} -m conformance.reference --port {{port}} --version 1.{i}{fault}"
        rows.append(f'[[build]]\nlabel = "ref-1.{i}"\ncommand = "{command}"\nurl = "amqp://127.0.0.1:{{port}}"\n')
    path = tmp_path / "builds.toml"
    path.write_text("\n".join(rows))
    return path


def test_bisect_a_synthetic_series_then_again_from_the_history(tmp_path, capsys):
    reports = tmp_path / "reports"
    builds = builds_file(tmp_path, count=9, fault_from=6)
    assert main(["bisect", CASE, "--builds", str(builds), "--reports-dir", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "first failing build: ref-1.6" in out
    runs = list((reports / "runs").iterdir())
    assert 3 <= len(runs) <= 5                         # endpoints + log2 of the rest, not all nine
    # the bisect left its record: what it looked at and what it found
    [record] = [json.loads(p.read_text()) for p in (reports / "bisects").glob("*.json")]
    assert (record["case_id"], record["before"], record["changed"], record["kind"]) == \
        (CASE, "ref-1.5", "ref-1.6", "regression")
    assert record["command"] == f"amqp-conformance bisect {CASE} --builds {builds}"
    assert [s["build"] for s in record["steps"]][0] == "ref-1.1" and {s["source"] for s in record["steps"]} == {"run"}
    # every point it ran is now in the history; a second bisect runs nothing; the report links the bisect to
    # the finding whose change it found
    assert main(["report", "--reports-dir", str(reports)]) == 0
    capsys.readouterr()
    model = json.loads((reports / "report" / "report.json").read_text())
    [group] = [g for g in model["finding_groups"] if g["columns"] == ["ref-1.6@1.6"]]
    assert group["case_id"] == CASE and group["bisect"]["changed"] == "ref-1.6"
    assert "bisected: first at ref-1.6" in (reports / "report" / "report.md").read_text()
    assert main(["bisect", CASE, "--builds", str(builds), "--reports-dir", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "first failing build: ref-1.6" in out and "0 run(s)" in out and "(from the history)" in out
    assert len(list((reports / "runs").iterdir())) == len(runs)


def test_bisect_skips_a_build_that_does_not_start(tmp_path, capsys):
    builds = builds_file(tmp_path, count=5, fault_from=4)
    text = builds.read_text().replace("--version 1.3", "--version 1.3 --no-such-option")
    builds.write_text(text)
    assert main(["bisect", CASE, "--builds", str(builds), "--reports-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "first failing build: ref-1.4" in out
    # ref-1.3 sits between the last good and the first bad build: it is tried, listed as skipped (not started,
    # its command failing), and the change is reported with the untested build named, never as its verdict
    assert re.search(r"^ +3\. ref-1\.3 +skip +error \(not started\): the build could not be tested: build ref-1\.3: "
                     r"its command exited with 2", out, re.M), out
    assert "changes between ref-1.2 and ref-1.4: pass -> fail (regression); builds 3..3 could not be tested" in out


def test_bisect_bad_input(tmp_path, capsys):
    assert main(["bisect", "9.9/9", "--build", "qpid-proton-c", "--build", "rabbitmq-4.0"]) == 3
    assert main(["bisect", CASE, "--build", "qpid-proton-c"]) == 2
    assert "at least two builds" in capsys.readouterr().err
    assert main(["bisect", CASE, "--series", "nonesuch"]) == 2
    assert "unknown series 'nonesuch'" in capsys.readouterr().err
    assert main(["bisect", CASE, "--series", "artemis", "--build", "qpid-proton-c"]) == 2
    assert "give builds one way" in capsys.readouterr().err
    (tmp_path / "b.toml").write_text("[[build]]\nlabel = 'x'\nnonsense = 1\n")
    assert main(["bisect", CASE, "--builds", str(tmp_path / "b.toml")]) == 2
    assert "unknown keys" in capsys.readouterr().err


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout


def test_git_bisect_run_finds_the_commit_that_broke_drain(tmp_path):
    """A broker 'source tree' whose seventh commit breaks drain; git bisect run finds it."""
    repo = tmp_path / "broker-src"
    repo.mkdir()
    git(repo, "init", "-q")
    commits = []
    for i in range(1, 11):
        (repo / "broker.args").write_text("--fault ignore_drain\n" if i >= 7 else "\n")
        (repo / "VERSION").write_text(f"1.{i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"change {i}")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    start = f"{sys.executable} -m conformance.reference --port {{port}} $(cat broker.args)"
    step = [sys.executable, "-m", "conformance.cli", "bisect-run", CASE, "--start", f"sh -c '{start}'",
            "--url", "amqp://127.0.0.1:{port}", "--build-cmd", "test -f VERSION",
            "--reports-dir", str(tmp_path / "reports")]
    git(repo, "bisect", "start", commits[-1], commits[0])
    out = subprocess.run(["git", "bisect", "run", *step], cwd=repo, capture_output=True, text=True, timeout=300)
    assert f"{commits[6]} is the first bad commit" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]


def test_bisect_run_exit_codes(tmp_path):
    base = [sys.executable, "-m", "conformance.cli", "bisect-run", CASE, "--reports-dir", str(tmp_path / "r")]
    start = f"{sys.executable} -m conformance.reference --port {{port}}"
    good = subprocess.run([*base, "--start", start, "--url", "amqp://127.0.0.1:{port}"], capture_output=True,
                          text=True, timeout=120)
    assert good.returncode == 0, good.stderr
    bad = subprocess.run([*base, "--start", start + " --fault ignore_drain", "--url", "amqp://127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1, bad.stderr
    broken_build = subprocess.run([*base, "--start", start, "--url", "amqp://127.0.0.1:{port}",
                                   "--build-cmd", "exit 3"], capture_output=True, text=True, timeout=60)
    assert broken_build.returncode == 125
    no_start = subprocess.run([*base, "--start", "false", "--url", "amqp://127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)
    assert no_start.returncode == 125
    usage = subprocess.run([*base], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 128 and usage.stderr.startswith("error: ")


@pytest.mark.broker
def test_bisect_the_real_series_rabbitmq_3_10_to_4_3(tmp_path, capsys):
    """2.7.2/1 (a framing error closes the connection) holds on 3.10 and breaks on 4.0 (it ends the session),
    and stays broken on 4.3: the series' oldest and newest, then the middle."""
    code = main(["bisect", "2.7.2/1", "--series", "rabbitmq", "--reports-dir", str(tmp_path / "reports")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "first failing build: rabbitmq-4.0" in out
    assert "changes between rabbitmq-3.10 and rabbitmq-4.0: informational -> fail (regression)" in out
    assert "3 run(s)" in out
