"""Every command is registered by a plain import: a module that does not import makes the command line fail
loudly (it no longer removes its command in silence)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance import cli

PACKAGE = Path(cli.__file__).resolve().parent
COMMANDS = {"list", "run", "replay", "report", "diff", "bisect", "bisect-run", "brokers", "selfcheck", "clients",
            "check", "observe"}


def subcommands(parser) -> set[str]:
    import argparse
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def test_every_command_is_registered():
    assert subcommands(cli.build_parser()) == COMMANDS


def test_every_cli_module_of_the_package_registers_its_commands():
    modules = {p.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
               for p in PACKAGE.glob("*/cli.py")}
    assert modules == {m.__name__.removeprefix("conformance.") for m in cli.COMMANDS}


@pytest.mark.parametrize("module", sorted(f"conformance.{p.parent.name}.cli" for p in PACKAGE.glob("*/cli.py")))
def test_a_command_module_that_does_not_import_fails_loudly(module):
    code = f"import sys; sys.modules[{module!r}] = None\nfrom conformance.cli import main\nsys.exit(main(['--help']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Error: import of " in proc.stderr, proc.stdout[-500:] + proc.stderr[-500:]
