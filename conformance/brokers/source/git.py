"""The user's clone of a broker, read only: commits, tags, subjects and dates, diffs between two commits, and a
private checkout of any commit that leaves the clone as it was.

`Clone` asks git (the `git` command) about the repository and never writes to it: no checkout, no index, no
ref, no worktree entry. `Checkout` keeps a work tree of the clone's commits in the cache with an index file of
its own (`GIT_INDEX_FILE`): moving it to another commit rewrites only the files that differ, so their
modification times tell an incremental build (make, CMake) what changed. A git failure is a one-line
`UsageError` naming the repository and what to do.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError


class GitFailed(UsageError):
    """git refused a question about the clone (an unknown revision, a damaged repository)."""


@dataclass(frozen=True)
class CommitInfo:
    hash: str
    subject: str
    author: str
    author_date: str          # ISO 8601 with the author's offset, as git prints it (%ai)
    parents: tuple[str, ...]

    @property
    def short(self) -> str:
        return self.hash[:10]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


def _env(extra: dict | None = None) -> dict:
    """git's environment: no prompt, no pager, no user config that changes output (the clone's own config stays)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    env.update(extra or {})
    return env


class Clone:
    """A git repository (a work tree or a bare one) the bisect reads commits and files from."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise UsageError(f"--repo {self.path}: no such directory; give the path of your clone of the broker "
                             "(git clone <its repository>)")
        try:
            out = subprocess.run(["git", "-C", str(self.path), "rev-parse", "--absolute-git-dir"],
                                 capture_output=True, text=True, timeout=30, env=_env())
        except FileNotFoundError:
            raise UsageError("git is not installed; apt-get install git") from None
        if out.returncode != 0:
            raise UsageError(f"--repo {self.path} is not a git repository; give the path of your clone of the broker")
        self.git_dir = Path(out.stdout.strip())

    def git(self, *args: str, env: dict | None = None, timeout: float = 120, check: bool = True) -> str:
        proc = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, text=True,
                              timeout=timeout, env=_env(env))
        if check and proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise GitFailed(f"git {' '.join(args[:3])} in {self.path} failed: {last}")
        return proc.stdout

    # -- commits ----------------------------------------------------------------------------------------------

    def commit_of(self, rev: str) -> str | None:
        """The full hash of `rev` (a tag, a branch, a hash), or None when the clone has no such commit."""
        out = subprocess.run(["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "--quiet",
                              f"{rev}^{{commit}}"], capture_output=True, text=True, timeout=30, env=_env())
        return out.stdout.strip() or None

    def first_parent_line(self, old: str, new: str) -> list[str]:
        """The commits from `old` (excluded) to `new` (included) along `new`'s first parents, oldest first: the
        line a merge-based history was made on (each merge stands for the branch it brought in)."""
        return self.git("rev-list", "--first-parent", "--reverse", f"{old}..{new}").split()

    def count(self, old: str, new: str) -> int:
        return int(self.git("rev-list", "--count", f"{old}..{new}").strip() or 0)

    def info(self, commit: str) -> CommitInfo:
        out = self.git("show", "-s", "--format=%H%x00%s%x00%an%x00%ai%x00%P", commit)
        h, subject, author, date, parents = out.rstrip("\n").split("\x00")
        return CommitInfo(h, subject, author, date, tuple(parents.split()))

    def describe(self, commit: str, match: str) -> str:
        """`git describe --tags --long` against the release tags (`match`, a glob): TAG-N-gHASH; the hash alone
        (10 digits) when no release tag is an ancestor."""
        out = subprocess.run(["git", f"--git-dir={self.git_dir}", "describe", "--tags", "--long", "--abbrev=10",
                              "--match", match, commit], capture_output=True, text=True, timeout=60, env=_env())
        return out.stdout.strip() or commit[:10]

    def tags_containing(self, commit: str, match: str) -> list[str]:
        return self.git("tag", "--contains", commit, "--list", match).split()

    # -- trees and files ----------------------------------------------------------------------------------------

    def changed_paths(self, old: str, new: str, paths: list[str], filter_: str | None = None) -> list[str]:
        """Files that differ between two commits under `paths` (repository-relative, `/` separated)."""
        if not paths:
            return []
        args = ["diff", "--name-only", "--no-renames"] + ([f"--diff-filter={filter_}"] if filter_ else [])
        return [line for line in self.git(*args, old, new, "--", *paths).splitlines() if line]

    def show(self, commit: str, path: str) -> bytes | None:
        """A file's bytes at a commit, or None when it has no such file."""
        proc = subprocess.run(["git", f"--git-dir={self.git_dir}", "show", f"{commit}:{path}"], capture_output=True,
                              timeout=60, env=_env())
        return proc.stdout if proc.returncode == 0 else None

    def tree_id(self, commit: str, path: str) -> str | None:
        out = subprocess.run(["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "--quiet",
                              f"{commit}:{path}"], capture_output=True, text=True, timeout=30, env=_env())
        return out.stdout.strip() or None


class Checkout:
    """A work tree of the clone's commits at `root/src` with its own index (`root/index`); or, with `export`,
    only some directories of a commit, written afresh (what a build reads, even from a clone whose other files
    are missing, like a partial clone's)."""

    def __init__(self, clone: Clone, root: Path):
        self.clone = clone
        self.root = root
        self.src = root / "src"
        self.commit: str | None = None

    def at(self, commit: str) -> Path:
        """Make the work tree hold `commit` (only the files that differ from the last one are written)."""
        self.src.mkdir(parents=True, exist_ok=True)
        self.clone.git(f"--work-tree={self.src}", "read-tree", "--reset", "-u", commit,
                       env={"GIT_INDEX_FILE": str(self.root / "index")}, timeout=600)
        self.commit = commit
        return self.src

    def export(self, commit: str, paths: list[str]) -> Path:
        """`root/export` holding only `paths` (directories or files) as they are at `commit`."""
        out = self.root / "export"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        present = [p for p in paths if self.clone.tree_id(commit, p)]
        if present:
            archive = subprocess.run(["git", f"--git-dir={self.clone.git_dir}", "archive", "--format=tar", commit,
                                      "--", *present], capture_output=True, timeout=600, env=_env())
            if archive.returncode != 0:
                last = (archive.stderr.decode(errors="replace").strip().splitlines() or ["git archive failed"])[-1]
                raise GitFailed(f"git archive {commit[:10]} in {self.clone.path} failed: {last}")
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                tar.extractall(out, filter="data")
        self.commit = commit
        return out


TAG_VERSION = r"(\d+(?:\.\d+)*)"


def tag_pattern(template: str) -> tuple[str, re.Pattern]:
    """A release tag template (`activemq-{version}`) as a glob for git (`activemq-[0-9]*`) and as a regex whose
    group 1 is the version."""
    if template.count("{version}") != 1:
        raise ValueError("a tag template names {version} exactly once")
    head, tail = template.split("{version}")
    return f"{head}[0-9]*{tail}", re.compile(re.escape(head) + TAG_VERSION + re.escape(tail) + "$")
