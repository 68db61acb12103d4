"""Run ladder arms × seeds on the embedded default (sequentially), then tabulate and plot.

    python experiments/run_ladder.py [key=value ...] --arms outcome_only observational ours --seeds 0 1 2
    python experiments/run_ladder.py --tabulate-only      # re-tabulate the run folders already there

Each arm is a config file ``configs/arms/<arm>.yaml``; every run goes to ``<output_dir>/<arm>-seed<seed>``
(TensorBoard overlays them: ``tensorboard --logdir runs``). Stage one (teacher trajectories and the critic) is
computed once per seed, by the first arm (or taken from ``--stage-one`` folders), and reused by the others
(``fit.stage_one_dir``); only the first arm of a seed also tests the baselines (teacher, untrained, SFT).
Rerunning the same command after a kill skips the runs that finished under the same config (their stage
markers, :func:`memprm.fit.finished`) and resumes the one that was interrupted.

Writes into ``<output_dir>/ladder/``:
  ladder.md   test accuracy mean ± std per arm over seeds, rollouts to the dev plateau, per-dialogue
              accuracy and one-sided sign tests (each arm vs the last arm) over test dialogues
  ladder.png  dev-selection accuracy vs rollouts, one line per arm (mean over seeds)
The plateau is the first evaluation at which the dev accuracy reaches 95% of the arm's final best.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.eval.significance import sign_test  # noqa: E402
from memprm.fit import finished, fit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: managers every arm's test stage also evaluates, tabulated once per seed for reference.
REFERENCES = ("SFT", "heuristic teacher")


def dev_curve(run_dir: Path, rollouts_per_step: float) -> list[tuple[float, float]]:
    """(rollouts, dev-selection accuracy) at each evaluation, from the ``DevCheckpointSelection`` history
    (``<run>/grpo/dev_selection.json``); empty when the run had no GRPO stage."""
    path = run_dir / "grpo" / "dev_selection.json"
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text())["history"]
        # rollouts as played (zero-variance groups take rollouts but no step); step-derived for old runs
        return [
            (h["rollouts"] if h.get("rollouts") is not None else h["step"] * rollouts_per_step,
             float(h["accuracy"]))
            for h in history
        ]  # fmt: skip
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a dev-selection history ({e!r})") from e


def rollouts_per_step(cfg) -> float:
    """Rollouts per optimizer step when no group is skipped: a batch of G × groups rollouts makes
    ``ppo_epochs`` steps (one mini-batch per pass, one device). Only for histories without a ``rollouts``
    field (runs older than it): skipped zero-variance groups make it an undercount."""
    if cfg.grpo.minibatch_size != 0:
        raise ValueError("run_ladder: rollouts per step are defined for grpo.minibatch_size=0 only")
    return cfg.rollout.group_size * cfg.rollout_data.groups_per_batch / cfg.grpo.ppo_epochs


def plateau(curve: list[tuple[float, float]], frac: float = 0.95) -> float | None:
    if not curve:
        return None
    best = max(a for _, a in curve)
    return next(r for r, a in curve if a >= frac * best)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", nargs="+", default=["outcome_only", "observational", "ours"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--output-dir", default="runs")
    ap.add_argument("--stage-one", default="",
                    help="reuse existing stage-one run folders, e.g. 'runs/stage1-seed{seed}' (default: the "
                         "first arm of each seed computes it)")  # fmt: skip
    ap.add_argument("--tabulate-only", action="store_true",
                    help="run nothing: tabulate and plot the run folders already under --output-dir "
                         "(missing ones are listed and left out)")  # fmt: skip
    ap.add_argument(
        "overrides",
        nargs="*",
        help="dotted overrides applied to every run (before --arms / --seeds, which take every value after them)",
    )
    args = ap.parse_args()
    out = Path(args.output_dir)
    results: dict[str, dict[int, dict]] = {a: {} for a in args.arms}
    curves: dict[str, list[list[tuple[float, float]]]] = {a: [] for a in args.arms}
    missing = []
    for seed in args.seeds:
        stage_one = args.stage_one.format(seed=seed)
        for i, arm in enumerate(args.arms):
            ov = [f"seed={seed}", f"output_dir={out}", f"rollout_data.seed={seed}", *args.overrides]
            if stage_one:
                ov.append(f"fit.stage_one_dir={stage_one}")
            if i > 0:  # teacher, untrained and SFT are the same for every arm of a seed
                ov.append("fit.test_baselines=false")
            cfg = load_config(ROOT / "configs" / "arms" / f"{arm}.yaml", ov)
            run_dir = out / cfg.run_name
            if args.tabulate_only:
                if not (run_dir / "test_results.json").is_file():
                    missing.append(str(run_dir))
                    continue
            elif finished(cfg):  # every stage's marker holds this config's hash: nothing to redo
                print(f"run_ladder: {run_dir} finished earlier with this config; skipped")
                stage_one = stage_one or str(run_dir)
            else:  # a killed run resumes: finished stages are skipped, GRPO continues from its checkpoint
                run_dir = fit(cfg).run_dir
                stage_one = stage_one or str(run_dir)
            collect(run_dir, arm, seed, results, curves[arm], rollouts_per_step(cfg))
    if missing:
        print(
            f"run_ladder: {len(missing)} run(s) have no test results and are left out: {', '.join(missing)}"
        )
    ladder = out / "ladder"
    ladder.mkdir(parents=True, exist_ok=True)
    refs = [r for r in REFERENCES if r in results]
    (ladder / "ladder.md").write_text(table(args.arms, results, curves, refs))
    plot(args.arms, curves, ladder / "ladder.png")
    print((ladder / "ladder.md").read_text())
    print(f"plot: {ladder / 'ladder.png'}")
    return 0


def summary(result: dict) -> dict:
    """The parts of one manager's entry in ``test_results.json`` that the ladder tabulates."""
    return {"accuracy": result["accuracy"], "per_dialogue": dict(result["per_dialogue"]),
            "tokens": result["context_tokens"], "entries": result["entries"]}  # fmt: skip


def collect(run_dir: Path, arm: str, seed: int, results: dict, arm_curves: list, per_step: float) -> None:
    """Add one run's test results (``test_results.json``, written by the test stage) and dev curve."""
    path = run_dir / "test_results.json"
    tests = json.loads(path.read_text())
    trained = next((v for k, v in tests.items() if k.startswith("GRPO")), None)
    if trained is None:
        raise ValueError(f"{path}: arm {arm!r} has no GRPO test result (fit.stages lacks grpo?)")
    results[arm][seed] = summary(trained)
    for name in REFERENCES:  # the same for every arm of a seed (shared stage one, seeded SFT)
        if name in tests:
            results.setdefault(name, {}).setdefault(seed, summary(tests[name]))
    arm_curves.append(dev_curve(run_dir, per_step))


def table(arms, results, curves, references=()) -> str:
    """The ladder as markdown: one row per arm (then per reference manager), per-dialogue accuracy, and
    one-sided sign tests of the last arm against each other arm."""
    lines = ["| arm | test accuracy % (mean ± std) | seeds | context tokens | entries | rollouts to dev plateau |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for arm in [*arms, *references]:
        accs = [100 * r["accuracy"] for r in results[arm].values()]
        sd = statistics.stdev(accs) if len(accs) > 1 else 0.0
        tok = statistics.mean(r["tokens"] for r in results[arm].values())
        ent = statistics.mean(r["entries"] for r in results[arm].values())
        plats = [p for c in curves.get(arm, []) if (p := plateau(c)) is not None]
        plat = f"{statistics.mean(plats):.0f}" if plats else "n/a"
        name = arm if arm in arms else f"{arm} (reference)"
        lines.append(
            f"| {name} | {statistics.mean(accs):.1f} ± {sd:.1f} | {len(accs)} | {tok:.0f} | {ent:.1f} | {plat} |"
        )
    ref = arms[-1]
    dialogues = sorted({d for r in results[ref].values() for d in r["per_dialogue"]})
    lines += ["", "Per test dialogue (accuracy %, mean over seeds):", "",
              "| dialogue | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]  # fmt: skip

    def mean_acc(arm, d):
        return statistics.mean(r["per_dialogue"].get(d, 0.0) for r in results[arm].values())

    for d in dialogues:
        lines.append(f"| {d} | " + " | ".join(f"{100 * mean_acc(a, d):.1f}" for a in arms) + " |")
    lines += ["", f"One-sided sign test over test dialogues, {ref} > arm:", ""]
    for arm in arms[:-1]:
        t = sign_test([mean_acc(ref, d) for d in dialogues], [mean_acc(arm, d) for d in dialogues])
        lines.append(
            f"- {ref} vs {arm}: wins {t.statistic:.0f} of {t.n} untied dialogues, p = {t.p_value:.3f}"
        )
    return "\n".join(lines) + "\n"


def plot(arms, curves, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in arms:
        runs = [c for c in curves[arm] if c]
        if not runs:
            continue
        n = min(len(c) for c in runs)
        xs = [runs[0][i][0] for i in range(n)]
        ys = [100 * statistics.mean(c[i][1] for c in runs) for i in range(n)]
        ax.plot(xs, ys, marker="o", label=arm)
    ax.set_xlabel("rollouts")
    ax.set_ylabel("dev-selection accuracy (%)")
    ax.set_title("Ladder on the embedded default")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
