"""``python -m memprm inspect``: the audit-trail page of a tiny run, checked with an HTML parser and in
headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it).

The tiny run is made once per module the way ``fit``'s test stage makes it: three managers (the heuristic
teacher, a manager that never writes and one that writes every turn word for word) evaluated on the tiny
synthetic test dialogue with the audit on, their trail written by :class:`TrailRecorder`. φ comes from a
deterministic scorer of the rendered gates (the page shows what the trail holds; a trained critic is
``fit``'s business and is covered by ``tests/test_fit.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zlib
from dataclasses import asdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from memprm.cli import main
from memprm.config import load_config
from memprm.data.source import load_source
from memprm.env.evaluate import evaluate_manager
from memprm.env.gates import Action
from memprm.env.stack import build_stack
from memprm.inspect import PAGE, InspectError, build_page, write_page
from memprm.inspect.html import anchor, short
from memprm.inspect.trail import TEST_TRAIL, TrailRecorder
from memprm.memory.bank import MANAGED_LAYERS

TINY = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8",
    "embedder.kind=hashing", "embedder.dim=128",
]  # fmt: skip


def _phi(texts: list[str]) -> tuple[list[float], list[float]]:
    """A deterministic stand-in score per rendered gate, in [0, 1]."""
    phi = [zlib.crc32(t.encode()) % 1000 / 1000 for t in texts]
    return phi, [1 - v for v in phi]


def _copy_turn(obs) -> Action:
    return Action("write", obs.turn.text, key="") if obs.layer == "event" else Action.noop()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """(run folder, {manager: [DialogueEval]}) of the tiny audited test evaluation."""
    cfg = load_config(None, TINY)
    splits, stack = load_source(cfg.data), build_stack(cfg)
    run = tmp_path_factory.mktemp("run") / "tiny-seed0"
    run.mkdir()
    recorder = TrailRecorder(cfg.credit, _phi)
    managers = {"heuristic teacher": stack.teacher, "never writes": lambda obs: Action.noop(),
                "copies turns": _copy_turn}  # fmt: skip
    evals, results = {}, {}
    for name, manager in managers.items():
        seen = evals.setdefault(name, [])
        observe = recorder.observer(name)

        def both(ev, seen=seen, observe=observe):
            seen.append(ev)
            observe(ev)

        results[name] = evaluate_manager(stack.env, splits["test"], manager, name, progress=False, audit=True,
                                         on_dialogue=both)  # fmt: skip
    recorder.write(run / TEST_TRAIL)
    (run / "test_results.json").write_text(json.dumps({k: asdict(v) for k, v in results.items()}))
    (run / "config.yaml").write_text("seed: 0\narm: ours\n")
    (run / "grpo").mkdir()
    history = [{"step": 0, "accuracy": 0.5, "rollouts": 0}, {"step": 2, "accuracy": 0.55, "rollouts": 4}]
    (run / "grpo" / "dev_selection.json").write_text(json.dumps({"best_step": 2, "history": history}))
    return run, evals


class _Page(HTMLParser):
    """Entry rows and question rows per bank section (``details.bank``), and every external reference."""

    def __init__(self):
        super().__init__()
        self.banks: list[dict] = []
        self.external: list[str] = []
        self._cell: list[str] | None = None
        self._row: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if a.get(k) and not a[k].startswith(("#", "data:")):
                self.external.append(a[k])
        if tag == "details" and "bank" in (a.get("class") or "").split():
            self.banks.append({"manager": a["data-manager"], "entries": [], "questions": []})
        elif tag == "tr" and self.banks:
            classes = (a.get("class") or "").split()
            if "e" in classes:
                self._row = {"id": a["id"], "attrs": a, "cells": {}, "lb": "lb" in classes}
                self.banks[-1]["entries"].append(self._row)
            elif "-q-" in (a.get("id") or ""):
                self._row = {"id": a["id"], "cells": {}, "text": []}
                self.banks[-1]["questions"].append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = self._row["cells"].setdefault(a.get("class") or f"c{len(self._row['cells'])}", [])

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def _text(row: dict, cell: str) -> str:
    return "".join(row["cells"].get(cell, []))


def test_page_lists_every_entry_and_question_and_shows_flips(tiny_run):
    run, evals = tiny_run
    path = write_page(run)
    assert path == run / PAGE
    page = _parse(path.read_text())
    assert not page.external  # self-contained: nothing to fetch
    flat = [(name, ev) for name, evs in evals.items() for ev in evs]
    assert [b["manager"] for b in page.banks] == [name for name, _ in flat]
    flipped = []
    for n, (section, (name, ev)) in enumerate(zip(page.banks, flat, strict=True)):
        managed = {e.id for e in ev.bank if e.layer in MANAGED_LAYERS}
        retrieved = {h.entry.id for r in ev.exam.results for h in r.retrieval.hits}
        verbatim = {e.id for e in ev.bank if e.layer == "verbatim"} & retrieved
        listed = [r["attrs"]["data-layer"] for r in section["entries"]]
        assert sum(layer != "verbatim" for layer in listed) == len(managed), name
        assert listed.count("verbatim") == len(verbatim), name
        assert len(section["questions"]) == len(ev.exam.results) == len(ev.dialogue.questions), name
        rows = {r["id"].rsplit("-", 1)[-1]: r for r in section["entries"]}
        for rec in ev.audit.records:
            row = rows[rec.entry_id]
            assert row["attrs"]["data-nr"] == "0"  # retrieved by construction
            if rec.flips:
                flipped.append((name, rec))
                assert row["lb"] and row["attrs"]["data-lb"] == "1"
                assert short(rec.question_id, ev.dialogue.id) in _text(row, "flip")
                (q,) = [r for r in section["questions"] if r["id"] == anchor("b", n, "q", rec.question_id)]
                assert f"{rec.entry_id}: flipped" in _text(q, "tests")
        never = managed - retrieved
        assert {k for k, r in rows.items() if r["attrs"]["data-nr"] == "1"} == never
    assert flipped, "the tiny run has no load-bearing entry to check"
    assert any(name == "heuristic teacher" for name, _ in flipped)


def test_verbatim_twins_are_marked_and_summary_counts_them(tiny_run):
    run, evals = tiny_run
    html = build_page(run)
    page = _parse(html)
    (copies,) = [b for b in page.banks if b.get("manager") == "copies turns"]
    (never,) = [b for b in page.banks if b.get("manager") == "never writes"]
    events = [r for r in copies["entries"] if r["attrs"]["data-layer"] == "event"]
    assert events and all(r["attrs"]["data-tw"] == "1" for r in events)
    assert all(r["attrs"]["data-layer"] == "verbatim" for r in never["entries"])
    ev = evals["heuristic teacher"][0]
    turns, norm = ev.dialogue.turn_index(), lambda t: " ".join(t.split()).casefold()
    copies_of_turns = {
        e.id for e in ev.bank if e.layer != "verbatim" for v in e.versions
        if {norm(v.content)} & {norm(f(turns[t])) for t in v.source_turn_ids for f in (lambda x: x.text, lambda x: x.render)}
    }  # fmt: skip
    (teacher,) = [b for b in page.banks if b.get("manager") == "heuristic teacher"]
    assert {r["id"].rsplit("-", 1)[-1] for r in teacher["entries"] if r["attrs"]["data-tw"] == "1"} == copies_of_turns
    n_versions = sum(len(e.versions) for e in evals["copies turns"][0].bank if e.layer == "event")
    assert f"{n_versions} of {n_versions} (100%)" in html
    assert "Dev-selection accuracy" in html and "<svg" in html and "seed: 0" in html


def test_dialogue_option_cli_and_errors(tiny_run, tmp_path, capsys):
    run, evals = tiny_run
    d = evals["heuristic teacher"][0].dialogue.id
    out = tmp_path / "one.html"
    assert main(["inspect", str(run), "--dialogue", d, "--out", str(out)]) == 0
    assert out.is_file() and "wrote" in capsys.readouterr().out
    assert len(_parse(out.read_text()).banks) == len(evals)
    assert main(["inspect", str(run), "--dialogue", "no-such"]) == 2
    assert "no dialogue 'no-such'" in capsys.readouterr().err
    empty = tmp_path / "old-run"
    empty.mkdir()
    assert main(["inspect", str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and TEST_TRAIL in err and "re-run" in err
    bad = tmp_path / "bad-run"
    bad.mkdir()
    (bad / TEST_TRAIL).write_text('{"kind": "meta", "format": "memprm.audit_trail", "version": 0}\n')
    with pytest.raises(InspectError, match="version 0"):
        build_page(bad)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]  # fmt: skip


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"  # a fresh user-data-dir per run
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line and ("rror" in line or "Uncaught" in line)]


@pytest.mark.timeout(300)
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (.ci/run installs it)")
def test_page_renders_in_headless_chromium(tiny_run, tmp_path):
    from PIL import Image

    run, _ = tiny_run
    page = write_page(run, tmp_path / "page.html")
    url = page.resolve().as_uri()
    shot = tmp_path / "shot.png"
    proc = _chromium(tmp_path, "--window-size=1400,1000", f"--screenshot={shot}", url)
    img = Image.open(shot).convert("L")
    lo, hi = img.getextrema()
    assert img.size == (1400, 1000) and hi - lo > 100 and len(img.getcolors(256)) > 8  # not blank
    errors = _console_errors(proc.stderr)

    def shown(fragment: str) -> tuple[int, int]:
        proc = _chromium(tmp_path, "--dump-dom", url + fragment)
        errors.extend(_console_errors(proc.stderr))
        dom = _parse(proc.stdout)
        rows = [r for b in dom.banks for r in b["entries"]]
        visible = [r for r in rows if "display: none" not in (r["attrs"].get("style") or "")]
        assert f'data-shown="{len(visible)}"' in proc.stdout
        return len(visible), len(rows)

    every, total = shown("")
    load_bearing, _ = shown("#f:lb=1")
    profile_only, _ = shown("#f:layer=profile&sort=credit")
    assert every == total > load_bearing >= 1 and 0 < profile_only < total
    assert not errors, errors

    # the console check sees errors: the same page with a broken script reports one
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace("load();apply(false)", "load();apply(false);undefinedFn()"))
    proc = _chromium(tmp_path, "--dump-dom", broken.resolve().as_uri())
    assert _console_errors(proc.stderr)
