"""The CI recipes of docs/ci.md run as written: each file of docs/ci/ is parsed (GitHub Actions and GitLab CI
syntax) and its shell steps are executed in order, as the runner would, against a managed broker on this
machine. Only the runner's own parts are stubbed, as docs/ci.md#how-the-recipes-are-tested says:

- GitHub: `actions/checkout` of your repository is the test's work directory (or its `path`), holding what the
  team keeps there: conformance/expectations.toml, written by `run --write-expect` first, as a team adopts,
  and for the client recipe the library's checkout; `actions/upload-artifact` checks that every `path` line
  matches files; `actions/cache/restore` and `/save` copy `path` from and to a directory standing for the CI
  cache; a step with `id: prepare-runner` (the container's packages) is skipped. `run:` steps run with
  `bash --noprofile --norc -eo pipefail` in their `working-directory`, `if: always()` / `failure()` honoured,
  `${{ vars.NAME }}` in a step's `env` read from the repository variables (AMQP_CONFORMANCE_GIT: this
  checkout's file:// URL, so "Get the suite" clones it), `GITHUB_STEP_SUMMARY` a file.
- GitLab: `before_script`'s `git clone` of the suite runs (from the same file:// URL); its `apt-get` line (the
  image's packages) does not; `script` runs in one `bash -eo pipefail` shell, `after_script` in another;
  `services` are a managed node the test starts (BROKER_URL); `artifacts` paths and JUnit reports must match
  files; `cache` paths are restored and saved; `needs` orders the jobs.
- The values a team sets are replaced by this machine's (see each recipe below): the broker build is `true`,
  its start command the Qpid Proton C example broker the suite provisions, the client library's build `true`
  and its checkout rhea's package as npm installed it for the tests (a library checkout that is built), the
  matrix one managed broker, and SUITE_ARGS one or two cases, so that CI stays quick.
- The suite is set up as `./dev test` left it (AMQP_CONFORMANCE_VENV: this test's Python environment) and every
  `report` of the six recipes runs on one Spark Connect server the test starts (SPARK_REMOTE), instead of
  starting Spark six times.

The six recipes run in one test, side by side as the independent CI jobs they are (the nightly ones one after
the other), a subtest each: the broker team's GitHub workflow (green), its GitLab job (red: one expectation
changed), the client team's GitHub workflow (red) and GitLab job (green), both against the team's own build
(`--client-from`), and the nightly matrix: GitHub's first night, GitLab's second night from the cache the first
one left. SUITE_ARGS is the smallest set that gives every step something to do (a pass and a fail for the
brokers, one fail for the client). The job summaries they produce are kept in `reports/ci-recipes/`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

pytestmark = [pytest.mark.broker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "docs" / "ci"
SUITE_CASES = "2.6.8/1 2.6.8/2"                 # SUITE_ARGS of the broker recipes: a pass and a fail on proton-c
CLIENT = "rhea"                                  # ./dev test provisions rhea-3.0.5 (TESTED_CLIENTS)
CLIENT_CASES = "2.6.8/101"                      # a fail of rhea 3.0.5
KNOWN_ACTIONS = ("actions/checkout", "actions/upload-artifact", "actions/cache/restore", "actions/cache/save")
FAR_FUTURE = 4102444800                          # 2100-01-01: the shim's set-up stamps are newer than any pyproject


def proton_binary() -> Path:
    from conformance.brokers.managed import cache_dir
    from conformance.brokers.proton_c import ProtonCBroker
    broker = ProtonCBroker()
    if not broker.provisioned():
        pytest.skip("qpid-proton-c is not provisioned (./dev test provisions it)")
    return Path(cache_dir()) / "qpid-proton-c" / "broker"


def library_checkout() -> Path:
    """rhea's package as npm installed it for the tests: a checkout of the library, already built (pure JS)."""
    from conformance.clients import series
    from conformance.clients.provision import home, provisioned
    lib = series(CLIENT)[-1]
    if not provisioned(lib):
        pytest.skip(f"{lib.label} is not provisioned (./dev test provisions it)")
    return home(lib) / "node_modules" / lib.package


# -- the runner ----------------------------------------------------------------------------------------------------

class Runner:
    """One CI job's work directory, environment and the stand-in for the CI cache."""

    def __init__(self, root: Path, values: dict[str, str], spark: "SparkConnect", cache: Path | None = None):
        self.root = root
        self.work = root / "repo"
        self.cache = cache or root / "ci-cache"
        self.work.mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(parents=True, exist_ok=True)
        self.summary = root / "step-summary.md"
        self.values = values
        self.spark = spark
        self.vars = {"AMQP_CONFORMANCE_GIT": REPO.as_uri(), "AMQP_CONFORMANCE_REF": ""}   # repository variables
        self.log: list[str] = []

    def env(self, *layers: dict) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "SPARK_"))}
        for layer in layers:
            env.update({k: self.expression(str(v)) for k, v in (layer or {}).items()})
        env.update(self.values)
        env.update({"CI": "true", "GITHUB_STEP_SUMMARY": str(self.summary), "NO_COLOR": "1",
                    "GITHUB_OUTPUT": str(self.root / "github-output"), "GITHUB_ENV": str(self.root / "github-env"),
                    "AMQP_CONFORMANCE_VENV": str(venv_shim(self.root)), "SPARK_REMOTE": self.spark.url(),
                    "AMQP_CONFORMANCE_GIT": self.vars["AMQP_CONFORMANCE_GIT"],
                    "CI_BUILDS_DIR": str(self.root)})           # GitLab: the folder that holds the project's checkout
        return env

    def expression(self, value: str) -> str:
        """`${{ vars.NAME }}` as GitHub evaluates it in an `env:` value (an unset variable is empty)."""
        def evaluate(m: re.Match) -> str:
            found = re.fullmatch(r"vars\.(\w+)", m.group(1).strip())
            assert found, f"no stand-in for the expression ${{{{ {m.group(1)} }}}}: add it to the test"
            return self.vars.get(found.group(1), "")
        return re.sub(r"\$\{\{(.*?)\}\}", evaluate, value)

    def shell(self, script: str, env: dict, what: str, cwd: Path | None = None, timeout: float = 600) -> int:
        assert "${{" not in script, f"{what}: a GitHub expression in a shell step (use env instead)"
        t0 = time.monotonic()
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=cwd or self.work, env=env, capture_output=True, text=True, timeout=timeout)
        self.log.append(f"$ {what} -> {proc.returncode} ({time.monotonic() - t0:.1f} s)\n"
                        f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        return proc.returncode

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
    `./dev run` and `./dev report` set nothing up again, exactly as after `./dev test`). The stamps are dated in
    the future: the suite the recipe clones has a newer pyproject.toml than any stamp made now, and `./dev` must
    not install that clone into the shared environment."""
    shim = root / "venv"
    if not shim.exists():
        shim.mkdir()
        (shim / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
        for kind in ("run", "report", "test"):
            stamp = shim / f".installed-{kind}"
            stamp.touch()
            os.utime(stamp, (FAR_FUTURE, FAR_FUTURE))
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
            cwd = runner.work / step.get("working-directory", ".")
            code = runner.shell(step["run"], runner.env(*env_layers, step.get("env") or {}),
                                f"{path.name} {name}: {step.get('name') or step['run'][:60]}", cwd=cwd)
            ok = ok and code == 0
        results[name] = ok
    return results


def github_action(step: dict, runner: Runner) -> bool:
    uses, given = step["uses"].split("@")[0], step.get("with") or {}
    assert uses in KNOWN_ACTIONS, f"no stub for {uses}: add one to tests/test_ci_recipes.py and docs/ci.md"
    if uses == "actions/checkout":
        assert "repository" not in given, "the suite is cloned from AMQP_CONFORMANCE_GIT, not checked out"
        assert (runner.work / given.get("path", ".")).is_dir(), f"the team's checkout is not at {given.get('path')}"
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
        env = runner.env(job.get("variables") or {})
        for line in job.get("before_script") or []:
            assert line.startswith(("git clone", "apt-get")), f"{name}: before_script is the runner's part only"
            if line.startswith("git clone"):                # the suite, from AMQP_CONFORMANCE_GIT
                assert runner.shell(line, env, f"{path.name} {name}: before_script") == 0, runner.output()
        cache = (job.get("cache") or {}).get("paths") or []
        runner.restore(cache)
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


# -- what the recipes run against ------------------------------------------------------------------------------

class SparkConnect:
    """One Spark Connect server (from the pyspark installation, on loopback) for every `report` of the recipes:
    started before the first recipe, waited for when the first step needs it."""

    def __init__(self, tmp: Path):
        import pyspark
        home = Path(pyspark.__file__).parent
        self.log = tmp / "connect.log"
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp),
               "SPARK_NO_DAEMONIZE": "1"}
        env.pop("SPARK_REMOTE", None)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                 "--master", "local[2]", "--driver-memory", "1g", "--conf", "spark.connect.grpc.binding.port=0",
                 "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.session.timeZone=UTC"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._url: str | None = None

    def url(self, timeout: float = 180.0) -> str:
        if self._url is None:
            pattern = re.compile(r"Successfully started service "
                                 r"'org\.apache\.spark\.sql\.connect\.service\.SparkConnectService' on port (\d+)")
            deadline = time.monotonic() + timeout
            while self._url is None:
                found = pattern.search(self.log.read_text(errors="replace")) if self.log.exists() else None
                if found:
                    port = int(found.group(1))
                    with socket.create_connection(("127.0.0.1", port), timeout=5):
                        self._url = f"sc://127.0.0.1:{port}"
                    break
                assert self.process.poll() is None, f"the Spark Connect server exited: {self.log.read_text()[-2000:]}"
                assert time.monotonic() < deadline, f"the Spark Connect server reported no port within {timeout} s"
                time.sleep(0.2)  # bounded-wait-ok: polling a starting server's log with a deadline
        return self._url

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=30)


def adopt(root: Path, argv: list[str]) -> str:
    """The team's expectations file, adopted with `run --write-expect` (as docs/ci.md says a team does)."""
    exp = root / "expectations.toml"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", *argv, "--write-expect", str(exp),
                           "--reports-dir", str(root / "reports")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "CI": "true"})
    assert proc.returncode == 0 and exp.exists(), proc.stdout + proc.stderr
    return exp.read_text()


def one_changed(expectations: str, on: str, case: str) -> str:
    """The file with one expectation that no longer holds: the first `fail` expected as `pass`, or else a new
    entry expecting `fail` of a cell that passes."""
    if 'verdict = "fail"' in expectations:
        return expectations.replace('verdict = "fail"', 'verdict = "pass"', 1)
    return expectations + f'\n[[expect]]\ncase = "{case}"\non = "{on}"\nverdict = "fail"\nreason = "TEST-1"\n'


def place(runner: Runner, where: str, expectations: str, checkout: Path | None = None) -> None:
    """The team's repository as `actions/checkout` or GitLab leave it at `where`: the library's checkout (for
    the client recipes) and conformance/expectations.toml."""
    target = runner.work / where
    if checkout is not None:
        shutil.copytree(checkout, target, dirs_exist_ok=True)
    (target / "conformance").mkdir(parents=True, exist_ok=True)
    (target / "conformance" / "expectations.toml").write_text(expectations)


def keep_summary(text: str, name: str) -> None:
    out = REPO / "reports" / "ci-recipes"
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(text)


# -- the recipes -----------------------------------------------------------------------------------------------------

def test_every_recipe_parses_and_says_what_the_docs_say():
    docs = (REPO / "docs" / "ci.md").read_text()
    files = sorted(RECIPES.glob("*.yml"))
    assert [f.name for f in files] == ["github-broker.yml", "github-client.yml", "github-nightly.yml",
                                       "gitlab-broker.yml", "gitlab-client.yml", "gitlab-nightly.yml"]
    for f in files:
        data = yaml.safe_load(f.read_text())
        assert f"ci/{f.name}" in docs, f"docs/ci.md does not include {f.name}"
        if f.name.startswith("github"):
            scripts = [s.get("run", "") for job in data["jobs"].values() for s in job["steps"]]
        else:
            scripts = [line for job in data.values() if isinstance(job, dict)
                       for line in (job.get("before_script") or []) + job.get("script", [])]
        text = "\n".join(scripts)
        for script in scripts:                      # what the runner's bash reads (a quote in ${X:?...} breaks it)
            syntax = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
            assert syntax.returncode == 0, f"{f.name}: {syntax.stderr}{script}"
        assert "amqp-conformance/dev" in text and "${{" not in text, f.name
        assert "git clone --depth 1 " in text and '"${AMQP_CONFORMANCE_GIT:?' in text, \
            f"{f.name}: the suite comes from the git URL the team sets (AMQP_CONFORMANCE_GIT)"
        assert "amqp-conformance/amqp-conformance" not in f.read_text(), f"{f.name}: a repository nobody can follow"
        if "nightly" not in f.name or f.name.startswith("github"):
            assert "--expect" in text, f.name
        if "client" in f.name:
            assert "--client-from" in text, f"{f.name}: a library team judges its own build"


def test_the_docs_show_each_recipe_as_it_is():
    """docs/ci.md includes each file verbatim (an `<!-- include: ci/NAME.yml -->` block): they cannot drift."""
    docs = (REPO / "docs" / "ci.md").read_text()
    blocks = dict(re.findall(r"<!-- include: (\S+) -->\n```yaml\n(.*?)```", docs, flags=re.S))
    assert sorted(blocks) == sorted(f"ci/{f.name}" for f in RECIPES.glob("*.yml"))
    for name, body in blocks.items():
        assert body == (REPO / "docs" / name).read_text(), f"docs/ci.md's copy of {name} differs from the file"


@pytest.fixture
def proton_url():
    from conformance import brokers
    handle = brokers.start(brokers.resolve("qpid-proton-c"))
    try:
        yield handle.url
    finally:
        handle.managed.stop()


def recipe(name: str, runner: Runner, where: str, expectations: str, checkout: Path | None = None):
    """One recipe run as written in the team's repository as `place` leaves it: (runner, job name -> succeeded)."""
    place(runner, where, expectations, checkout)
    run = run_github if name.startswith("github") else run_gitlab
    return runner, run(RECIPES / name, runner)


@pytest.mark.timeout(600)
def test_the_recipes_run_as_written(tmp_path, proton_url, subtests):
    binary, checkout = proton_binary(), library_checkout()
    spark = SparkConnect(tmp_path)                      # starts while the team adopts its expectations files
    pool = ThreadPoolExecutor(max_workers=5)            # the recipes are independent CI jobs: they run side by side
    try:
        start = f"{binary} 127.0.0.1 {{port}}"
        broker = {"BROKER_BUILD": "true", "BROKER_START": start, "BROKER_LABEL": "mybroker", "BROKER_URL": proton_url,
                  "SUITE_ARGS": SUITE_CASES}
        client = {"CLIENT_LIBRARY": CLIENT, "CLIENT_BUILD": "true", "CLIENT_LABEL": "rhea-local",
                  "SUITE_ARGS": CLIENT_CASES}
        nightly = {"NIGHTLY_BROKERS": "--broker qpid-proton-c", "SUITE_ARGS": SUITE_CASES}
        adopted_broker, adopted_client, adopted_nightly = pool.map(lambda job: adopt(*job), [
            (tmp_path / "adopt-broker", [*SUITE_CASES.split(), "--start", start, "--url", "amqp://127.0.0.1:{port}",
                                         "--label", "mybroker"]),
            (tmp_path / "adopt-client", [*CLIENT_CASES.split(), "--client", CLIENT, "--client-from", str(checkout),
                                         "--label", "rhea-local"]),
            (tmp_path / "adopt-nightly", [*SUITE_CASES.split(), "--broker", "qpid-proton-c"])])

        nights = tmp_path / "ci-cache"                  # the CI cache: GitHub's first night, GitLab's second
        cached = nights / "reports" / "history-cache"

        def night_one():
            """The first night, and what it left in the CI cache (before the second night adds to it)."""
            runner, results = recipe("github-nightly.yml", Runner(tmp_path / "github-nightly", nightly, spark,
                                                                  cache=nights), ".", adopted_nightly)
            return runner, results, (cached / "report.json").exists(), len(list(cached.rglob("runs.json")))

        first_night = pool.submit(night_one)
        jobs = {
            "github-broker.yml": pool.submit(recipe, "github-broker.yml", Runner(tmp_path / "github-broker", broker,
                                                                                 spark), ".", adopted_broker),
            "gitlab-broker.yml": pool.submit(recipe, "gitlab-broker.yml", Runner(tmp_path / "gitlab-broker", broker,
                                                                                 spark), ".",
                                             one_changed(adopted_broker, "mybroker", "2.6.8/1")),
            "github-client.yml": pool.submit(recipe, "github-client.yml",
                                             Runner(tmp_path / "github-client", {**client, "CLIENT_FROM": "library"},
                                                    spark), "library",
                                             one_changed(adopted_client, "rhea-local", "2.6.8/101"), checkout),
            "gitlab-client.yml": pool.submit(recipe, "gitlab-client.yml",
                                             Runner(tmp_path / "gitlab-client", {**client, "CLIENT_FROM": "."}, spark),
                                             ".", adopted_client, checkout),
            "github-nightly.yml": first_night,
            "gitlab-nightly.yml": pool.submit(lambda: first_night.exception() or recipe(   # the second night
                "gitlab-nightly.yml", Runner(tmp_path / "gitlab-nightly", nightly, spark, cache=nights), ".",
                adopted_nightly)),
        }

        with subtests.test(msg="github-broker.yml: green, the job summary holds the gate and the report"):
            runner, results = jobs["github-broker.yml"].result()
            assert results == {"conformance": True}, runner.output()
            summary = runner.summary.read_text()
            assert "against `expectations.toml`: ✅ as expected" in summary, summary
            assert "## AMQP 1.0 flow-control conformance" in summary                # report.md, appended by `report`
            junit = JUnitXml.fromfile(runner.matches("reports/runs/*/junit.xml")[0])
            assert junit.failures == 0, runner.output()
            assert junit.skipped >= adopted_broker.count('verdict = "fail"') > 0, adopted_broker   # expected fails
            keep_summary(summary, "github-broker-green.md")

        with subtests.test(msg="gitlab-broker.yml: red on one changed expectation, artifacts all the same"):
            runner, results = jobs["gitlab-broker.yml"].result()
            assert results == {"amqp-conformance": False}, runner.output()
            log = runner.output()
            assert "❌ 1 unexpected result" in log and "### Unexpected: these fail the gate (1)" in log, log
            assert JUnitXml.fromfile(runner.matches("reports/runs/*/junit.xml")[0]).failures == 1
            assert runner.matches("reports/report/report.html"), log

        with subtests.test(msg="github-client.yml: the team's own build, red on one changed expectation"):
            runner, results = jobs["github-client.yml"].result()
            assert results == {"conformance": False}, runner.output()
            summary = runner.summary.read_text()
            assert "❌ 1 unexpected result" in summary and "rhea-local" in summary, summary
            assert "## AMQP 1.0 flow-control conformance" in summary, summary     # the report ran after the red step
            [run_json] = runner.matches("reports/runs/*/run.json")
            build = json.loads(Path(run_json).read_text())["client_builds"]["rhea-local"]
            assert build["from"] == str(runner.work / "library") and build["version"].startswith("3.0.5+"), build
            keep_summary(summary, "github-client-red.md")

        with subtests.test(msg="gitlab-client.yml: the team's own build, green"):
            runner, results = jobs["gitlab-client.yml"].result()
            assert results == {"amqp-conformance-client": True}, runner.output()
            assert "✅ as expected" in runner.output()
            model = json.loads(Path(runner.matches("reports/report/report.json")[0]).read_text())
            assert [(c["broker"], c.get("subject"), c["series"]) for c in model["columns"]] == \
                [("rhea-local", "client", "rhea")], model["columns"]          # the build beside rhea's releases

        with subtests.test(msg="github-nightly.yml: the first night fills the history cache"):
            runner, results, report_cached, runs_cached = jobs["github-nightly.yml"].result()
            assert all(results.values()), runner.output()
            assert report_cached and runs_cached == 1, runner.output()
            assert "## AMQP 1.0 flow-control conformance" in runner.summary.read_text()
            keep_summary(runner.summary.read_text(), "github-nightly-first-night.md")

        with subtests.test(msg="gitlab-nightly.yml: the second night, gated with the first night's flakiness"):
            second = jobs["gitlab-nightly.yml"].result()
            assert not isinstance(second, BaseException), "the first night failed: no second night"
            runner, results = second
            assert all(results.values()), runner.output()
            [gate] = runner.matches("reports/runs/*/expectations.json")
            assert json.loads(Path(gate).read_text())["flaky_from"] == "reports/history-cache/report.json"
            assert len(list((cached / "history").rglob("runs.json"))) == 2, runner.output()
            assert json.loads((cached / "report.json").read_text())["history"]["runs"] == 2
            assert runner.matches("public/report.html"), runner.output()         # the pages job
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        spark.stop()
