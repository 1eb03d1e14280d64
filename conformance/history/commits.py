"""Bisecting a broker's commits: from "the verdict changes between releases A and B" to the commit that changed
it, in the user's clone, each commit built by its recipe (conformance.brokers.source) and the case run on it.

The commits between A's and B's tags are searched the way `git bisect --first-parent` does: first the line of
B's first parents (a merge stands for the branch it brought in), then, when the first commit with B's verdict
is a merge, the branch it merged (its first parents from the merge base), down to a single commit. A's tag has
A's verdict (the release bisect ran it); B's tag is built too when the build goes on top of a release (it
checks that the build reproduces B's verdict; when it does not, the change lies outside what the recipe
rebuilds, and the search says so instead of guessing). The search itself is `bisect.first_change` (one change
point; a commit that does not build, does not start, or cannot be judged is stepped around like
`git bisect skip`). Each commit's verdict comes from the history when it has one (its runs are labelled
`<recipe>-<git describe>`), else from a run of the case on its build through the run pipeline, which writes an
ordinary run directory the next `report` ingests.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..results import is_untestable
from ..verdict import Verdict
from ..run.builds import Build, run_case_on
from .bisect import first_change


@dataclass
class Point:
    """What the search learnt about one commit."""

    commit: str
    label: str = ""
    verdict: str = ""
    source: str = ""              # release / history / run / build (did not build) / start (did not start)
    reason: str = ""
    findings: list = field(default_factory=list)
    run_id: str | None = None
    build: str = ""               # what the build did ("javac 1,402 sources ...", "from the cache")
    build_s: float | None = None
    run_s: float | None = None


@dataclass
class Line:
    """One list of commits the search went over (oldest first; index 0 is known to have the old verdict)."""

    what: str
    commits: list[str]
    probed: dict[int, Point] = field(default_factory=dict)


@dataclass
class CommitAnswer:
    lines: list[Line] = field(default_factory=list)
    commit: object | None = None          # CommitInfo of the first commit with the new verdict
    before: Point | None = None           # the last commit seen with the old verdict
    after: Point | None = None            # the answer's own point
    untested_between: list[str] = field(default_factory=list)   # commits between them that could not be tested
    release: str | None = None            # the first release tag that contains the answer
    total: int = 0                        # commits between the two tags
    note: str = ""
    seconds: float = 0.0

    @property
    def points(self) -> list[Point]:
        return [p for line in self.lines for p in line.probed.values()]


MAX_SKIPS = 15      # commits that could not be tested before the search gives up: the recipe does not fit the range


class TooManySkips(Exception):
    pass


class CommitBisect:
    """One commit search. `known` maps labels to what the history says about the case on them;
    `old` and `new` are the release points (A, B) with their verdicts."""

    def __init__(self, *, case, recipe, clone, builder, old: Point, new: Point, known: dict, options,
                 say: Callable[[str], None], new_is_build: bool):
        self.case, self.recipe, self.clone, self.builder = case, recipe, clone, builder
        self.old, self.new, self.known, self.options, self.say = old, new, known, options, say
        self.new_is_build = new_is_build      # B's tag is B's release build itself (commands recipes)
        self.skipped = 0
        self.seen: dict[str, Point] = {old.commit: old}
        if new_is_build:
            self.seen[new.commit] = new
        self.count = 0

    # -- one commit -------------------------------------------------------------------------------------------

    def point(self, commit: str) -> Point:
        if commit in self.seen:
            return self.seen[commit]
        if self.skipped >= MAX_SKIPS:
            raise TooManySkips()
        p = self._point(commit)
        if p.source in ("build", "start"):
            self.skipped += 1
        return p

    def _point(self, commit: str) -> Point:
        from ..brokers.source import startable
        self.count += 1
        info = self.clone.info(commit)
        label = f"{self.recipe.name}-{self.clone.describe(commit, self.recipe.tag_glob)}"
        p = Point(commit, label)
        head = f"[commit {self.count}] {commit[:10]} {info.subject[:60]}"
        remembered = self.known.get(label)
        if remembered and not is_untestable(remembered["verdict"]):
            p.verdict, p.source, p.reason = remembered["verdict"], "history", remembered["reason"]
            p.findings, p.run_id = remembered.get("findings") or [], remembered.get("run_id")
            self.say(f"{head}: {p.verdict} (from the history, {label})")
            self.seen[commit] = p
            return p
        t0 = time.monotonic()
        built = self.builder.build(commit)
        p.build_s = built.seconds
        p.build = "from the cache" if built.cached else (built.summary or "built")
        if not built.ok:
            p.verdict, p.source, p.reason = Verdict.ERROR.value, "build", f"does not build: {built.error}"
            self.say(f"{head}: skip - {p.reason[:160]}")
            self.seen[commit] = p
            return p
        if not built.cached:
            self.say(f"{head}: built in {built.seconds:.1f} s")
        build = Build(label=label, **startable(self.recipe, self.builder, built, label))
        t1 = time.monotonic()
        record = run_case_on(build, self.case, self.options.reports_dir, self.options,
                             meta={"kind": "bisect", "commit": commit, "recipe": self.recipe.name,
                                   "repository": str(self.clone.path)})
        p.run_s = round(time.monotonic() - t1, 1)
        p.verdict, p.reason, p.findings, p.run_id = (record["verdict"], record["reason"],
                                                    record.get("findings") or [], record["run_id"])
        if record["run_id"] is None:
            p.source, p.reason = "start", "does not start: " + record["reason"].removeprefix(
                "the build could not be tested: ")
            self.say(f"{head}: skip - {p.reason[:160]}")
        else:
            p.source = "run"
            self.say(f"{head}: {p.verdict} - {p.reason[:100]} ({time.monotonic() - t0:.0f} s)")
        self.seen[commit] = p
        return p

    # -- the search -------------------------------------------------------------------------------------------

    def search(self, line: Line) -> int | None:
        """Index of the first commit of `line` whose verdict differs from index 0's (None: none does)."""
        def verdict_of(i: int) -> tuple[str, str]:
            p = self.point(line.commits[i])
            line.probed[i] = p
            return p.verdict, p.source
        result = first_change(len(line.commits), verdict_of)
        return result.changed

    def run(self, total: int) -> CommitAnswer:
        t0 = time.monotonic()
        answer = CommitAnswer(total=total)
        line = Line(f"{self.recipe.tag(self._version(self.old))}..{self.recipe.tag(self._version(self.new))}, "
                    "first parents", [self.old.commit] + self.clone.first_parent_line(self.old.commit, self.new.commit))
        answer.lines.append(line)
        self.say(f"{total} commits between the tags, {len(line.commits) - 1} on the first-parent line: searching "
                 f"for the first with {self.new.verdict} (A's tag has {self.old.verdict})")
        newest = self.point(line.commits[-1])      # B's tag first: it anchors the search (and checks the build)
        line.probed[len(line.commits) - 1] = newest
        if newest.source in ("build", "start"):
            answer.note = (f"the build at {self.recipe.tag(self._version(self.new))} could not be tested "
                           f"({newest.reason[:200]}); fix the recipe or the build environment first")
            answer.seconds = time.monotonic() - t0
            return answer
        try:
            changed = self.search(line)
        except TooManySkips:
            last = [p for p in self.seen.values() if p.source in ("build", "start")][-1]
            answer.note = (f"{self.skipped} commits could not be built or started (the last: {last.reason[:160]}); "
                           "the recipe does not fit these commits")
            answer.seconds = time.monotonic() - t0
            return answer
        if changed is None:
            last = line.probed.get(len(line.commits) - 1)
            if last is not None and last.source in ("build", "start"):
                answer.note = (f"the build at {self.recipe.tag(self._version(self.new))} could not be tested "
                               f"({last.reason[:160]}), so the search has no commit with the new verdict")
            elif last is not None and last.verdict == self.old.verdict:
                answer.note = (f"the build at {self.recipe.tag(self._version(self.new))} gives {last.verdict}, "
                               f"unlike release {self.new.label} ({self.new.verdict}): the change is not in what the "
                               f"recipe rebuilds ({self._rebuilds()})")
            else:
                answer.note = "no commit between the tags could be tested"
            answer.seconds = time.monotonic() - t0
            return answer
        while True:
            target = line.commits[changed]
            previous = max(i for i, p in line.probed.items() if i < changed and p.verdict == self.old.verdict)
            info = self.clone.info(target)
            if not (info.is_merge and previous == changed - 1):
                break
            # the merge brought the change in: search the branch it merged, from its first parent on
            branch = self.clone.first_parent_line(info.parents[0], info.parents[1])
            sub = Line(f"the branch merged by {target[:10]}", [info.parents[0]] + branch)
            answer.lines.append(sub)
            self.say(f"{target[:10]} is a merge; searching the {len(branch)} commit(s) of the branch it merged")
            try:
                found = self.search(sub)
            except TooManySkips:
                answer.note = (f"{self.skipped} commits could not be built or started in the branch merged by "
                               f"{target[:10]}: the change came with that merge, which commit of it is not known")
                found = None
            if found is None:
                break                          # the branch alone does not change it: the merge itself does
            line, changed = sub, found
        answer.commit = self.clone.info(line.commits[changed])
        answer.after = line.probed[changed]
        answer.before = line.probed[previous] if previous in line.probed else self.seen.get(line.commits[previous])
        answer.untested_between = [line.commits[i] for i in range(previous + 1, changed)]
        tags = [t for t in self.clone.tags_containing(answer.commit.hash, self.recipe.tag_glob)
                if self.recipe.tag_regex.match(t)]
        answer.release = min(tags, key=_version_key) if tags else None
        answer.seconds = time.monotonic() - t0
        return answer

    def _version(self, p: Point) -> str:
        return self.recipe.version_of(p.label) or p.label

    def _rebuilds(self) -> str:
        build = self.recipe.build
        return "modules " + ", ".join(build.modules) if hasattr(build, "modules") else "its commands"


def _version_key(tag: str) -> tuple:
    import re
    return tuple(int(x) for x in re.findall(r"\d+", tag))


def deciding(p: Point, most: int = 3) -> list[str]:
    """The findings that decided a point's verdict, one line each (requirement, level, expected, actual): the
    deciding one first, then the others of the same verdict (a broken MUST and what the model saw beside it)."""
    if not p.findings:
        return []
    worst = p.findings[0].get("verdict")
    lines = []
    for f in [f for f in p.findings if f.get("verdict") == worst][:most]:
        actual = " ".join(str(f.get("actual") or "").split())
        if len(actual) > 110:
            actual = "..." + actual[-107:]
        lines.append(f"{f.get('requirement')} ({f.get('level')}, {f.get('source', 'case')}): expected "
                     f"{f.get('expected')}; got {actual}")
    return lines


def format_answer(answer: CommitAnswer, case_id: str, kind: str) -> str:
    out = []
    for line in answer.lines:
        out.append(f"\ncommits searched ({line.what}): {len(line.commits) - 1}")
        for i in sorted(line.probed):
            p = line.probed[i]
            state = "skip" if is_untestable(p.verdict) else p.verdict
            how = {"release": "release", "history": "from the history", "run": "run", "build": "not built",
                   "start": "not started"}.get(p.source, p.source)
            timing = ""
            if p.source == "run":
                timing = ("build cached, " if p.build == "from the cache" else f"build {p.build_s:.1f} s, ") + \
                    f"run {p.run_s:.1f} s"
            out.append(f"  {i:>5}. {p.commit[:10]}  {state:<13} {how:<16} {timing:<24} {p.reason[:110]}")
    tested = [p for p in answer.points if p.source in ("run", "history")]
    built = [p for p in answer.points if p.source == "run" and p.build != "from the cache"]
    skipped = [p for p in answer.points if p.source in ("build", "start")]
    summary = (f"{len(tested)} commit(s) tested ({len(built)} built, "
               f"{sum(1 for p in answer.points if p.build == 'from the cache')} builds from the cache, "
               f"{sum(1 for p in tested if p.source == 'history')} from the history), {len(skipped)} skipped; "
               f"{answer.seconds:.0f} s")
    if answer.commit is None:
        out.append(f"no commit found: {answer.note}; {summary}")
        return "\n".join(out)
    c, before, after = answer.commit, answer.before, answer.after
    out.append(f"\nfirst commit with {after.verdict} for {case_id} ({kind}): {c.hash}")
    out.append(f"  subject:       {c.subject}")
    out.append(f"  author date:   {c.author_date} ({c.author})")
    out.append(f"  first release: {answer.release or '(no release tag contains it yet)'}")
    if answer.note:
        out.append(f"  note: {answer.note}")
    if answer.untested_between:
        out.append(f"  note: {len(answer.untested_between)} commit(s) just before it could not be tested "
                   f"({', '.join(x[:10] for x in answer.untested_between[:5])}); the change may be in one of them")
    for name, p in (("before", before), ("after", after)):
        where = f"{p.commit[:10]} ({p.label})"
        out.append(f"  {name + ':':<14} {p.verdict} at {where} - {p.reason}")
        for i, finding in enumerate(deciding(p)):
            out.append(f"  {'':<14} {'deciding finding:' if i == 0 else 'and:':<17} {finding}")
    out.append(summary)
    return "\n".join(out)


def answer_json(answer: CommitAnswer) -> dict:
    """The commit answer as the bisect record keeps it."""
    def point(p: Point | None):
        if p is None:
            return None
        return {"commit": p.commit, "label": p.label, "verdict": p.verdict, "source": p.source, "reason": p.reason,
                "run_id": p.run_id, "deciding": (p.findings or [None])[0]}
    c = answer.commit
    return {"hash": c.hash if c else None, "subject": c.subject if c else None,
            "date": c.author_date if c else None, "author": c.author if c else None, "tag": answer.release,
            "before": point(answer.before), "after": point(answer.after), "note": answer.note,
            "untested_between": answer.untested_between, "seconds": round(answer.seconds, 1),
            "steps": [{"line": line.what, "index": i, **point(p)} for line in answer.lines
                      for i, p in sorted(line.probed.items())]}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str))
