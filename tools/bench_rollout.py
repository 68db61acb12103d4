"""Benchmark: rollouts per minute of the two-tower scorer + cached critic against the pair-encoder reference.

    python tools/bench_rollout.py [--groups 12] [--run runs/RUN] [--config FILE] [--json OUT] [key=value ...]

Both paths play the same ``--groups`` groups (G = ``rollout.group_size``) on the train dialogues, in the
rollout DataModule's order, after SFT on the same teacher trajectories, with the same critic:

- ``new``: ``policy.scorer=two_tower`` and ``critic.score_cache=true`` (the defaults);
- ``reference``: ``policy.scorer=pair`` and ``critic.score_cache=false`` (the path before the two-tower scorer).

The new path runs first, so the sentence embedder's cache (shared by both) favours the reference. The critic
is ``--run``'s (``critic/`` of a run folder; its teacher trajectories are reused too), otherwise an untrained
critic of the configured backbone (the same compute per input). Prints seconds per rollout by stage, MiniLM
tokens per rollout (policy and critic, padding included) and rollouts per minute; ``--json`` writes
``{"rollouts_per_min": {"new", "reference"}, "ratio", "tokens_per_rollout": {...}, "seconds_per_rollout": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PATHS = {"new": ("two_tower", True), "reference": ("pair", False)}
STAGES = ("policy", "critic", "embed", "other")


def bench_path(
    cfg, stack, splits, trajs, critic_net, critic_cfg, scorer: str, cache: bool, groups: int, work: Path
):
    """SFT a fresh policy with ``scorer``, then play ``groups`` groups; per-rollout seconds and tokens."""
    from lightning import seed_everything
    from tqdm import tqdm

    from memprm.models.critic import FrozenCritic
    from memprm.models.policies import build_policy
    from memprm.rollout.datamodule import RolloutDataModule
    from memprm.rollout.runner import GroupRunner
    from memprm.stages.sft_stage import run_sft_stage

    seed_everything(cfg.seed, verbose=False)
    policy = build_policy(replace(cfg.policy, scorer=scorer))
    t0 = time.perf_counter()
    run_sft_stage(policy, trajs, splits["train"], cfg.sft, work / scorer, cfg.seed, stack.env.notes)
    sft_s = time.perf_counter() - t0
    policy.eval()
    critic = FrozenCritic(replace(critic_cfg, score_cache=cache), critic_net)
    stack.stopwatch.seconds.clear()
    tokens0 = policy.counts.encoded_tokens
    runner = GroupRunner(
        stack.env, cfg.credit, cfg.rollout, lambda t: critic.score(list(t))[0], stack.stopwatch
    )
    dm = RolloutDataModule(runner, splits["train"], cfg.rollout_data, policy=policy)
    t0 = time.perf_counter()
    for _ in tqdm(range(groups), desc=f"rollouts ({scorer})", disable=not cfg.trainer.progress_bar):
        dm.next_group()
    wall = time.perf_counter() - t0
    n = groups * cfg.rollout.group_size
    sw = stack.stopwatch.seconds
    sec = {k: sw.get(k, 0.0) / n for k in ("policy", "critic", "embed")}
    sec["other"] = max(0.0, wall / n - sum(sec.values()))
    return {
        "seen": list(dm.seen),
        "seconds_per_rollout": sec | {"total": wall / n},
        "rollouts_per_min": 60.0 * n / wall,
        "tokens_per_rollout": {
            "policy": (policy.counts.encoded_tokens - tokens0) / n,
            "critic": critic.encoded_tokens / n,
        },
        "sft_seconds": sft_s,
    }


def table(res: dict) -> str:
    new, ref = res["new"], res["reference"]
    lines = ["| | new (two-tower, cached critic) | reference (pair encoder) |", "|---|---:|---:|"]
    for k in (*STAGES, "total"):
        lines.append(
            f"| s / rollout: {k} | {new['seconds_per_rollout'][k]:.3f} | {ref['seconds_per_rollout'][k]:.3f} |"
        )
    for k in ("policy", "critic"):
        lines.append(f"| MiniLM tokens / rollout: {k} | {new['tokens_per_rollout'][k]:.0f} | "
                     f"{ref['tokens_per_rollout'][k]:.0f} |")  # fmt: skip
    lines.append(f"| rollouts / min | {new['rollouts_per_min']:.1f} | {ref['rollouts_per_min']:.1f} |")
    lines.append(f"| SFT seconds | {new['sft_seconds']:.1f} | {ref['sft_seconds']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=12)
    ap.add_argument("--run", type=Path, default=None, help="a run folder with critic/ and teacher/train")
    ap.add_argument("--config", default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key=value")
    args = ap.parse_args()
    if args.groups < 1:
        ap.error("--groups must be >= 1")

    from memprm.config import load_config
    from memprm.data.source import load_source
    from memprm.env.stack import build_stack
    from memprm.models.critic import CriticModule, load_critic
    from memprm.stages.critic_stage import teacher_trajectories
    from memprm.timing import Stopwatch

    cfg = load_config(args.config, args.overrides)
    stack = build_stack(cfg, Stopwatch())
    splits = load_source(cfg.data)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        teacher_dir = (args.run or work) / "teacher" / "train"
        trajs = teacher_trajectories(stack, splits["train"], teacher_dir, "teacher (train)")
        if args.run is not None:
            frozen = load_critic(args.run / "critic")
        else:
            frozen = CriticModule(cfg.critic).to_frozen()
        res = {}
        for name, (scorer, cache) in PATHS.items():
            res[name] = bench_path(cfg, stack, splits, trajs, frozen.net, frozen.cfg, scorer, cache, args.groups,
                                   work)  # fmt: skip
    if res["new"].pop("seen") != res["reference"].pop("seen"):
        raise SystemExit("bench_rollout: the two paths played different (dialogue, window) sequences")
    ratio = res["new"]["rollouts_per_min"] / res["reference"]["rollouts_per_min"]
    g = cfg.rollout.group_size
    print(f"\n{args.groups} groups of G = {g} on the train dialogues, same windows for both paths\n")
    print(table(res))
    print(f"\nratio new / reference: {ratio:.2f}")
    tokens = {k: {p: sum(res[p]["tokens_per_rollout"].values()) for p in PATHS} for k in ("total",)}["total"]
    print(f"MiniLM tokens per rollout: new {tokens['new']:.0f}, reference {tokens['reference']:.0f} "
          f"({tokens['new'] / max(tokens['reference'], 1):.2f} of the reference)")  # fmt: skip
    if args.json:
        out = {
            "rollouts_per_min": {p: res[p]["rollouts_per_min"] for p in PATHS},
            "ratio": ratio,
            "tokens_per_rollout": {p: res[p]["tokens_per_rollout"] | {"total": tokens[p]} for p in PATHS},
            "seconds_per_rollout": {p: res[p]["seconds_per_rollout"] for p in PATHS},
            "groups": args.groups,
            "group_size": g,
        }
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
