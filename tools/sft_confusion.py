"""How well SFT imitates the teacher: greedy confusion on the teacher's own train gates, per SFT setting.

    python tools/sft_confusion.py runs/<run> 0:400:0.03 0.5:400:0.03 1:400:0.03 [--config F] [key=value ...]

``runs/<run>`` is a run folder holding stage one (``teacher/train``; ``python -m memprm fit
fit.stages=[critic]`` makes one). Each ``balance:steps:lr`` trains the policy's head from zero with
:func:`memprm.stages.sft_stage.train_sft` on the teacher's samples, weighted by ``balance_weights(kinds,
balance)``, then prints, for each teacher action kind, what the greedy policy picks at those gates, and the
per-kind recall. With the frozen-encoder default the pooled features are computed once and shared by every
setting, so only the head is retrained (``--trainable``: which of its weights, as ``sft.trainable``).
Training gates are the teacher's own: this measures imitation (can the head represent the teacher's
choices), not generalization. ``--on dev`` scores the trained head on the
teacher's *dev* gates instead (``teacher/dev`` of the run: dialogues SFT never saw): generalization. The
``same choice`` column is the share of a kind's gates where the greedy pick is the teacher's very candidate
(for a Merge: the same target entry, not only some Merge).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = ("noop", "write", "merge")


def greedy_pick(policy, sample) -> tuple[str, bool]:
    """The kind of the candidate the policy ranks first at ``sample``'s gate (ties: the lowest index), and
    whether it is the sample's own choice (the teacher's candidate)."""
    from dataclasses import replace

    alts = [replace(sample, choice=j) for j in range(len(sample.candidates))]
    j = int(torch.argmax(policy.log_probs(alts)[0]))
    # candidate texts start with "noop:", "write:" or "merge:"
    return sample.candidates[j].split(":", 1)[0], j == sample.choice


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("settings", nargs="+", help="balance:steps:lr")
    ap.add_argument("--on", choices=("train", "dev"), default="train", help="score on the teacher's train or dev gates")
    ap.add_argument(
        "--trainable", choices=("all", "structural", "kinds"), default=None,
        help="which head weights SFT trains (default: the config's sft.trainable)",
    )  # fmt: skip
    ap.add_argument("--config", default=None)
    ap.add_argument("--overrides", nargs="*", default=[])
    args = ap.parse_args()

    from memprm.config import load_config
    from memprm.data.source import load_source
    from memprm.env.stack import build_stack
    from memprm.models.policies import build_policy
    from memprm.models.sft import balance_weights
    from memprm.stages.critic_stage import teacher_trajectories
    from memprm.stages.sft_stage import samples_and_kinds, train_sft
    from memprm.timing import Stopwatch

    cfg = load_config(args.config, args.overrides)
    if cfg.policy.lora_rank != 0:
        raise SystemExit(
            "sft_confusion: retrains the head only; needs the frozen-encoder policy (lora.rank 0)"
        )
    settings = []
    for spec in args.settings:
        try:
            b, steps, lr = spec.split(":")
            settings.append((spec, float(b), int(steps), float(lr)))
        except ValueError as e:
            raise SystemExit(f"sft_confusion: setting {spec!r} is not balance:steps:lr ({e})") from e
    splits = load_source(cfg.data)
    stack = build_stack(cfg, Stopwatch())
    policy = build_policy(cfg.policy)

    def gates(split: str):
        trajs = teacher_trajectories(stack, splits[split], args.run_dir / "teacher" / split, f"teacher ({split})")
        pairs = samples_and_kinds(policy, trajs, splits[split])
        return [s for s, _ in pairs], [k for _, k in pairs]

    samples, kinds = gates("train")
    scored, scored_kinds = gates(args.on) if args.on != "train" else (samples, kinds)
    print(f"teacher {args.on} gates: {len(scored)} ({', '.join(f'{k} {Counter(scored_kinds)[k]}' for k in KINDS)})\n")
    print("| balance:steps:lr | final loss | teacher kind | → noop | → write | → merge | recall | same choice |")
    print("|---|---|---|---|---|---|---|---|")
    for spec, balance, steps, lr in settings:
        torch.nn.init.zeros_(policy.head.weight)
        torch.nn.init.zeros_(policy.head.bias)
        w = balance_weights(kinds, balance)
        losses = train_sft(
            policy, samples, steps, lr, cfg.sft.batch_size, cfg.seed, weights=w, progress=False,
            trainable=args.trainable or cfg.sft.trainable,
        )  # fmt: skip
        conf, same = Counter(), Counter()
        with torch.no_grad():
            for s, k in zip(scored, scored_kinds, strict=True):
                picked, exact = greedy_pick(policy, s)
                conf[(k, picked)] += 1
                same[k] += exact
        for k in KINDS:
            n = sum(conf[(k, p)] for p in KINDS)
            recall = f"{100 * conf[(k, k)] / n:.0f}%" if n else "n/a"
            exact = f"{100 * same[k] / n:.0f}%" if n else "n/a"
            cells = " | ".join(str(conf[(k, p)]) for p in KINDS)
            print(f"| {spec} | {losses[-1]:.3f} | {k} | {cells} | {recall} | {exact} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
