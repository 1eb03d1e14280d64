"""The CI recipes of docs/ci.md run as written: each file of docs/ci/ is parsed (GitHub Actions and GitLab CI
syntax) and its shell steps are executed in order, as the runner would, against a managed broker on this
machine. Only the runner's own parts are stubbed, as docs/ci.md#how-the-recipes-are-tested says:

- GitHub: `actions/checkout` of your repository is the test's work directory (holding the team's
  conformance/expectations.toml, written by `run --write-expect` first, as a team adopts); `actions/checkout`
  of the suite links this checkout at its `path`; `actions/upload-artifact` checks that every `path` line
  matches files; `actions/cache/restore` and `/save` copy `path` from and to a directory standing for the CI
  cache; a step with `id: prepare-runner` (the container's packages) is skipped. `run:` steps run with
  `bash --noprofile --norc -eo pipefail`, `if: always()` / `failure()` honoured, `GITHUB_STEP_SUMMARY` a file.
- GitLab: `before_script` (the image's packages, the suite's clone) is replaced by linking this checkout;
  `script` runs in one `bash -eo pipefail` shell, `after_script` in another; `services` are a managed node the
  test starts (BROKER_URL); `artifacts` paths and JUnit reports must match files; `cache` paths are restored
  and saved; `needs` orders the jobs.
- The values a team sets are replaced by this machine's (TEST_VALUES): the broker build is `true`, its start
  command the Qpid Proton C example broker the suite provisions, the matrix one managed broker, the client
  library one the tests provision, and SUITE_ARGS a few cases so that CI stays quick.

The job summary the broker recipe produces is kept in `reports/ci-recipes/` of the suite's reports directory.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

pytestmark = [pytest.mark.broker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "docs" / "ci"
SUITE_CASES = "2.6.8 2.7.2/1"                    # SUITE_ARGS of the broker recipes here: a few cases
CLIENT = "python-qpid-proton-0.40.0"             # provisioned by ./dev test (TESTED_CLIENTS)
CLIENT_CASES = "2.6.8 2.7.4/103"
KNOWN_ACTIONS = ("actions/checkout", "actions/upload-artifact", "actions/cache/restore", "actions/cache/save")


def proton_binary() -> Path:
    from conformance.brokers.managed import cache_dir
    from conformance.brokers.proton_c import ProtonCBroker
    broker = ProtonCBroker()
    if not broker.provisioned():
        pytest.skip("qpid-proton-c is not provisioned (./dev test provisions it)")
    return Path(cache_dir()) / "qpid-proton-c" / "broker"


# -- the runner ----------------------------------------------------------------------------------------------------

class Runner:
    """One CI job's work directory, environment and the stand-in for the CI cache."""

    def __init__(self, root: Path, values: dict[str, str], cache: Path | None = None):
        self.root = root
        self.work = root / "repo"
        self.cache = cache or root / "ci-cache"
        self.work.mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(exist_ok=True)
        self.summary = root / "step-summary.md"
        self.values = values
        self.log: list[str] = []

    def env(self, *layers: dict) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_"))}
        for layer in layers:
            env.update({k: str(v) for k, v in (layer or {}).items()})
        env.update(self.values)
        env.update({"CI": "true", "GITHUB_STEP_SUMMARY": str(self.summary), "NO_COLOR": "1",
                    "GITHUB_OUTPUT": str(self.root / "github-output"), "GITHUB_ENV": str(self.root / "github-env"),
                    "AMQP_CONFORMANCE_VENV": str(venv_shim(self.root)), "AMQP_CONFORMANCE_REPORTS": "reports"})
        return env

    def shell(self, script: str, env: dict, what: str, timeout: float = 900) -> int:
        assert "${{" not in script, f"{what}: a GitHub expression in a shell step (use env instead)"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=self.work,
                              env=env, capture_output=True, text=True, timeout=timeout)
        self.log.append(f"$ {what} -> {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        return proc.returncode

    def link_suite(self, path: str) -> None:
        target = self.work / path
        if not target.exists():
            target.symlink_to(REPO, target_is_directory=True)

    def matches(self, pattern: str) -> list[str]:
        return glob.glob(str(self.work / pattern.strip()))

    def restore(self, paths: list[str]) -> None:
        for p in paths:
            src = self.cache / p
            if src.exists():
                shutil.copytree(src, self.work / p, dirs_exist_ok=True, symlinks=True)

    def save(self, paths: list[str]) -> None:
        for p in paths:
            if (self.work / p).exists():
                shutil.rmtree(self.cache / p, ignore_errors=True)
                shutil.copytree(self.work / p, self.cache / p, symlinks=True)

    def output(self) -> str:
        return "\n".join(self.log)


def venv_shim(root: Path) -> Path:
    """The suite's set-up as `./dev` sees it: this test's Python environment, stamped as installed (so that
    `./dev run` and `./dev report` set nothing up again, exactly as after `./dev test`)."""
    shim = root / "venv"
    if not shim.exists():
        shim.mkdir()
        (shim / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
        for kind in ("run", "report", "test"):
            (shim / f".installed-{kind}").touch()
    return shim


def run_github(path: Path, runner: Runner) -> dict[str, bool]:
    """Run every job of a workflow in order; job name -> succeeded."""
    workflow = yaml.safe_load(path.read_text())
    assert workflow["jobs"], path
    results = {}
    for name, job in workflow["jobs"].items():
        env_layers = [workflow.get("env") or {}, job.get("env") or {}]
        ok = True
        for step in job["steps"]:
            condition = str(step.get("if", "success()")).strip()
            assert condition in ("success()", "always()", "failure()"), f"{path.name}: if: {condition}"
            if not ({"success()": ok, "always()": True, "failure()": not ok}[condition]):
                runner.log.append(f"skipped (if: {condition}): {step.get('name') or step.get('uses')}")
                continue
            if step.get("id") == "prepare-runner":
                continue
            if "uses" in step:
                ok = github_action(step, runner) and ok
                continue
            code = runner.shell(step["run"], runner.env(*env_layers, step.get("env") or {}),
                                f"{path.name} {name}: {step.get('name') or step['run'][:60]}")
            ok = ok and code == 0
        results[name] = ok
    return results


def github_action(step: dict, runner: Runner) -> bool:
    uses, given = step["uses"].split("@")[0], step.get("with") or {}
    assert uses in KNOWN_ACTIONS, f"no stub for {uses}: add one to tests/test_ci_recipes.py and docs/ci.md"
    if uses == "actions/checkout":
        if "repository" in given:
            runner.link_suite(given["path"])
        return True
    paths = [p for p in str(given["path"]).splitlines() if p.strip()]
    if uses == "actions/upload-artifact":
        missing = [p for p in paths if not runner.matches(p)]
        assert not missing, f"upload-artifact: nothing matches {missing}\n{runner.output()}"
        return True
    if uses == "actions/cache/restore":
        runner.restore(paths)
    else:
        runner.save(paths)
    return True


def run_gitlab(path: Path, runner: Runner) -> dict[str, bool]:
    """Run every job of a .gitlab-ci.yml fragment (in `needs` order); job name -> succeeded."""
    config = yaml.safe_load(path.read_text())
    jobs = {k: v for k, v in config.items() if isinstance(v, dict) and "script" in v}
    assert jobs, path
    order = sorted(jobs, key=lambda name: len(jobs[name].get("needs") or []))
    results = {}
    for name in order:
        job = jobs[name]
        assert all(results.get(n) for n in job.get("needs") or []), f"{name} needs a job that failed"
        if job.get("services"):
            assert "BROKER_URL" in runner.values, "a job with a service: the test must stand in for it"
        for line in job.get("before_script") or []:
            assert "git clone" in line or "apt-get" in line, f"{name}: before_script is the runner's part only"
        runner.link_suite("amqp-conformance")
        cache = (job.get("cache") or {}).get("paths") or []
        runner.restore(cache)
        env = runner.env(job.get("variables") or {})
        ok = runner.shell("\n".join(job["script"]), env, f"{path.name} {name}: script") == 0
        if job.get("after_script"):
            runner.shell("\n".join(job["after_script"]), env, f"{path.name} {name}: after_script")
        if (job.get("cache") or {}).get("when") == "always" or ok:
            runner.save(cache)
        artifacts = job.get("artifacts") or {}
        if ok or artifacts.get("when") == "always":
            wanted = list(artifacts.get("paths") or []) + list((artifacts.get("reports") or {}).values())
            missing = [p for p in wanted if not runner.matches(p)]
            assert not missing, f"{name}: artifacts: nothing matches {missing}\n{runner.output()}"
        results[name] = ok
    return results


# -- the recipes -----------------------------------------------------------------------------------------------------

def test_every_recipe_parses_and_says_what_the_docs_say():
    docs = (REPO / "docs" / "ci.md").read_text()
    files = sorted(RECIPES.glob("*.yml"))
    assert [f.name for f in files] == ["github-broker.yml", "github-client.yml", "github-nightly.yml",
                                       "gitlab-broker.yml", "gitlab-client.yml", "gitlab-nightly.yml"]
    for f in files:
        data = yaml.safe_load(f.read_text())
        assert f"ci/{f.name}" in docs, f"docs/ci.md does not include {f.name}"
        scripts = ([s.get("run", "") for job in data.get("jobs", {}).values() for s in job["steps"]]
                   if f.name.startswith("github") else
                   [line for job in data.values() if isinstance(job, dict) for line in job.get("script", [])])
        text = "\n".join(scripts)
        assert "amqp-conformance/dev" in text and "${{" not in text, f.name
        if "nightly" not in f.name or f.name.startswith("github"):
            assert "--expect" in text, f.name


def test_the_docs_show_each_recipe_as_it_is():
    """docs/ci.md includes each file verbatim (an `<!-- include: ci/NAME.yml -->` block): they cannot drift."""
    import re
    docs = (REPO / "docs" / "ci.md").read_text()
    blocks = dict(re.findall(r"<!-- include: (\S+) -->\n```yaml\n(.*?)```", docs, flags=re.S))
    assert sorted(blocks) == sorted(f"ci/{f.name}" for f in RECIPES.glob("*.yml"))
    for name, body in blocks.items():
        assert body == (REPO / "docs" / name).read_text(), f"docs/ci.md's copy of {name} differs from the file"


def write_expectations(runner: Runner, argv: list[str]) -> Path:
    """The team's committed file: adopted with `run --write-expect` (as docs/ci.md says a team does)."""
    exp = runner.work / "conformance" / "expectations.toml"
    exp.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", *argv, "--write-expect", str(exp),
                           "--reports-dir", str(runner.root / "adoption")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "CI": "true"})
    assert proc.returncode == 0 and exp.exists(), proc.stdout + proc.stderr
    return exp


@pytest.fixture
def proton_url():
    from conformance import brokers
    handle = brokers.start(brokers.resolve("qpid-proton-c"))
    try:
        yield handle.url
    finally:
        handle.managed.stop()


def broker_values() -> dict[str, str]:
    return {"BROKER_BUILD": "true", "BROKER_START": f"{proton_binary()} 127.0.0.1 {{port}}",
            "BROKER_LABEL": "mybroker", "SUITE_ARGS": SUITE_CASES}


def keep_summary(runner: Runner, name: str) -> None:
    out = REPO / "reports" / "ci-recipes"
    out.mkdir(parents=True, exist_ok=True)
    if runner.summary.exists():
        shutil.copy(runner.summary, out / name)


def test_the_broker_teams_github_workflow(tmp_path):
    runner = Runner(tmp_path / "green", broker_values())
    start = ["--start", runner.values["BROKER_START"], "--url", "amqp://127.0.0.1:{port}", "--label", "mybroker"]
    exp = write_expectations(runner, [*SUITE_CASES.split(), *start])
    assert run_github(RECIPES / "github-broker.yml", runner) == {"conformance": True}, runner.output()
    summary = runner.summary.read_text()
    assert "against `expectations.toml`: ✅ as expected" in summary, summary
    assert "## AMQP 1.0 flow-control conformance" in summary                   # report.md, appended by `report`
    run_dir = Path(runner.matches("reports/runs/*")[0])
    assert JUnitXml.fromfile(str(run_dir / "junit.xml")).failures == 0
    keep_summary(runner, "github-broker-green.md")

    # the same job when one expectation no longer holds: red, and the summary and artifacts are there all the same
    red = Runner(tmp_path / "red", broker_values())
    (red.work / "conformance").mkdir(parents=True)
    text = exp.read_text()
    changed = text.replace('verdict = "fail"', 'verdict = "pass"', 1) if 'verdict = "fail"' in text else \
        text + '\n[[expect]]\ncase = "2.6.8/1"\non = "mybroker"\nverdict = "fail"\nreason = "TEST-1"\n'
    (red.work / "conformance" / "expectations.toml").write_text(changed)
    assert run_github(RECIPES / "github-broker.yml", red) == {"conformance": False}, red.output()
    summary = red.summary.read_text()
    assert "❌ 1 unexpected result" in summary and "### Unexpected: these fail the gate (1)" in summary, summary
    assert JUnitXml.fromfile(red.matches("reports/runs/*/junit.xml")[0]).failures == 1
    keep_summary(red, "github-broker-red.md")


def test_the_broker_teams_gitlab_job(tmp_path, proton_url):
    runner = Runner(tmp_path, {**broker_values(), "BROKER_URL": proton_url})
    write_expectations(runner, [*SUITE_CASES.split(), "--broker", proton_url, "--label", "mybroker"])
    assert run_gitlab(RECIPES / "gitlab-broker.yml", runner) == {"amqp-conformance": True}, runner.output()
    assert "✅ as expected" in runner.output()                                # the gate's summary in the job log


def test_the_client_teams_recipes(tmp_path):
    from conformance.clients import resolve
    from conformance.clients.provision import provisioned
    if not provisioned(resolve(CLIENT)):
        pytest.skip(f"{CLIENT} is not provisioned (./dev test provisions it)")
    values = {"CLIENT_LIBRARY": CLIENT, "SUITE_ARGS": CLIENT_CASES}
    for recipe, run in (("github-client.yml", run_github), ("gitlab-client.yml", run_gitlab)):
        runner = Runner(tmp_path / recipe, values)
        write_expectations(runner, [*CLIENT_CASES.split(), "--client", CLIENT])
        assert all(run(RECIPES / recipe, runner).values()), runner.output()
        assert "✅ as expected" in runner.output() + (runner.summary.read_text() if runner.summary.exists() else "")


def test_the_nightly_recipes_keep_the_history_in_the_cache(tmp_path):
    values = {"NIGHTLY_BROKERS": "--broker qpid-proton-c", "SUITE_ARGS": SUITE_CASES}
    adopted = None
    for recipe, run, nights in (("github-nightly.yml", run_github, 2), ("gitlab-nightly.yml", run_gitlab, 1)):
        cache = tmp_path / recipe / "ci-cache"
        for night in range(1, nights + 1):
            runner = Runner(tmp_path / recipe / f"night-{night}", values, cache)      # a fresh job, the same cache
            if adopted is None:
                adopted = write_expectations(runner, [*SUITE_CASES.split(), "--broker", "qpid-proton-c"]).read_text()
            (runner.work / "conformance").mkdir(parents=True, exist_ok=True)
            (runner.work / "conformance" / "expectations.toml").write_text(adopted)
            assert all(run(RECIPES / recipe, runner).values()), runner.output()
            cached = cache / "reports" / "history-cache"
            assert (cached / "report.json").exists(), runner.output()
            assert len(list((cached / "history").rglob("runs.json"))) == night, runner.output()   # a batch a night
            if night == 2:     # the second night gates with what the first night's report knows of flakiness
                [gate] = runner.matches("reports/runs/*/expectations.json")
                assert json.loads(Path(gate).read_text())["flaky_from"] == "reports/history-cache/report.json"
                assert json.loads((cached / "report.json").read_text())["history"]["runs"] == 2
