"""Reading a ``fit`` run folder for the inspection page: files only, no model is built or run.

What is read (``RunFiles``), relative to the run folder:

- ``test_audit.jsonl`` (required; :mod:`memprm.inspect.trail`): the audited test exams of every manager;
- ``config.yaml``, ``test_results.json`` and ``grpo/dev_selection.json`` when present;
- the critic validity report ``critic/validity/report.md``, from this run or, when the run reused stage one
  (``fit.stage_one_dir``), from that folder;
- the ladder's ``ladder.md`` / ``ladder.png`` when ``experiments/run_ladder.py`` wrote them beside the run
  (``<run>/../ladder/``).

A missing or malformed trail raises :class:`InspectError` with a one-line message naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memprm.inspect.trail import FORMAT, TEST_TRAIL, VERSION


class InspectError(ValueError):
    """A run folder the page cannot be built from; the message names the file."""


@dataclass(frozen=True)
class RunFiles:
    run_dir: Path
    meta: dict[str, Any]
    lines: tuple[dict[str, Any], ...]  # the trail's dialogue lines, in file order
    config_text: str = ""
    test_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    validity_md: str = ""
    validity_source: str = ""
    dev_selection: dict[str, Any] | None = None
    ladder_md: str = ""
    ladder_png: bytes | None = None


def read_trail(path: Path) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """The meta line and the dialogue lines of a trail file (see :mod:`memprm.inspect.trail`)."""
    if not path.is_file():
        raise InspectError(
            f"{path}: no audit trail in this run folder; re-run `python -m memprm fit` with a recent version "
            "(its test stage writes it)"
        )
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                rows.append(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InspectError(f"{path}:{n}: not JSON ({exc.msg})") from exc
    if not rows or rows[0].get("kind") != "meta":
        raise InspectError(f"{path}: the first line is not the trail's meta line")
    meta = rows[0]
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise InspectError(
            f"{path}: format {meta.get('format')!r} version {meta.get('version')!r}, expected {FORMAT!r} "
            f"version {VERSION}; re-run `python -m memprm fit` with this version"
        )
    lines = tuple(r for r in rows[1:] if r.get("kind") == "dialogue")
    for n, line in enumerate(lines, 2):
        missing = [k for k in ("manager", "dialogue", "bank", "steps", "questions") if k not in line]
        if missing:
            raise InspectError(f"{path}: dialogue line {n} lacks {missing}")
    return meta, lines


def load_run(run_dir: str | Path) -> RunFiles:
    """Everything the page shows, read from ``run_dir`` (see the module docstring)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise InspectError(f"{run}: not a run folder (no such directory)")
    meta, lines = read_trail(run / TEST_TRAIL)
    config_text = _text(run / "config.yaml")
    validity_md, validity_source = "", ""
    for folder in (run, _stage_one(config_text, run)):
        if folder is not None and (folder / "critic" / "validity" / "report.md").is_file():
            validity_source = str(folder / "critic" / "validity" / "report.md")
            validity_md = _text(Path(validity_source))
            break
    ladder = run.parent / "ladder"
    png = ladder / "ladder.png"
    return RunFiles(
        run_dir=run,
        meta=meta,
        lines=lines,
        config_text=config_text,
        test_results=_json(run / "test_results.json") or {},
        validity_md=validity_md,
        validity_source=validity_source,
        dev_selection=_json(run / "grpo" / "dev_selection.json"),
        ladder_md=_text(ladder / "ladder.md"),
        ladder_png=png.read_bytes() if png.is_file() else None,
    )


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InspectError(f"{path}: not JSON ({exc.msg})") from exc


def _stage_one(config_text: str, run: Path) -> Path | None:
    """The stage-one folder the run reused (``fit.stage_one_dir``), if any."""
    try:
        cfg = yaml.safe_load(config_text) if config_text else None
    except yaml.YAMLError:
        return None
    folder = ((cfg or {}).get("fit") or {}).get("stage_one_dir") if isinstance(cfg, dict) else None
    if not folder:
        return None
    path = Path(folder)
    return path if path.is_absolute() or path.is_dir() else run.parent / path.name
