"""Completion markers and stage keys (pure functions, by hand), the run folder's config file, atomic writes."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memprm.atomic import atomic_write_text, replace_dir
from memprm.config import load_config, to_dict
from memprm.configtools import ConfigError
from memprm.data.source import load_source
from memprm.stages.markers import (
    Markers,
    changed_keys,
    config_hash,
    dialogues_digest,
    select_sections,
    stage_key,
)
from memprm.stages.stage_keys import plan_keys, write_config

TINY = ["data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
        "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8"]  # fmt: skip


def test_config_hash_is_canonical() -> None:
    assert config_hash({"a": 1, "b": [1, 2]}, {"u": "x"}) == config_hash({"b": [1, 2], "a": 1}, {"u": "x"})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert config_hash({"a": 1}, {"u": "x"}) != config_hash({"a": 1}, {"u": "y"})


def test_select_sections_by_hand() -> None:
    cfg = {"grpo": {"lr": 1.0, "checkpoint_every": 4}, "fit": {"stages": ["grpo"], "run_name": "r"},
           "trainer": {"precision": "32", "progress_bar": True},
           "llm": {"reader": {"model": "m", "model_version": "v", "timeout_s": 3, "base_url": "u"},
                   "judge": None, "max_failure_share": 0.2}}  # fmt: skip
    out = select_sections(cfg, ["grpo", "fit.stages", "trainer", "llm"])
    assert out == {"grpo": {"lr": 1.0}, "fit": {"stages": ["grpo"]}, "trainer": {"precision": "32"},
                   "llm": {"reader": {"model": "m", "model_version": "v"}, "judge": None}}  # fmt: skip
    assert cfg["grpo"]["checkpoint_every"] == 4  # the input is not modified


def test_changed_keys_are_dotted() -> None:
    old = {"grpo": {"lr": 1.0, "eps": 0.2}, "seed": 0}
    assert changed_keys(old, {"grpo": {"lr": 2.0, "eps": 0.2}, "seed": 0}) == ["grpo.lr"]
    assert changed_keys(old, {"grpo": {"lr": 1.0}, "seed": 1}) == ["grpo.eps", "seed"]


def test_stage_keys_follow_their_inputs_only() -> None:
    base = load_config(None, TINY)
    splits = load_source(base.data)
    keys = plan_keys(base, splits)

    def changed(*overrides: str) -> set[str]:
        other = plan_keys(load_config(None, [*TINY, *overrides]), splits)
        return {k for k in keys if keys[k].digest != other[k].digest}

    assert changed("trainer.progress_bar=false", "grpo.checkpoint_every=1", "output_dir=elsewhere") == set()
    assert changed("grpo.lr=0.5") == {"grpo", "test"}
    assert changed("sft.lr=0.5") == {"sft", "grpo", "test"}
    assert changed("critic.lr=0.001") == {"critic", "grpo", "test"}  # shaping uses the critic
    assert changed("critic.lr=0.001", "rollout.shaping=none") == {"critic"} | changed("rollout.shaping=none")
    assert "critic" not in changed("rollout.shaping=none")
    assert changed("teacher.kind=heuristic") == set()  # the default: same key
    assert changed("env.context_turns=2") == {"calibration", "teacher:train", "teacher:dev", "critic", "sft",
                                                    "grpo", "test"}  # fmt: skip
    # the rl split reaches GRPO only, through the digest of the dialogues it plays
    assert changed("data.synthetic.n_rl=1") == set()
    with_rl = load_source(load_config(None, [*TINY, "data.synthetic.n_rl=1"]).data)
    on_rl = load_config(None, [*TINY, "data.synthetic.n_rl=1", "rollout_data.split=rl"])
    rl_keys = plan_keys(on_rl, with_rl)
    assert {k for k in keys if keys[k].digest != rl_keys[k].digest} == {"grpo", "test"}
    assert "data:rl" in rl_keys["grpo"].upstream and "data:train" not in rl_keys["grpo"].upstream
    # likewise the select split: only when dev selection plays it, and then GRPO (and test) only
    assert changed("data.synthetic.n_select=1") == set()
    with_sel = load_source(load_config(None, [*TINY, "data.synthetic.n_select=1"]).data)
    on_sel = plan_keys(load_config(None, [*TINY, "data.synthetic.n_select=1", "dev_selection.split=select"]), with_sel)
    assert {k for k in keys if keys[k].digest != on_sel[k].digest} == {"grpo", "test"}
    assert on_sel["grpo"].upstream["data:dev_selection"] == dialogues_digest(with_sel["select"])
    with pytest.raises(ValueError, match=r"no 'select' dialogues \(set data.synthetic.n_select > 0\)"):
        plan_keys(load_config(None, [*TINY, "dev_selection.split=select"]), splits)
    with pytest.raises(ConfigError, match="dev_selection.split must be dev_selection or select"):
        load_config(None, [*TINY, "dev_selection.split=test"])
    # the data itself, not only its settings: other dialogues make every stage stale
    other_data = load_source(load_config(None, [*TINY, "data.synthetic.seed=7"]).data)
    assert all(plan_keys(base, other_data)[k].digest != keys[k].digest for k in keys)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_markers_skip_redo_and_say_why(tmp_path: Path) -> None:
    handler, logger = _Lines(), logging.getLogger("memprm.stages")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        raw = to_dict(load_config(None, TINY))
        key = stage_key(raw, "grpo", {"sft": "abc"})
        m = Markers(tmp_path)
        assert not m.done(key) and handler.lines == []  # never ran: no marker, nothing to say
        m.write(key)
        assert m.done(key) and "skipping" in handler.lines[-1]
        raw["grpo"]["lr"] = 0.5
        assert not m.done(stage_key(raw, "grpo", {"sft": "abc"}))
        assert "(grpo.lr); redoing" in handler.lines[-1]
        assert not m.done(stage_key(raw, "grpo", {"sft": "abd"}))
        assert "grpo.lr, upstream sft" in handler.lines[-1]
        m.clear("grpo")
        assert m.read("grpo") is None
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_write_config_keeps_a_different_earlier_one(tmp_path: Path) -> None:
    assert write_config(tmp_path, "a: 1\n") == 0
    assert write_config(tmp_path, "a: 1\n") is None  # unchanged: not rewritten
    assert write_config(tmp_path, "a: 2\n") == 1
    assert (tmp_path / "config.1.yaml").read_text() == "a: 1\n" and (tmp_path / "config.yaml").read_text() == "a: 2\n"
    assert write_config(tmp_path, "a: 3\n") == 2 and (tmp_path / "config.2.yaml").read_text() == "a: 2\n"


def test_atomic_writes_leave_old_content_on_failure(tmp_path: Path) -> None:
    path = atomic_write_text(tmp_path / "f.txt", "old")
    with pytest.raises(RuntimeError):
        with replace_dir(tmp_path / "d") as tmp:
            (tmp / "x").write_text("partial")
            raise RuntimeError("killed")
    assert not (tmp_path / "d").exists()
    with replace_dir(tmp_path / "d") as tmp:
        (tmp / "x").write_text("whole")
    with pytest.raises(RuntimeError), replace_dir(tmp_path / "d") as tmp:
        raise RuntimeError("killed")
    assert (tmp_path / "d" / "x").read_text() == "whole" and path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f.txt"]  # no temporary left behind
