"""The compliance report: the model it is drawn from (`model`), the first screen (`html`), its side pages
(`pages`: findings, cases, transcripts, loaded on demand), writing both to disk (`files`) and the CI summary
(`markdown`). Rendering only; the model itself is built by the history job."""

from .files import json_model, write_report
from .html import render_html
from .markdown import render_markdown
from .model import validate_model

__all__ = ["render_html", "render_markdown", "write_report", "json_model", "validate_model"]
