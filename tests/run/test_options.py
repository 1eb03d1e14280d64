"""Run options: one dataclass with one set of defaults (nothing else in the package writes a default for the
frame timeout, the quiet period or the connect timeout), validated once for every command."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.options import DEFAULTS, FIELDS, RunOptions, default_reports_dir, workers_arg

PACKAGE = Path(__file__).resolve().parents[2] / "conformance"
OPTIONS = {"quiet_period", "frame_timeout", "connect_timeout"}
FIELDS_TOO = OPTIONS | {"quiet", "frame", "connect"}          # dataclass fields (the peer's Timeouts)
FLAGS = ("--quiet-period", "--frame-timeout", "--connect-timeout")

# Defaults written in files of another helper, to be taken from RunOptions there (none left).
KNOWN_ELSEWHERE: set[str] = set()


def numeric(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def default_sites(path: Path) -> list[str]:
    """Where `path` writes a number as the default of a timeout / quiet-period option."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in FIELDS_TOO:
            value = node.value
            if isinstance(value, ast.Call):       # field(default=...)
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if value is not None and numeric(value):
                found.append(f"{node.target.id} = {value.value} (line {node.lineno})")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [f"{node.name}({a.arg}={d.value}) (line {node.lineno})" for a, d in pairs
                      if a.arg in OPTIONS and numeric(d)]
        elif isinstance(node, ast.Call):
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if any(n in FLAGS for n in names) and default is not None and numeric(default):
                found.append(f"{names[0]} default={default.value} (line {node.lineno})")
    return found


def test_the_defaults_are_written_once():
    sites = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        found = default_sites(path)
        if found:
            sites[rel] = found
    assert set(sites) - KNOWN_ELSEWHERE == {"conformance/options.py"}, sites
    assert DEFAULTS.frame_timeout == 5.0 and DEFAULTS.quiet_period == 0.5 and DEFAULTS.connect_timeout == 5.0


@pytest.mark.parametrize("name", ["frame_timeout", "quiet_period", "connect_timeout"])
@pytest.mark.parametrize("value", [0, -1, -0.5, math.nan, math.inf, -math.inf, "5", True])
def test_every_duration_must_be_a_finite_positive_number(name, value):
    with pytest.raises(UsageError) as info:
        RunOptions(**{name: value})
    assert info.value.message.startswith(FIELDS[name].metadata["flag"]) and "\n" not in info.value.message


def test_valid_options_and_their_json():
    options = RunOptions(frame_timeout=1, quiet_period=1e-3, workers=0, reports_dir="x")
    assert options.frame_timeout == 1.0 and isinstance(options.frame_timeout, float) and options.in_process
    assert RunOptions.from_json(options.to_json()) == options
    assert workers_arg("auto") >= 1 and workers_arg("3") == 3
    with pytest.raises(UsageError, match="-n"):
        RunOptions(workers=65)


def test_the_reports_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AMQP_CONFORMANCE_REPORTS", str(tmp_path))
    assert default_reports_dir() == tmp_path and RunOptions().reports_dir == tmp_path
    from conformance.explore import reproducers_dir
    assert reproducers_dir() == tmp_path / "reproducers"
    assert reproducers_dir(tmp_path / "elsewhere") == tmp_path / "elsewhere" / "reproducers"
