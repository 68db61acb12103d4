"""Replay validation of chain credit: does an operation's chain credit rank its replay marginal ΔR?

    python experiments/replay_validation.py --run RUN [--ops 300] [--seed S] [--policy grpo|sft]
        [--split dev] [--out experiments/results] [key.sub=value ...]

RUN is a ``fit`` run folder: its ``config.yaml`` (then the overrides) builds the stack, its
``policy_grpo.pt`` (``--policy grpo``, the default when present) or ``policy_sft.pt`` is the policy. The
protocol (:mod:`memprm.inspect.replay_validation`): the policy plays every window of the split greedily and is
examined and audited as in training; ``--ops`` Write / Merge operations drawn uniformly are each replayed
with that gate a Noop and every other action kept (:mod:`memprm.env.replay`: ids of later entries remapped, a
later Merge into a dropped Write's entry becomes a Noop and is counted), and re-examined on the same quiz.
Reported: Spearman between ΔR and the chain credit under each propagation variant (un-normalized,
normalized, cited-version-only) with 95% bootstrap intervals, overall and per kind; the replay cost in
rollouts; writes ``<out>/replay_validation.{md,json,png}`` (the PNG: credit vs ΔR per variant).
The paper (Appendix L): Spearman 0.72 on 300 operations.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.inspect.replay_validation import MODES, play_windows, replay_ops, sample_ops, summarize  # noqa: E402
from memprm.llm.notes import refuse_oracle_notes  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402

PAPER_SPEARMAN = 0.72
LABEL = {"unnormalized": "un-normalized", "normalized": "normalized by chain length",
         "cited_version": "cited-version-only"}  # fmt: skip


def load_policy(run: Path, which: str | None, cfg):
    """The run's GRPO policy (dev selection's pick) or SFT's; ``which`` None: GRPO when the run has one."""
    from memprm.models.policies import build_policy
    from memprm.models.trainable import RUN_POLICY_FILES, load_trainable_state, run_policy_state

    which = which or ("grpo" if (run / RUN_POLICY_FILES["selected"]).is_file() else "sft")
    try:
        state = run_policy_state(run, {"grpo": "selected", "sft": "sft"}[which])
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"replay_validation: {exc} (run `fit` with the {which} stage first)") from None
    policy = build_policy(cfg.policy)
    load_trainable_state(policy, state, where=str(run))
    return policy.eval(), which


def format_md(res: dict) -> str:
    s, c = res["summary"], res["cost"]
    lines = [
        f"Replay validation of chain credit ({res['policy']} policy of `{res['run']}`, {res['split']} split, "
        f"`rollout.quiz={res['quiz']}`, seed {res['seed']}): {s['all']['n']} operations replayed "
        f"({c['by_kind'].get('write', 0)} Writes, {c['by_kind'].get('merge', 0)} Merges) from "
        f"{c['windows']} of the {res['windows_played']} windows played; {c['replays']} replays (= rollouts), {c['reader_calls']} reader "
        f"calls, {c['seconds']:.0f} s; {res['orphaned_merges']} later Merges orphaned by a dropped Write.",
        "",
        "| operations | n | ΔR ≠ 0 | mean ΔR | "
        + " | ".join(f"ρ {LABEL[str(m)]} [95% CI]" for m in MODES)
        + " |",
        "|---|---|---|---|" + "---|" * len(MODES),
    ]
    for name, g in s.items():
        cells = []
        for m in map(str, MODES):
            sp = g["spearman"][m]
            cells.append("–" if sp["value"] is None else
                         f"{sp['value']:.2f} [{sp['low']:.2f}, {sp['high']:.2f}]" if sp["low"] is not None
                         else f"{sp['value']:.2f}")  # fmt: skip
        mean = "–" if g["mean_delta"] is None else f"{g['mean_delta']:+.3f}"
        lines.append(f"| {name} | {g['n']} | {g['delta_nonzero']} | {mean} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"The paper: Spearman {PAPER_SPEARMAN} between chain credit and replay marginals (300 operations).",
    ]
    return "\n".join(lines) + "\n"


def plot(ops: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MODES), figsize=(4.2 * len(MODES), 3.8), sharey=True)
    for ax, m in zip(axes, map(str, MODES), strict=True):
        for kind, colour in (("write", "tab:blue"), ("merge", "tab:orange")):
            rows = [o for o in ops if o["kind"] == kind]
            ax.scatter([o["credit"][m] for o in rows], [o["delta"] for o in rows], s=12, alpha=0.6,
                       color=colour, label=kind)  # fmt: skip
        ax.set_title(LABEL[m])
        ax.set_xlabel("chain credit of the operation")
        ax.axhline(0, color="grey", lw=0.5)
    axes[0].set_ylabel("ΔR (R − R without the operation)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--run", required=True, help="a fit run folder (config.yaml, policy_grpo.pt / policy_sft.pt)"
    )
    ap.add_argument("--ops", type=int, default=300, help="operations to replay (default 300, the paper's)")
    ap.add_argument("--seed", type=int, default=0, help="the operation sample and the bootstrap")
    ap.add_argument(
        "--policy", choices=("grpo", "sft"), default=None, help="default: grpo when the run has it"
    )
    ap.add_argument("--split", default="dev")
    ap.add_argument("--out", default="experiments/results", help="folder for replay_validation.{md,json,png}")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key.sub=value")
    args = ap.parse_args(argv)
    run = Path(args.run)
    if not (run / "config.yaml").is_file():
        raise SystemExit(
            f"replay_validation: {run / 'config.yaml'} does not exist: --run takes a fit run folder"
        )
    if args.ops < 1:
        raise SystemExit(f"replay_validation: --ops must be >= 1, got {args.ops}")
    t0 = time.perf_counter()
    cfg = load_config(run / "config.yaml", args.overrides)
    refuse_oracle_notes(cfg.notes)
    splits = load_source(cfg.data)
    if args.split not in splits.splits or not splits[args.split]:
        raise SystemExit(
            f"replay_validation: split {args.split!r} is empty or unknown; have {sorted(splits.splits)}"
        )
    stack = build_stack(cfg)
    calibrate_reader(cfg, stack, splits)
    policy, which = load_policy(run, args.policy, cfg)
    cases = play_windows(stack.env, list(splits[args.split]), policy, cfg.credit, cfg.rollout.quiz == "cumulative",
                         args.seed)  # fmt: skip
    ops, cost = replay_ops(stack.env, cases, sample_ops(cases, args.ops, args.seed))
    rows = [asdict(o) for o in ops]
    res = {
        "run": str(run), "policy": which, "split": args.split, "quiz": cfg.rollout.quiz, "seed": args.seed,
        "windows_played": len(cases), "cost": asdict(cost), "orphaned_merges": sum(o.orphaned_merges for o in ops),
        "summary": summarize(ops, args.n_boot, args.seed), "paper_spearman": PAPER_SPEARMAN, "ops": rows,
        "wall_seconds": time.perf_counter() - t0,
    }  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay_validation.json").write_text(json.dumps(res, indent=1))
    md = format_md(res)
    (out / "replay_validation.md").write_text(md)
    plot(rows, out / "replay_validation.png")
    print(md + f"wrote {out}/replay_validation.{{md,json,png}} in {res['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
