"""The Allure report of `report --allure`: the allure-results the runs wrote (allure-pytest), merged and handed to
the Allure 3 command line (npm package `allure`, installed by ./dev setup). Nothing here reads the history.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import EXIT_USAGE, ConformanceError, UsageError


def allure_command() -> list[str] | None:
    """The Allure 3 command line (npm package `allure`), if installed."""
    from ..brokers.managed import cache_dir
    for candidate in (Path(cache_dir()) / "node" / "node_modules" / ".bin" / "allure",
                      Path.cwd() / "node_modules" / ".bin" / "allure"):
        if candidate.exists():
            return [str(candidate)]
    found = shutil.which("allure")
    return [found] if found else None


def build_allure(run_dirs: list[Path], out: Path) -> None:
    command = allure_command()
    if command is None:
        raise UsageError("Allure 3 is not installed; run ./dev setup (it installs the npm package `allure`) or "
                         "npm install -g allure")
    results = [str(d / "allure-results") for d in run_dirs if (d / "allure-results").is_dir()]
    if not results:
        raise UsageError("none of the runs has allure-results; run the suite with amqp-conformance run first")
    merged = out.parent / ".allure-results"
    shutil.rmtree(merged, ignore_errors=True)
    merged.mkdir(parents=True)
    for r in results:
        for f in Path(r).iterdir():
            shutil.copy2(f, merged / f.name)
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.run([*command, "generate", str(merged), "--output", str(out)], capture_output=True,
                          text=True, timeout=300)
    shutil.rmtree(merged, ignore_errors=True)
    if proc.returncode != 0 or not (out / "index.html").exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()
        raise ConformanceError(f"allure generate failed ({last[-1] if last else proc.returncode}); see "
                               "`allure generate --help`", exit_code=EXIT_USAGE)
    print(f"[amqp-conformance] Allure report: {out / 'index.html'}", flush=True)
