"""A real disk alarm for a managed Java broker: its message store lives on a small tmpfs of its own, and
`raise` fills that file system with one file until the broker's usage threshold is crossed (`clear` removes
the file). `status` prints "disk" while the broker's log says it blocked producers for lack of space.

The brokers' own disk checks then do what they do in production (Broker-J's file-system space checker,
Artemis' max-disk-usage); nothing in the broker is told about the test. Run as
`python diskfill.py raise|clear|status DIR [LOG FULL_PATTERN CLEAR_PATTERN]`; with a log,
`raise` and `clear` return once the broker's log says it noticed (bounded).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

FILLER = ".amqp-conformance-filler"
WAIT_SECONDS = 20


def mount_tmpfs(path: Path, size_mb: int) -> bool:
    """Mount a tmpfs of `size_mb` at `path` (root only); False when it cannot be mounted."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(path)],
                          capture_output=True, timeout=30)
    return proc.returncode == 0


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def fill(path: Path, leave_bytes: int = 256 * 1024) -> None:
    stat = os.statvfs(path)
    free = stat.f_bavail * stat.f_frsize
    size = max(free - leave_bytes, 0)
    with open(path / FILLER, "ab") as f:
        os.posix_fallocate(f.fileno(), 0, size + (path / FILLER).stat().st_size)


def clear(path: Path) -> None:
    (path / FILLER).unlink(missing_ok=True)


def status(log: Path, full: str, cleared: str) -> str:
    """'disk' when the last of the broker's full/not-full log lines is a full one."""
    state = ""
    text = log.read_text(errors="replace") if log.exists() else ""
    for line in text.splitlines():
        if re.search(cleared, line):
            state = ""
        elif re.search(full, line):
            state = "disk"
    return state


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("raise", "clear", "status"):
        print("usage: diskfill.py raise|clear|status DIR [LOG FULL CLEARED]",
              file=sys.stderr)
        return 2
    action, path = argv[0], Path(argv[1])
    watch = (Path(argv[2]), argv[3], argv[4]) if len(argv) >= 5 else None
    if action == "status":
        print(status(*watch) or "no alarm")
        return 0
    fill(path) if action == "raise" else clear(path)
    if watch is None:
        return 0
    deadline = time.monotonic() + WAIT_SECONDS            # until the broker's log says it noticed
    while (status(*watch) == "disk") != (action == "raise"):
        if time.monotonic() > deadline:
            print(f"the broker did not report the disk {'full' if action == 'raise' else 'free again'} within "
                  f"{WAIT_SECONDS} s (its log: {watch[0]})", file=sys.stderr)
            return 1
        time.sleep(0.05)  # bounded-wait-ok: the broker checks its disk periodically
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
