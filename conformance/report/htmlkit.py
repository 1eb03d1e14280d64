"""The HTML building blocks the report's first screen (conformance.report.html) and its side pages
(conformance.report.pages) share: escaping, verdict and level badges, the slugs and labels of a model
(`Names`, `Anchors`), and the page's style and script as shipped in static/. Pure formatting, no I/O beyond
reading the package's own static files.
"""

from __future__ import annotations

import html
import re
from importlib.resources import files
from typing import Iterable

from ..verdict import HTML_COLOUR, MEANING, VERDICTS, Verdict
from .findings import deciding, finding_groups
from .labels import Slugs, column_label, series_label

_STATIC = files("conformance.report") / "static"
SIDE_DIR = "report.files"

# Verdict -> (background, text colour, label). "not-run" is the blank cell.
VERDICT_STYLE = {**{name: (*HTML_COLOUR[name], name) for name in VERDICTS}, "not-run": ("#f4f5f7", "#57606a", "")}
VERDICT_MEANING = {**{v.value: MEANING[v] for v in Verdict}, "not-run": "not judged on this release"}


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def spec_text(text: str) -> str:
    """Escape a requirement sentence, then let its `<sub>...</sub>` subscripts through as markup."""
    return re.sub(r"&lt;sub&gt;([^&<>]*)&lt;/sub&gt;", r"<sub>\1</sub>", esc(text))


def section_sort_key(section: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in section.split("."))


def percent(score: float) -> str:
    return f"{score * 100:.1f}%".replace(".0%", "%")


class Anchors(Slugs):
    """Keys of the side pages: a case "2.6.7/3" -> "case/2.6.7-3" (its file report.files/case/2.6.7-3.js)."""

    def __init__(self, keys: Iterable[str], kind: str = "case"):
        super().__init__(keys)
        self.kind = kind
        self.ids = self.of

    def page(self, key: str, at: str | None = None) -> str:
        return f"{self.kind}/{self[key]}" + (f":{at}" if at else "")

    def link(self, key: str, text: str | None = None, css: str = "", at: str | None = None) -> str:
        cls = f' class="{css}"' if css else ""
        return f'<a{cls} href="#{esc(self.page(key, at))}">{esc(key if text is None else text)}</a>'


class Names:
    """The slugs and labels every part of the page and its side files share, made once per model."""

    def __init__(self, model: dict):
        self.model = model
        self.columns = {c["key"]: c for c in model["columns"]}
        self.label = {c["key"]: column_label(c) for c in model["columns"]}
        self.col = Slugs(c["key"] for c in model["columns"])
        self.case = Anchors((c["id"] for c in model["cases"]), "case")
        self.cell = Anchors((r["id"] for r in model["requirements"]), "cell")
        self.groups = finding_groups(model)
        self.group_by_id = {g["id"]: g for g in self.groups}
        # (case, column) -> its finding group's id, for a fail or non-strict cell
        self.group_of = {(g["case_id"], key): g["id"] for g in self.groups for key in g["columns"]}
        self.deciding = deciding(model)
        self.cells = {(c["case_id"], c["column"]): c for c in model["cells"]}
        self.case_of = {c["id"]: c for c in model["cases"]}

    def finding_link(self, group_id: str, text: str, at: str | None = None, css: str = "") -> str:
        cls = f' class="{css}"' if css else ""
        return f'<a{cls} href="#finding/{esc(group_id)}{":" + esc(at) if at else ""}">{esc(text)}</a>'

    def ladder_key(self, case_id: str, column: str) -> str:
        return f"ladder/{self.case[case_id]}/{self.col[column]}"


def verdict_badge(verdict: str, text: str | None = None) -> str:
    label = VERDICT_STYLE.get(verdict, ("", "", verdict))[2] if text is None else text
    meaning = esc(VERDICT_MEANING.get(verdict, ""))
    return f'<span class="badge verdict-{esc(verdict)}" title="{meaning}">{esc(label)}</span>'


def level_badge(level: str) -> str:
    return f'<span class="level level-{esc(level)}">{esc(level)}</span>'


def expectation_badge(cell: dict | None) -> str:
    """The expectation of a cell from `run --expect` (optional key `expectation`), as a small badge."""
    value = (cell or {}).get("expectation")
    if not value:
        return ""
    css = "unexpected" if str(value).startswith("unexpected") else esc(str(value).replace(" ", "-"))
    reason = (cell or {}).get("expectation_reason")
    title = f' title="{esc(reason)}"' if reason else ""
    return f'<span class="expect expect-{css}"{title}>{esc(value)}</span>'


def series_title(columns: list[dict]) -> str:
    """`Artemis`, or `rhea <span>JavaScript</span>` for a client library."""
    first = columns[0]
    language = first.get("language")
    return esc(series_label(first)) + (f' <span class="language">{esc(language)}</span>' if language else "")


def render_css() -> str:
    """The page's style: static/report.css (shipped with the package) and the verdict colours
    (conformance.verdict), inlined into the page and every standalone side page."""
    verdict_rules = "\n".join(
        f".verdict-{name}{{background:{bg};color:{fg}}} .verdict-{name} a{{color:{fg}}}"
        for name, (bg, fg, _) in VERDICT_STYLE.items())
    return "\n" + _STATIC.joinpath("report.css").read_text("utf-8") + verdict_rules


def render_script() -> str:
    return _STATIC.joinpath("report.js").read_text("utf-8")


def counts_html(counts: dict) -> str:
    ordered = sorted(counts.items(), key=lambda kv: VERDICTS.index(kv[0]) if kv[0] in VERDICTS else 99)
    return " ".join(verdict_badge(v, f"{v} ×{n}") for v, n in ordered)
