"""The repository stands alone: no file in it names a path outside the checkout (a sibling or parent project
folder, someone's home directory). What the tests and the package read is in the tree (the spec text and XML
in spec/); system paths (/usr/share, /etc/hosts, /proc, /var/tmp) and the user cache (~/.cache) are fine."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Absolute folders that hold other projects or people's files, never the checkout's own: written split so this
# file does not name them itself.
OUTSIDE = re.compile("(?<![\\w.~-])/(?:" + "|".join(["wo" + "rk", "ho" + "me/[a-z_][\\w.-]*", "ro" + "ot",
                                                     "Us" + "ers/[\\w.-]+", "mn" + "t", "sh" + "ared"])
                     + ")(?=/|\\b)")
# A relative path that climbs: it must lead, from the file's own folder, to something in the checkout.
CLIMBS = re.compile(r"(?<![\w.])((?:\.\./)+)(\w[\w.-]*)")


def _tracked():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
        return [ROOT / name for name in out.stdout.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):          # not a git checkout (an unpacked sdist)
        skip = {".git", ".venv", "__pycache__", "build", "reports", ".hypothesis", "mutants"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def offences(path, text):
    """The outside paths `text` (the content of `path`, a file of the checkout) names, as 'file:line: match'."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in OUTSIDE.finditer(line):
            found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
        for match in CLIMBS.finditer(line):
            target = (path.parent / match.group(1) / match.group(2)).resolve()
            if ROOT not in target.parents or not target.exists():
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
    return found


def test_no_file_names_a_path_outside_the_repository():
    found = []
    for path in _tracked():
        if not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue                                           # binary fixtures
        found += offences(path, text)
    assert not found, "paths outside the repository (keep what is read in the tree, see spec/README.md):\n" + \
        "\n".join(found)


def test_the_check_catches_outside_paths_and_spares_system_ones():
    here = ROOT / "tests" / "x.py"
    bad = ["SPEC = '/" + "work/shared/spec/xml'", "see ../" + "shared/spec/core-flow-control.md",
           "open('/" + "home/alice/amqp/notes.txt')", "cd /" + "root/src", "../../" + "sibling/file"]
    for line in bad:
        assert offences(here, line), line
    good = ["/usr/share/proton/examples/broker.py", "/etc/hosts", "/proc/self/status", "/var/tmp/rabbitmq-4.0",
            "~/.cache/amqp-conformance/nodes", "../conformance/verdict.py", "cd \"$(dirname \"$0\")/..\"",
            "docs/architecture.md", "a/work/b", "/opt/mybroker-1.4/bin/broker"]
    for line in good:
        assert not offences(here, line), line
