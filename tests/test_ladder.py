"""experiments/run_ladder.py: reading dev-selection histories, plateaus, and the ladder table."""

import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from memprm.callbacks.callback_config import DevSelectionConfig
from memprm.callbacks.dev_selection import DevCheckpointSelection
from memprm.data.records import Dialogue

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("run_ladder", ROOT / "experiments" / "run_ladder.py")
ladder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ladder)


def test_dev_curve_reads_what_dev_selection_writes(tmp_path):
    sel = DevCheckpointSelection(lambda p: 0.0, DevSelectionConfig(), tmp_path / "run" / "grpo",
                                 [Dialogue("dev-1", ("A", "B"), ())], test_dialogue_ids=())  # fmt: skip
    sel.history = [(0, 0.40), (6, 0.50), (12, 0.48)]
    sel.rollouts = [0, 40, 90]  # as played: skipped groups took rollouts but no step
    sel._write_history(SimpleNamespace(is_global_zero=True))
    assert ladder.dev_curve(tmp_path / "run", rollouts_per_step=2.0) == [(0, 0.40), (40, 0.50), (90, 0.48)]
    sel.rollouts = [None] * 3  # no rollout datamodule (or a run older than the field): steps × per step
    sel._write_history(SimpleNamespace(is_global_zero=True))
    assert ladder.dev_curve(tmp_path / "run", rollouts_per_step=2.0) == [(0, 0.40), (12, 0.50), (24, 0.48)]
    assert ladder.dev_curve(tmp_path / "no-grpo", 2.0) == []
    bad = tmp_path / "bad" / "grpo"
    bad.mkdir(parents=True)
    (bad / "dev_selection.json").write_text('{"history": [{"step": 1}]}')
    with pytest.raises(ValueError, match="dev_selection.json"):
        ladder.dev_curve(tmp_path / "bad", 1.0)


def test_plateau_and_rollouts_per_step():
    # best 0.50; 95% of it is 0.475: first reached at 20 rollouts (ties with later points don't matter)
    assert ladder.plateau([(0, 0.30), (10, 0.47), (20, 0.48), (30, 0.50)]) == 20
    assert ladder.plateau([]) is None
    assert ladder.plateau([(0, 0.0), (5, 0.0)]) == 0  # a flat zero curve plateaus at once
    cfg = SimpleNamespace(grpo=SimpleNamespace(minibatch_size=0, ppo_epochs=2),
                          rollout=SimpleNamespace(group_size=4), rollout_data=SimpleNamespace(groups_per_batch=3))  # fmt: skip
    assert ladder.rollouts_per_step(cfg) == 6.0
    cfg.grpo.minibatch_size = 8
    with pytest.raises(ValueError, match="minibatch_size"):
        ladder.rollouts_per_step(cfg)


def test_table_rows_references_and_sign_test():
    def run(acc, per):
        return {"accuracy": acc, "per_dialogue": per, "tokens": 100.0, "entries": 5.0}

    results = {
        "base": {
            0: run(0.4, {"t1": 0.4, "t2": 0.5, "t3": 0.3}),
            1: run(0.5, {"t1": 0.4, "t2": 0.5, "t3": 0.3}),
        },
        "ours": {
            0: run(0.6, {"t1": 0.6, "t2": 0.7, "t3": 0.5}),
            1: run(0.7, {"t1": 0.6, "t2": 0.7, "t3": 0.5}),
        },
        "SFT": {0: run(0.45, {}), 1: run(0.45, {})},
    }
    curves = {"base": [[(0, 0.4), (8, 0.5)]], "ours": [[(0, 0.4), (8, 0.6)]]}
    md = ladder.table(["base", "ours"], results, curves, ["SFT"])
    sd = 100 * math.sqrt(0.005)  # stdev of 40 and 50 (%)
    assert f"| base | 45.0 ± {sd:.1f} | 2 | 100 | 5.0 | 8 |" in md
    assert f"| ours | 65.0 ± {sd:.1f} | 2 | 100 | 5.0 | 8 |" in md
    assert "| SFT (reference) | 45.0 ± 0.0 | 2 | 100 | 5.0 | n/a |" in md
    assert "| t2 | 50.0 | 70.0 |" in md
    # ours beats base on all 3 dialogues: one-sided p = 1/8
    assert "ours vs base: wins 3 of 3 untied dialogues, p = 0.125" in md


def test_collect_reads_a_run_folder(tmp_path):
    def entry(acc):
        return {"accuracy": acc, "per_dialogue": {"t1": acc}, "context_tokens": 50.0, "entries": 3.0}

    run = tmp_path / "ours-seed1"
    (run / "grpo").mkdir(parents=True)
    (run / "test_results.json").write_text(json.dumps({"SFT": entry(0.4), "GRPO (ours)": entry(0.6)}))
    (run / "grpo" / "dev_selection.json").write_text(json.dumps({"history": [{"step": 0, "accuracy": 0.3}]}))
    results, curve = {"ours": {}}, []
    ladder.collect(run, "ours", 1, results, curve, per_step=4.0)
    assert results["ours"][1] == {
        "accuracy": 0.6,
        "per_dialogue": {"t1": 0.6},
        "tokens": 50.0,
        "entries": 3.0,
    }
    assert results["SFT"][1]["accuracy"] == 0.4 and curve == [[(0.0, 0.3)]]
    (run / "test_results.json").write_text(json.dumps({"SFT": entry(0.4)}))
    with pytest.raises(ValueError, match="no GRPO test result"):
        ladder.collect(run, "ours", 1, results, curve, per_step=4.0)
