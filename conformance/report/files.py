"""Writing the HTML report to disk: report.html and its side files in report.files/ beside it.

The side files are written into a staging folder first and swapped in with renames, then report.html is
replaced in one step, so an open page never mixes two reports' files for long and a report killed half-way
leaves the previous one whole (a page that asks for a side file that is not there says so: static/report.js).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .html import SIDE_DIR, Names, render_page
from .model import validate_model
from .pages import side_files


def _write_text(path: Path, text: str) -> None:
    """Replace `path` in one step (a temporary file beside it, then a rename); readable by all, as a page is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_report(model: dict, out: Path) -> dict:
    """Write `out/report.html` and `out/report.files/`; return what was written: {"html_bytes", "side_files",
    "side_bytes"}. A malformed model raises ValueError before anything is written."""
    validate_model(model)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = Names(model)
    page = render_page(model, names)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=f".{SIDE_DIR}.new-"))
    os.chmod(staging, 0o755)
    count = size = 0
    try:
        for relative, text in side_files(model, names):
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            data = text.encode("utf-8")
            path.write_bytes(data)
            count, size = count + 1, size + len(data)
        final = out / SIDE_DIR
        trash = out / f".{SIDE_DIR}.old-{os.getpid()}"
        if final.exists():
            os.replace(final, trash)
        os.replace(staging, final)
        shutil.rmtree(trash, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _write_text(out / "report.html", page)
    return {"html_bytes": len(page.encode("utf-8")), "side_files": count, "side_bytes": size}


def json_model(model: dict) -> dict:
    """The model as report.json holds it: the transcripts left out (`ladder` null, `has_ladder` true where there
    was one: they are in report.files/ladder/ and in the run directories), everything else as it is."""
    cells = [dict(c, ladder=None, has_ladder=True) if c.get("ladder") else c for c in model["cells"]]
    return {**model, "cells": cells}
