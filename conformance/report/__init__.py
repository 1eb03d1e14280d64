"""The compliance report: the model it is drawn from (`model`), the HTML page (`html`) and the CI summary
(`markdown`). Rendering only; the model itself is built by the history job."""

from .html import render_html
from .markdown import render_markdown
from .model import validate_model

__all__ = ["render_html", "render_markdown", "validate_model"]
