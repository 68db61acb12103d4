"""The ladder: its results tables on a hand-made tree of run folders (memprm.inspect.ladder_report), the
script's skip-finished / resume / missing-run behaviour (experiments/run_ladder.py), and the ladder overlay's
budget (configs/ladder.yaml)."""

import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from memprm.callbacks.callback_config import DevSelectionConfig
from memprm.callbacks.dev_selection import DevCheckpointSelection
from memprm.data.records import Dialogue
from memprm.inspect import ladder_render as render
from memprm.inspect import ladder_report as lr
from memprm.inspect.trail import FORMAT, TEST_TRAIL, VERSION

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("run_ladder", ROOT / "experiments" / "run_ladder.py")
ladder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ladder)


# ------------------------------------------------------------------------------------ a fake run tree
def entry(acc, per, cats=None, tokens=100.0, entries=5.0, versions=1.5, kept=None):
    out = {"accuracy": acc, "n_questions": 30, "context_tokens": tokens, "by_category": cats or {},
           "per_dialogue": per, "entries": entries, "versions_per_entry": versions}  # fmt: skip
    return out if kept is None else out | {"evidence_kept": kept}


def write_run(run, tests, history=None, tb=None, trail=None):
    """A run folder as fit leaves it: test_results.json, grpo/dev_selection.json (rollouts, accuracy), the
    GRPO TensorBoard scalars (tag -> values, one per batch) and the test audit trail's dialogue lines."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "test_results.json").write_text(json.dumps(tests))
    if history is not None:
        (run / "grpo").mkdir(exist_ok=True)
        hist = [{"step": 4 * i, "accuracy": a, "rollouts": r} for i, (r, a) in enumerate(history)]
        (run / "grpo" / "dev_selection.json").write_text(json.dumps({"history": hist}))
    if tb is not None:
        from torch.utils.tensorboard import SummaryWriter

        with SummaryWriter(str(run / "tb" / "grpo")) as w:
            for tag, values in tb.items():
                for step, v in enumerate(values):
                    w.add_scalar(tag, v, step)
    if trail is not None:
        meta = {"kind": "meta", "format": FORMAT, "version": VERSION}
        lines = [meta] + [{"kind": "dialogue", "steps": [], **line} for line in trail]
        (run / TEST_TRAIL).write_text("".join(json.dumps(x) + "\n" for x in lines))


def bank_line(manager, dialogue, entries, hits):
    """entries: (id, layer); hits: entry ids retrieved by the one question."""
    return {"manager": manager, "dialogue": dialogue,
            "bank": {"entries": [{"id": i, "layer": layer} for i, layer in entries]},
            "questions": [{"id": "q", "hits": [{"entry_id": h} for h in hits]}]}  # fmt: skip


@pytest.fixture
def tree(tmp_path):
    """Two arms x two seeds; the outcome-only runs (each seed's first arm) also tested teacher and SFT.
    Per-dialogue means over seeds: ours t1 .7 t2 .7 t3 .6; outcome-only .5 .6 .4; SFT .8 .7 .2."""
    sft = {0: entry(0.6, {"t1": 0.8, "t2": 0.8, "t3": 0.2}), 1: entry(0.5, {"t1": 0.8, "t2": 0.6, "t3": 0.2})}
    teacher = entry(0.75, {"t1": 0.7, "t2": 0.8, "t3": 0.75}, entries=10.0, versions=1.2)
    runs = tmp_path / "runs"
    write_run(runs / "outcome_only-seed0",
              {"heuristic teacher": teacher, "untrained": entry(0.3, {"t1": 0.3}), "SFT": sft[0],
               "GRPO (outcome_only)": entry(0.4, {"t1": 0.4, "t2": 0.5, "t3": 0.3})},
              history=[(0, 0.5), (32, 0.55), (64, 0.6)],
              trail=[bank_line("heuristic teacher", "t1", [("a", "event"), ("b", "profile")], ["a", "b"])])  # fmt: skip
    write_run(runs / "outcome_only-seed1",
              {"heuristic teacher": teacher, "SFT": sft[1],
               "GRPO (outcome_only)": entry(0.5, {"t1": 0.6, "t2": 0.7, "t3": 0.5})},
              history=[(0, 0.5), (32, 0.5), (64, 0.5)])  # fmt: skip
    write_run(runs / "ours-seed0",
              {"GRPO (ours)": entry(0.6, {"t1": 0.6, "t2": 0.7, "t3": 0.5}, {"single-hop": 0.5, "temporal": 0.7},
                                    entries=20.0, versions=3.0, kept=0.5)},
              history=[(0, 0.5), (32, 0.6), (64, 0.65)],
              tb={"reward/shaping_share": [0.8, 0.6, 0.4, 0.2, 0.1, 0.1, 0.1, 0.0],
                  "grpo/zero_variance_frac": [0, 0.25, 0.5, 0, 0, 0, 0.25, 0]},
              trail=[bank_line("GRPO (ours)", "t1", [("e1", "event"), ("e2", "profile"), ("v1", "verbatim")],
                               ["e1", "v1"]),
                     bank_line("GRPO (ours)", "t2", [("e3", "event"), ("e4", "event")], [])])  # fmt: skip
    write_run(runs / "ours-seed1",
              {"GRPO (ours)": entry(0.7, {"t1": 0.8, "t2": 0.7, "t3": 0.7}, {"single-hop": 0.7, "temporal": 0.7},
                                    entries=22.0, versions=4.0, kept=0.7)},
              history=[(0, 0.5), (40, 0.55)],
              tb={"reward/shaping_share": [0.5, 0.3], "grpo/zero_variance_frac": [0.5, 0.0],
                  "local/identical_actions": [1.0, 0.0, 0.0, 1.0]})  # fmt: skip
    return runs


def collected(runs):
    lad = lr.Ladder(["outcome_only", "ours"], "ours", "outcome_only")
    for seed in (0, 1):
        for arm in ("outcome_only", "ours"):
            lr.collect(lad, runs / f"{arm}-seed{seed}", arm, seed, f"GRPO ({arm})", per_step=8.0)
    return lad


# ------------------------------------------------------------------------------------------ the tables
def test_tables_hold_hand_computed_means_stds_and_tests(tree):
    rep = lr.tabulate(collected(tree))
    rows = rep["rows"]
    assert list(rows) == ["outcome_only", "ours", "heuristic teacher", "untrained", "SFT"]
    ours = rows["ours"]
    assert ours["kind"] == "arm" and ours["seeds"] == [0, 1]
    assert ours["accuracy"]["mean"] == pytest.approx(65.0) and ours["accuracy"]["std"] == pytest.approx(
        50**0.5
    )
    assert ours["by_category"]["single-hop"]["mean"] == pytest.approx(60.0)
    assert ours["by_category"]["single-hop"]["std"] == pytest.approx(200**0.5)  # 50 and 70
    assert ours["by_category"]["temporal"]["std"] == pytest.approx(0.0)
    assert (ours["entries"], ours["versions"], ours["hit_rate"]) == (21.0, 3.5, 0.25)  # hit: e1 of e1..e4
    assert (
        ours["evidence_kept"] == pytest.approx(0.6) and rows["SFT"]["evidence_kept"] is None
    )  # not recorded
    assert rows["untrained"]["seeds"] == [0] and rows["untrained"]["accuracy"]["std"] is None
    assert rows["heuristic teacher"]["kind"] == "reference" and rows["heuristic teacher"]["hit_rate"] == 1.0
    # ours vs outcome-only: d = (.2, .1, .2), all won: sign p = 1/8, and only the all-plus flip of 8 reaches
    # the observed mean: block permutation p = 1/8
    c = rep["comparisons"]["outcome_only"]
    assert (c["seeds"], c["dialogues"], c["wins"], c["untied"]) == ([0, 1], 3, 3, 3)
    assert c["sign_p"] == pytest.approx(1 / 8) and c["permutation_p"] == pytest.approx(1 / 8)
    assert c["mean_difference"] == pytest.approx(100 * 0.5 / 3)
    # ours vs SFT: d = (-.1, 0, .4): 1 win of 2 untied: sign p = 3/4; flips of (-.1, .4) reaching mean .1:
    # (-, +) and (+, +) of 4: permutation p = 1/2
    c = rep["comparisons"]["SFT"]
    assert (c["wins"], c["untied"]) == (1, 2) and c["sign_p"] == pytest.approx(0.75)
    assert c["permutation_p"] == pytest.approx(0.5) and c["mean_difference"] == pytest.approx(10.0)
    assert rep["comparisons"]["untrained"]["seeds"] == [0]  # only seed 0 tested it
    assert rep["per_dialogue"]["ours"] == pytest.approx({"t1": 0.7, "t2": 0.7, "t3": 0.6})
    # rollouts to outcome-only's last dev accuracy of the same seed (.6 on seed 0, .5 on seed 1)
    race = rep["race"]
    assert race["targets"] == pytest.approx({"0": 60.0, "1": 50.0})
    assert race["arms"]["ours"]["per_seed"] == {"0": 32, "1": 0} and race["arms"]["ours"]["mean"] == 16
    assert race["arms"]["ours"]["last_eval"] == 52 and race["arms"]["outcome_only"]["per_seed"] == {
        "0": 64,
        "1": 0,
    }
    # shaping share: first / last quarter of batches (2 of 8; 1 of 2), zero-variance mean, then over seeds
    t = rep["training"]["ours"]
    assert t["shaping_early"] == pytest.approx((0.7 + 0.5) / 2) and t["shaping_late"] == pytest.approx(0.175)
    assert t["zero_variance"] == pytest.approx((0.125 + 0.25) / 2) and t["seeds"] == 2
    assert t["local_identical"] == pytest.approx(0.5)  # only seed 1 logged local groups: 2 of 4 identical
    # its runs have no tb/grpo: n/a, not zeros
    assert rep["training"]["outcome_only"] == dict.fromkeys(
        ("shaping_early", "shaping_late", "zero_variance", "local_identical")
    ) | {"seeds": 2}
    assert list(rep["organization"]) == ["ours", "heuristic teacher", "SFT"]
    json.dumps(rep)  # the results file


def test_markdown_lists_missing_runs_and_baselines(tree, tmp_path):
    lad = collected(tree)
    lad.missing.append("runs/observational-seed1")
    lad.baselines = {"Mem0 (top-10)": lr.summary(entry(0.5, {"t1": 0.5, "t2": 0.5, "t3": 0.5}))}
    rep = lr.tabulate(lad)
    md = render.markdown(rep, [0, 1])
    assert "Missing runs (not tabulated): runs/observational-seed1" in md
    assert "| ours | arm | 0,1 | 65.0 ± 7.1 | 60.0 ± 14.1 | 70.0 ± 0.0 | 100 | 21.0 | 3.50 | 0.25 | 60.0 |" in md
    assert "| untrained | reference | 0 | 30.0 ± – |" in md
    assert "| Mem0 (top-10) | baseline | – | 50.0 ± – |" in md
    assert "| outcome_only | 0,1 | 3 | +16.7 | 3 / 3 | 0.125 | 0.125 |" in md
    # ours over both seeds vs the unseeded baseline: d = (.2, .2, .1)
    assert rep["comparisons"]["Mem0 (top-10)"]["seeds"] == [0, 1]
    assert "| ours | 0: 32, 1: 0 | 16 | 2 / 2 | 52 |" in md
    assert "| t3 | 40.0 | 60.0 | 75.0 | n/a | 20.0 | 50.0 |" in md
    render.plot(rep, tmp_path / "ladder.png")
    assert (tmp_path / "ladder.png").stat().st_size > 1000
    assert "Missing runs: none" in render.markdown(lr.tabulate(collected(tree)), [0, 1])


def test_collect_refuses_a_run_without_its_final_policy(tree):
    with pytest.raises(ValueError, match="no 'GRPO \\(observational\\)' test result"):
        lr.collect(lr.Ladder(["observational"], "observational"), tree / "ours-seed0", "observational", 0,
                   "GRPO (observational)", 8.0)  # fmt: skip


def test_final_manager_early_late_and_mean_band():
    assert lr.final_manager("ours", ("critic", "sft", "grpo", "test"), 400) == "GRPO (ours)"
    assert lr.final_manager("sft", ("critic", "sft", "test"), 400) == "SFT"
    assert lr.final_manager("untrained", ("test",), 0) == "untrained"
    assert lr.early_late([1, 2, 3, 4, 5]) == (1.5, 4.5) and lr.early_late([]) == (None, None)
    # curves on different rollout grids: interpolated on the union up to the shorter end (40); at 32 the
    # second is .2 + .4 * 32/40 = .52, at 40 the first is .6 + .2 * 8/32 = .65
    xs, mean, lo, hi = lr.mean_band([[(0, 0.4), (32, 0.6), (64, 0.8)], [(0, 0.2), (40, 0.6)]])
    assert xs == [0, 32, 40] and mean == pytest.approx([0.3, 0.56, 0.625])
    assert lo == pytest.approx([0.2, 0.52, 0.6]) and hi == pytest.approx([0.4, 0.6, 0.65])
    assert (
        lr.rollouts_to_reach([(0, 0.5), (8, 0.7)], 0.6) == 8 and lr.rollouts_to_reach([(0, 0.5)], 0.6) is None
    )


def test_dev_curve_reads_what_dev_selection_writes(tmp_path):
    sel = DevCheckpointSelection(lambda p: 0.0, DevSelectionConfig(), tmp_path / "run" / "grpo",
                                 [Dialogue("dev-1", ("A", "B"), ())], test_dialogue_ids=())  # fmt: skip
    sel.history = [(0, 0.40), (6, 0.50), (12, 0.48)]
    sel.rollouts = [0, 40, 90]  # as played: skipped groups took rollouts but no step
    sel._write_history(SimpleNamespace(is_global_zero=True))
    assert lr.dev_curve(tmp_path / "run", per_step=2.0) == [(0, 0.40), (40, 0.50), (90, 0.48)]
    sel.rollouts = [None] * 3  # no rollout datamodule (or a run older than the field): steps × per step
    sel._write_history(SimpleNamespace(is_global_zero=True))
    assert lr.dev_curve(tmp_path / "run", per_step=2.0) == [(0, 0.40), (12, 0.50), (24, 0.48)]
    assert lr.dev_curve(tmp_path / "no-grpo", 2.0) == []
    bad = tmp_path / "bad" / "grpo"
    bad.mkdir(parents=True)
    (bad / "dev_selection.json").write_text('{"history": [{"step": 1}]}')
    with pytest.raises(ValueError, match="dev_selection.json"):
        lr.dev_curve(tmp_path / "bad", 1.0)


def test_plateau_and_rollouts_per_step():
    # best 0.50; 95% of it is 0.475: first reached at 20 rollouts (ties with later points don't matter)
    assert lr.plateau([(0, 0.30), (10, 0.47), (20, 0.48), (30, 0.50)]) == 20
    assert lr.plateau([]) is None
    assert lr.plateau([(0, 0.0), (5, 0.0)]) == 0  # a flat zero curve plateaus at once
    cfg = SimpleNamespace(grpo=SimpleNamespace(minibatch_size=0, ppo_epochs=2),
                          rollout=SimpleNamespace(group_size=4), rollout_data=SimpleNamespace(groups_per_batch=3))  # fmt: skip
    assert lr.rollouts_per_step(cfg) == 6.0
    cfg.grpo.minibatch_size = 8
    with pytest.raises(ValueError, match="minibatch_size"):
        lr.rollouts_per_step(cfg)


# ------------------------------------------------------------------------------------------ the script
def test_script_skips_finished_runs_resumes_the_rest_and_lists_missing(tmp_path, monkeypatch):
    """fit and finished stubbed (they are tested in test_fit / test_resume): which runs the script starts,
    with which stage one and reference tests, and what it tabulates."""
    calls = []

    def fake_fit(cfg):
        calls.append((cfg.arm, cfg.seed, cfg.fit.stage_one_dir, cfg.fit.test_baselines, cfg.grpo.lr))
        run = Path(cfg.output_dir) / cfg.run_name
        acc = 0.6 if cfg.arm == "ours" else 0.4
        tests = {f"GRPO ({cfg.arm})": entry(acc + 0.1 * cfg.seed, {"t1": acc, "t2": acc + 0.1})}
        if cfg.fit.test_baselines:
            tests = {"heuristic teacher": entry(0.7, {"t1": 0.7, "t2": 0.7}), **tests}
        write_run(run, tests, history=[(0, 0.5), (16, acc)])
        (run / "done").write_text(cfg.run_name)
        return SimpleNamespace(run_dir=run)

    monkeypatch.setattr(ladder, "fit", fake_fit)
    monkeypatch.setattr(
        ladder, "finished", lambda cfg: (Path(cfg.output_dir) / cfg.run_name / "done").is_file()
    )
    runs, res = tmp_path / "runs", tmp_path / "results"
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("grpo:\n  lr: 0.125\n")
    argv = [f"--config={overlay}", f"--output-dir={runs}", f"--results={res}", "--no-baselines",
            "--ablations", "sum_shaping", "--arms", "outcome_only", "ours", "--seeds", "0", "1"]  # fmt: skip
    assert ladder.main(argv) == 0
    s0, s1 = str(runs / "outcome_only-seed0"), str(runs / "outcome_only-seed1")
    assert calls == [("outcome_only", 0, "", True, 0.125), ("ours", 0, s0, False, 0.125),
                     ("sum_shaping", 0, s0, False, 0.125),  # ablations: first seed only
                     ("outcome_only", 1, "", True, 0.125), ("ours", 1, s1, False, 0.125)]  # fmt: skip
    report = json.loads((res / "ladder.json").read_text())
    assert report["rows"]["ours"]["accuracy"]["mean"] == pytest.approx(65.0)
    assert report["comparisons"]["sum_shaping"]["seeds"] == [0] and report["missing"] == []
    assert (res / "ladder.png").is_file() and (
        runs / "ladder" / "ladder.md"
    ).is_file()  # memprm inspect's copy

    # rerun after a kill during ours-seed1: only that run is started again
    (runs / "ours-seed1" / "done").unlink()
    calls.clear()
    assert ladder.main(argv) == 0
    assert calls == [("ours", 1, s1, False, 0.125)]

    # a run folder without results: listed in every results file, the others still tabulated
    (runs / "ours-seed1" / "test_results.json").unlink()
    calls.clear()
    assert ladder.main([*argv[:4], "--tabulate-only", *argv[4:]]) == 0
    assert calls == []
    md, report = (res / "ladder.md").read_text(), json.loads((res / "ladder.json").read_text())
    assert f"Missing runs (not tabulated): {runs / 'ours-seed1'}" in md
    assert report["missing"] == [str(runs / "ours-seed1")] and report["rows"]["ours"]["seeds"] == [0]


def test_script_refuses_unknown_arms_and_an_overlay_that_names_arms(tmp_path):
    with pytest.raises(SystemExit):
        ladder.main(["--arms", "no_such_arm", "--no-baselines", f"--results={tmp_path}"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("arm: ours\n")
    with pytest.raises(ladder.ConfigError, match="must not set \\['arm'\\]"):
        ladder.main([f"--config={bad}", "--no-baselines", f"--results={tmp_path}"])


# ------------------------------------------------------------------------------------ the ladder's budget
def test_ladder_overlay_gives_every_arm_the_same_budget():
    from memprm.data.source import load_source

    overlay = ROOT / "configs" / "ladder.yaml"
    ladder.check_overlay(overlay)
    cfgs = {
        p.stem: ladder.merged_config([p, overlay], ["seed=1"]) for p in sorted(ladder.ARMS.glob("*.yaml"))
    }
    assert {a: c.arm for a, c in cfgs.items()} == {a: a for a in cfgs}  # the overlay names no arm
    assert cfgs["untrained"].fit.stages == ("test",) and cfgs["outcome_only"].grpo.advantage_mode == "outcome"
    trained = [c for c in cfgs.values() if "grpo" in c.fit.stages]
    budgets = {(c.rollout.group_size, c.rollout_data.groups_per_batch, c.grpo.max_batches) for c in trained}
    assert len(budgets) == 1
    (g, groups, batches), cfg = budgets.pop(), cfgs["ours"]
    assert g == 4 and g * groups * batches >= 1000
    for c in trained:  # the batch budget, not max_steps, ends every arm: equal rollouts
        assert c.grpo.max_steps >= c.grpo.max_batches * c.grpo.ppo_epochs and c.grpo.minibatch_size == 0
        assert c.dev_selection.every_n_steps * lr.rollouts_per_step(c) <= 40
    splits = load_source(cfg.data)
    assert sum(len(d.questions) for d in splits["dev_selection"]) >= 50
    assert sum(len(d.questions) for d in splits["test"]) >= 250 and splits["rl"]
    assert math.isclose(cfg.grpo.k_decay, cfg.grpo.max_steps)


TINY = """
data: {synthetic: {n_dialogues: 3, n_train: 1, n_dev: 1, sessions_per_dialogue: 2, turns_per_session: 8}}
embedder: {kind: hashing, dim: 128}
sft: {steps: 20}
grpo: {max_steps: 2, max_batches: 1, temperature: 4}
rollout: {group_size: 2}
dev_selection: {every_n_steps: 1}
trainer: {progress_bar: false}
"""


@pytest.mark.slow
def test_the_ladder_end_to_end_on_a_tiny_config_then_skipped(tmp_path, monkeypatch):
    overlay = tmp_path / "tiny.yaml"
    overlay.write_text(TINY)
    runs, res = tmp_path / "runs", tmp_path / "results"
    argv = [f"--config={overlay}", f"--output-dir={runs}", f"--results={res}",
            "--arms", "outcome_only", "ours", "--seeds", "0"]  # fmt: skip
    assert ladder.main(argv) == 0
    first = json.loads((res / "ladder.json").read_text())
    rows = first["rows"]
    assert list(rows) == ["outcome_only", "ours", "heuristic teacher", "untrained", "SFT",
                          "retrieval-only", "Mem0 (top-10)", "Mem0 (top-200)"]  # fmt: skip
    assert first["missing"] == [] and rows["retrieval-only"]["entries"] == 0.0  # verbatim only
    assert rows["Mem0 (top-200)"]["tokens"] >= rows["Mem0 (top-10)"]["tokens"]
    assert rows["ours"]["hit_rate"] is None or 0.0 <= rows["ours"]["hit_rate"] <= 1.0
    assert first["training"]["ours"]["zero_variance"] is not None  # read from tb/grpo
    assert first["training"]["outcome_only"]["shaping_early"] == 0.0  # no critic shaping
    assert first["curves"]["ours"]["0"][0][0] >= 0 and (res / "ladder.png").is_file()
    assert not (runs / "ours-seed0" / "critic").exists()  # stage one shared with the seed's first arm

    def must_not_run(*a, **k):
        raise AssertionError("a finished run or a cached baseline was computed again")

    monkeypatch.setattr(ladder, "fit", must_not_run)
    monkeypatch.setattr(ladder, "evaluate_mem0", must_not_run)
    monkeypatch.setattr(ladder, "evaluate_manager", must_not_run)
    assert ladder.main(argv) == 0  # every run finished under this config, the baselines cached
    assert json.loads((res / "ladder.json").read_text()) == first
    # the baselines' cache does not depend on the GRPO recipe (nor does --tabulate-only run anything)
    assert ladder.main([*argv[:3], "--tabulate-only", "grpo.lr=0.5", *argv[3:]]) == 0
    assert json.loads((res / "ladder.json").read_text())["rows"] == rows
