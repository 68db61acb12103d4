"""The ladder's results (``experiments/run_ladder.py``): tables and statistics from run folders (rendered to
``ladder.md`` / ``ladder.png`` by :mod:`memprm.inspect.ladder_render`).

Rows: each arm (its runs' final policy), the reference managers a seed's first run tests beside it (heuristic
teacher, untrained, SFT) and the unseeded baselines (retrieval-only, Mem0). Per run it reads
``test_results.json``, ``grpo/dev_selection.json`` (dev accuracy vs rollouts played), the GRPO TensorBoard
scalars ``reward/shaping_share`` and ``grpo/zero_variance_frac`` (``tb/grpo``) and the test audit trail (hit
rate: the share of managed entries that some test question retrieved, pooled over the banks). Ours is
compared with every other row over test dialogues, each dialogue's accuracy averaged over the seeds both rows
have: the exact one-sided sign test and the block permutation test (whole dialogues' differences sign-flipped,
:func:`memprm.eval.significance.paired_permutation`). A run that is missing is listed, never dropped silently.
Nothing here runs a model.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memprm.eval.significance import paired_permutation, sign_test
from memprm.inspect.load import read_trail
from memprm.inspect.model import MANAGED
from memprm.inspect.trail import TEST_TRAIL

#: managers a seed's first run tests beside its own policy (``fit.test_baselines``).
REFERENCES = ("heuristic teacher", "untrained", "SFT")
#: the §4.5 organization table's rows besides ours.
ORGANIZATION = ("heuristic teacher", "SFT")
_EPS = 1e-9  # a dev accuracy this close below a target still reaches it (float sums of 0/1 scores)

Curve = list[tuple[float, float]]  # (rollouts played, dev-selection accuracy) per evaluation


@dataclass
class Ladder:
    """What the run folders gave. ``rows``: row → seed → :func:`summary`; ``curves`` / ``training``: arm →
    seed → dev curve / :func:`training_stats`; ``baselines``: unseeded row → :func:`summary`."""

    arms: list[str]
    ours: str
    reference: str | None = None  # the arm whose final dev accuracy the others race to (outcome-only)
    rows: dict[str, dict[int, dict]] = field(default_factory=dict)
    curves: dict[str, dict[int, Curve]] = field(default_factory=dict)
    training: dict[str, dict[int, dict]] = field(default_factory=dict)
    baselines: dict[str, dict] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ reading runs
def final_manager(arm: str, stages: Sequence[str], sft_steps: int) -> str:
    """The ``test_results.json`` key of a run's final policy (:func:`memprm.stages.held_out.evaluate_states`)."""
    if "grpo" in stages:
        return f"GRPO ({arm})"
    return "SFT" if "sft" in stages and sft_steps > 0 else "untrained"


def rollouts_per_step(cfg) -> float:
    """Rollouts per optimizer step when no group is skipped: a batch of G × groups rollouts makes
    ``ppo_epochs`` steps (one mini-batch per pass, one device). Only for histories without a ``rollouts``
    field (runs older than it): skipped zero-variance groups make it an undercount."""
    if cfg.grpo.minibatch_size != 0:
        raise ValueError("run_ladder: rollouts per step are defined for grpo.minibatch_size=0 only")
    return cfg.rollout.group_size * cfg.rollout_data.groups_per_batch / cfg.grpo.ppo_epochs


def dev_curve(run_dir: Path, per_step: float) -> Curve:
    """(rollouts, dev-selection accuracy) at each evaluation of ``<run>/grpo/dev_selection.json``; empty
    without a GRPO stage. Rollouts as played (zero-variance groups take rollouts but no step), else step ×
    ``per_step`` for histories older than that field."""
    path = Path(run_dir) / "grpo" / "dev_selection.json"
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text())["history"]
        return [(h["rollouts"] if h.get("rollouts") is not None else h["step"] * per_step, float(h["accuracy"]))
                for h in history]  # fmt: skip
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a dev-selection history ({e!r})") from e


def early_late(values: Sequence[float], frac: float = 0.25) -> tuple[float | None, float | None]:
    """Means of the first and of the last ⌈frac · n⌉ values (at least one); (None, None) when empty."""
    if not values:
        return None, None
    k = max(1, math.ceil(frac * len(values)))
    return statistics.fmean(values[:k]), statistics.fmean(values[-k:])


def training_stats(tb_dir: Path) -> dict[str, float | None]:
    """From a run's ``tb/grpo`` scalars (one value per training batch): the shaping share of the reward mass
    over the first and the last quarter of batches, and the mean share of zero-variance groups."""
    series = {"reward/shaping_share": [], "grpo/zero_variance_frac": [], "local/identical_actions": []}
    if Path(tb_dir).is_dir():
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in series:
            if tag in acc.Tags()["scalars"]:
                series[tag] = [e.value for e in sorted(acc.Scalars(tag), key=lambda e: e.step)]
    early, late = early_late(series["reward/shaping_share"])
    zv, same = series["grpo/zero_variance_frac"], series["local/identical_actions"]
    return {"shaping_early": early, "shaping_late": late, "zero_variance": statistics.fmean(zv) if zv else None,
            "local_identical": statistics.fmean(same) if same else None, "batches": len(zv)}  # fmt: skip


def hit_rates(trail: Path) -> dict[str, float]:
    """Manager → share of its managed entries (all test banks pooled) retrieved by at least one test question;
    empty without a trail."""
    if not Path(trail).is_file():
        return {}
    _, lines = read_trail(Path(trail))
    counts: dict[str, list[int]] = {}
    for line in lines:
        managed = {e["id"] for e in line["bank"]["entries"] if e["layer"] in MANAGED}
        hit = {h["entry_id"] for q in line["questions"] for h in q.get("hits", ())}
        c = counts.setdefault(line["manager"], [0, 0])
        c[0], c[1] = c[0] + len(managed & hit), c[1] + len(managed)
    return {m: h / n for m, (h, n) in counts.items() if n}


def summary(result: Mapping[str, Any], hit_rate: float | None = None) -> dict:
    """The parts of one manager's ``test_results.json`` entry (an ``EvalResult`` as a dict) that are tabulated."""
    return {"accuracy": result["accuracy"], "n_questions": result.get("n_questions"),
            "by_category": dict(result.get("by_category", {})), "per_dialogue": dict(result["per_dialogue"]),
            "tokens": result["context_tokens"], "entries": result["entries"],
            "versions": result.get("versions_per_entry"), "hit_rate": hit_rate,
            "evidence_kept": result.get("evidence_kept")}  # fmt: skip


def collect(ladder: Ladder, run_dir: Path, arm: str, seed: int, final: str, per_step: float) -> None:
    """Add one finished run: its final policy (``final``, :func:`final_manager`) as ``arm``'s row, the
    reference managers it tested (kept from the first run of the seed that has them), its dev curve and its
    GRPO training statistics."""
    path = Path(run_dir) / "test_results.json"
    tests = json.loads(path.read_text())
    if final not in tests:
        raise ValueError(f"{path}: arm {arm!r} has no {final!r} test result (it has {sorted(tests)})")
    hits = hit_rates(Path(run_dir) / TEST_TRAIL)
    ladder.rows.setdefault(arm, {})[seed] = summary(tests[final], hits.get(final))
    for name in REFERENCES:  # the same for every arm of a seed (shared stage one, seeded SFT)
        if name in tests:
            ladder.rows.setdefault(name, {}).setdefault(seed, summary(tests[name], hits.get(name)))
    ladder.curves.setdefault(arm, {})[seed] = dev_curve(run_dir, per_step)
    if (Path(run_dir) / "grpo").is_dir():
        ladder.training.setdefault(arm, {})[seed] = training_stats(Path(run_dir) / "tb" / "grpo")


# ----------------------------------------------------------------------------------------- statistics
def mean_std(values: Sequence[float]) -> dict:
    """Mean, sample standard deviation (None for fewer than 2 values) and count; mean None when empty."""
    vals = [float(v) for v in values]
    return {"mean": statistics.fmean(vals) if vals else None,
            "std": statistics.stdev(vals) if len(vals) > 1 else None, "n": len(vals)}  # fmt: skip


def plateau(curve: Curve, frac: float = 0.95) -> float | None:
    """Rollouts at the first evaluation reaching ``frac`` of the curve's best accuracy."""
    if not curve:
        return None
    best = max(a for _, a in curve)
    return next(r for r, a in curve if a >= frac * best)


def rollouts_to_reach(curve: Curve, target: float) -> float | None:
    """Rollouts at the first evaluation whose accuracy is ≥ ``target``; None when none is."""
    return next((r for r, a in curve if a >= target - _EPS), None)


def dialogue_means(by_seed: Mapping[int, dict], seeds: Sequence[int] | None = None) -> dict[str, float]:
    """Each test dialogue's accuracy, averaged over ``seeds`` (all of ``by_seed``'s when None)."""
    runs = [by_seed[s] for s in (by_seed if seeds is None else seeds)]
    dialogues = sorted({d for r in runs for d in r["per_dialogue"]})
    return {
        d: statistics.fmean(r["per_dialogue"][d] for r in runs if d in r["per_dialogue"]) for d in dialogues
    }


def compare(ours: Mapping[str, float], other: Mapping[str, float]) -> dict:
    """Ours vs another row over their common test dialogues: mean difference (points), the one-sided sign
    test and the one-sided block permutation test (both: ours > other)."""
    dialogues = sorted(set(ours) & set(other))
    a, b = [ours[d] for d in dialogues], [other[d] for d in dialogues]
    sign, perm = sign_test(a, b), paired_permutation(a, b)
    return {"dialogues": len(dialogues), "mean_difference": 100 * perm.statistic, "wins": int(sign.statistic),
            "untied": sign.n, "sign_p": sign.p_value, "permutation_p": perm.p_value}  # fmt: skip


def mean_band(curves: Sequence[Curve]) -> tuple[list[float], list[float], list[float], list[float]]:
    """x, mean, min and max of ``curves`` linearly interpolated on the union of their x values up to the
    shortest curve's end (seeds evaluate at different rollout counts when groups are skipped)."""
    import numpy as np

    curves = [c for c in curves if c]
    if not curves:
        return [], [], [], []
    end = min(c[-1][0] for c in curves)
    xs = sorted({x for c in curves for x, _ in c if x <= end})
    ys = np.array([np.interp(xs, [x for x, _ in c], [y for _, y in c]) for c in curves])  # [curves, xs]
    return xs, ys.mean(0).tolist(), ys.min(0).tolist(), ys.max(0).tolist()


def tabulate(ladder: Ladder) -> dict:
    """Every table of the results files, JSON-ready (see the module docstring)."""
    arms = [a for a in ladder.arms if a in ladder.rows]
    seeded = [*arms, *(r for r in REFERENCES if r in ladder.rows)]
    rows: dict[str, dict] = {}
    for name in seeded + list(ladder.baselines):
        runs = ladder.rows[name] if name in ladder.rows else {None: ladder.baselines[name]}
        kind = "arm" if name in arms else "reference" if name in REFERENCES else "baseline"
        cats = sorted({c for r in runs.values() for c in r["by_category"]})
        rows[name] = {
            "kind": kind, "seeds": sorted(s for s in runs if s is not None),
            "accuracy": mean_std([100 * r["accuracy"] for r in runs.values()]),
            "by_category": {c: mean_std([100 * r["by_category"][c] for r in runs.values() if c in r["by_category"]])
                            for c in cats},
            "n_questions": next(iter(runs.values())).get("n_questions"),
            **{k: mean_std([r[k] for r in runs.values() if r.get(k) is not None])["mean"]
               for k in ("tokens", "entries", "versions", "hit_rate", "evidence_kept")},
        }  # fmt: skip
    per_dialogue = {n: dialogue_means(ladder.rows[n]) for n in seeded}
    per_dialogue |= {n: dict(b["per_dialogue"]) for n, b in ladder.baselines.items()}
    comparisons = {}
    if ladder.ours in ladder.rows:
        mine = ladder.rows[ladder.ours]
        for name in rows:
            if name == ladder.ours:
                continue
            seeds = sorted(set(mine) & set(ladder.rows[name])) if name in ladder.rows else sorted(mine)
            if not seeds:
                comparisons[name] = {"seeds": [], "dialogues": 0, "note": "no seed in common"}
                continue
            theirs = dialogue_means(ladder.rows[name], seeds) if name in ladder.rows else per_dialogue[name]
            comparisons[name] = {"seeds": seeds, **compare(dialogue_means(mine, seeds), theirs)}
    return {"arms": arms, "ours": ladder.ours, "reference": ladder.reference, "missing": list(ladder.missing),
            "rows": rows, "per_dialogue": per_dialogue, "comparisons": comparisons,
            "race": race(ladder), "training": training_table(ladder),
            "organization": {n: {k: rows[n][k] for k in ("entries", "versions", "hit_rate")}
                             for n in (ladder.ours, *ORGANIZATION) if n in rows},
            "curves": {a: {str(s): c for s, c in ladder.curves.get(a, {}).items()} for a in arms}}  # fmt: skip


def race(ladder: Ladder) -> dict:
    """Per arm and seed, rollouts to reach the reference arm's final (last) dev accuracy on the same seed."""
    ref = ladder.curves.get(ladder.reference or "", {})
    targets = {s: c[-1][1] for s, c in ref.items() if c}
    out = {}
    for arm in ladder.arms:
        curves = {s: c for s, c in ladder.curves.get(arm, {}).items() if c}
        per_seed = {s: rollouts_to_reach(c, targets[s]) for s, c in curves.items() if s in targets}
        reached = [r for r in per_seed.values() if r is not None]
        out[arm] = {"per_seed": {str(s): r for s, r in per_seed.items()}, "reached": len(reached),
                    "runs": len(per_seed), "mean": statistics.fmean(reached) if reached else None,
                    "last_eval": mean_std([c[-1][0] for c in curves.values()])["mean"],
                    "plateau": mean_std([p for c in curves.values() if (p := plateau(c)) is not None])["mean"]}  # fmt: skip
    return {
        "reference": ladder.reference,
        "targets": {str(s): 100 * t for s, t in targets.items()},
        "arms": out,
    }


def training_table(ladder: Ladder) -> dict:
    """Per arm: the shaping share early / late, the zero-variance group share and (``local_reroll``) the share
    of local re-run groups with identical actions, means over seeds."""
    out = {}
    for arm in ladder.arms:
        runs = list(ladder.training.get(arm, {}).values())
        if runs:
            keys = ("shaping_early", "shaping_late", "zero_variance", "local_identical")
            out[arm] = {k: mean_std([r[k] for r in runs if r.get(k) is not None])["mean"] for k in keys}
            out[arm]["seeds"] = len(runs)
    return out
