"""``python -m memprm inspect RUN``: a run's audit trail as one self-contained HTML page.

``fit``'s test stage writes ``test_audit.jsonl`` (:mod:`memprm.inspect.trail`); this package reads it with the
run's other result files (:mod:`memprm.inspect.load`), turns them into typed views (:mod:`memprm.inspect.model`)
and renders those (:mod:`memprm.inspect.html`)::

    path = write_page("runs/ours-seed0")            # runs/ours-seed0/inspect.html
    html = build_page("runs/ours-seed0", dialogue="syn-006")

Reading never builds or runs a model.
"""

from __future__ import annotations

from pathlib import Path

from memprm.inspect.html import render_page
from memprm.inspect.load import InspectError, load_run
from memprm.inspect.model import build_model

#: the page's file name in the run folder when no ``--out`` is given.
PAGE = "inspect.html"


def build_page(run_dir: str | Path, dialogue: str | None = None) -> str:
    """The HTML page of ``run_dir`` (``dialogue``: detail only that test dialogue)."""
    return render_page(build_model(load_run(run_dir), dialogue))


def write_page(run_dir: str | Path, out: str | Path | None = None, dialogue: str | None = None) -> Path:
    """Write the page to ``out`` (default ``<run_dir>/inspect.html``) and return its path."""
    text = build_page(run_dir, dialogue)
    path = Path(out) if out is not None else Path(run_dir) / PAGE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


__all__ = ["PAGE", "InspectError", "build_page", "write_page"]
