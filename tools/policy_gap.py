"""How far apart can memory managers be on this testbed? Fixed managers, one split, exam + audit each.

    python tools/policy_gap.py [--config FILE] [--split test] [--json OUT] [key.sub=value ...]

Managers (:mod:`memprm.env.managers`): Noop-only (the verbatim layer alone), Write-all (every turn copied),
random (3 seeds, uniform over the scoring policy's candidates), the heuristic teacher (rule notes), and the
oracle (the data's fact annotations as notes, updates merged into their chain; synthetic facts or LoCoMo's
``observation`` lists). Each builds every dialogue's bank from empty over all its sessions; then every
question of the dialogue is answered from the final bank (the test protocol of ``fit``) and audited
(deletion tests on the managed entries cited on correct answers, Eq. 6's flips).

Printed per manager: accuracy (overall, its 95% interval clustered by dialogue, and per category), deletion
flips / entries tested, managed entries and versions per entry per dialogue, mean reader context tokens. Then the *group tie rate*: the share of
G = 4 groups (one per dialogue window, as GRPO rolls them out) whose exam accuracy R ties across the 4 forks
when each fork is the teacher with ε = 0.3 of its actions replaced by random candidates.

The reader's abstention threshold is calibrated on the dev calibration half first (the run's protocol, on the
banks ``reader.calibrate_with`` names; the value is printed), or with ``--per-manager-calibration`` for each
manager on its own banks (a threshold column). ``reader.time_order=true`` measures the timestamp-aware
reader. ``--json OUT`` writes ``{"managers": {name: {"accuracy", "ci95": [low, high], "flips", "tested",
...}}, "tie_rate": float, "calibration": str, "time_order": bool, ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.credit import CreditConfig  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.calibration import calibrate_abstention  # noqa: E402
from memprm.env.evaluate import evaluate_manager  # noqa: E402
from memprm.env.managers import NoisyManager, fixed_managers  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.memory.bank import MemoryBank  # noqa: E402
from memprm.rollout.runner import GroupRunner, RolloutConfig  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402


def measure(stack, dialogues, manager, name: str) -> dict:
    """Accuracy, audit counts and bank size of ``manager`` on ``dialogues`` (module docstring)."""
    r = evaluate_manager(stack.env, dialogues, manager, desc=name, audit=True)
    keys = ("accuracy", "n_questions", "by_category", "flips", "tested", "entries", "versions_per_entry",
            "context_tokens")  # fmt: skip
    ci = r.interval()
    return {k: getattr(r, k) for k in keys} | {"ci95": [ci.low, ci.high], "ci95_text": ci.format()}


def tie_rate(stack, dialogues, group: int, epsilon: float, seed: int = 0) -> tuple[float, int]:
    """(share of tied groups, groups) over every window of ``dialogues`` (module docstring)."""
    rng = np.random.default_rng(seed)
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=group))
    policy = NoisyManager(stack.teacher, epsilon, seed)
    ties = total = 0
    for d in tqdm(dialogues, desc="groups", unit="dialogue", leave=False):
        mainline, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            batch, mainline = runner.run_group(d, s.index, mainline, reference, policy, rng)
            if batch.quiz_size == 0:
                continue
            r = [ro.task for ro in batch.rollouts]
            ties += int(max(r) - min(r) < 1e-12)
            total += 1
    return (ties / total if total else float("nan")), total


def format_table(results: dict[str, dict]) -> str:
    cats = sorted({c for r in results.values() for c in r["by_category"]})
    per_manager = any("abstain_threshold" in r for r in results.values())
    head = ["manager", "accuracy", "95% CI", *(["threshold"] * per_manager), *cats, "flips / tested", "entries", "versions/entry", "context tokens"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in results.items():
        row = [name, f"{100 * r['accuracy']:.1f}", r.get("ci95_text", "–")]
        if per_manager:
            row.append(f"{r['abstain_threshold']:.3f}")
        row += [f"{100 * r['by_category'][c]:.1f}" if c in r["by_category"] else "–" for c in cats]
        share = f" ({100 * r['flips'] / r['tested']:.0f}%)" if r["tested"] else ""
        row += [f"{r['flips']} / {r['tested']}{share}", f"{r['entries']:.1f}", f"{r['versions_per_entry']:.2f}",
                f"{r['context_tokens']:.0f}"]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="a YAML config (default: the embedded default)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--dialogues", type=int, nargs="*", default=None,
                    help="indices into the split (default: all)")  # fmt: skip
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--epsilon", type=float, default=0.3)
    ap.add_argument("--no-oracle", action="store_true", help="skip the oracle (data without fact annotations)")
    ap.add_argument("--per-manager-calibration", action="store_true",
                    help="calibrate the reader on each manager's own dev-calibration banks before measuring it "
                         "(default: once, on the banks reader.calibrate_with names)")  # fmt: skip
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key.sub=value")
    args = ap.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    splits = load_source(cfg.data)
    dialogues = list(splits[args.split])
    if args.dialogues:
        dialogues = [dialogues[i] for i in args.dialogues]
    stack = build_stack(cfg)
    cal = calibrate_reader(cfg, stack, splits)
    per_manager = args.per_manager_calibration and cal is not None
    # the oracle also plays the dev-calibration dialogues when it calibrates on its own banks
    oracle_dialogues = None if args.no_oracle else dialogues + (list(splits["dev_calibration"]) * per_manager)
    managers = fixed_managers(stack.teacher, cfg.policy.merge_candidates, oracle_dialogues)
    results = {}
    for name, m in managers.items():
        if per_manager:
            own = calibrate_abstention(stack.env, splits["dev_calibration"], m)
            results[name] = measure(stack, dialogues, m, name) | {"abstain_threshold": own.threshold,
                                                                   "overlap_weight": own.overlap_weight}  # fmt: skip
        else:
            results[name] = measure(stack, dialogues, m, name)
    if per_manager:  # the tie rate plays the teacher: its own calibration
        calibrate_abstention(stack.env, splits["dev_calibration"], stack.teacher)
    rate, groups = tie_rate(stack, dialogues, args.group, args.epsilon)
    n_q = sum(len(d.questions) for d in dialogues)
    calibrated = ("per manager, on its own dev-calibration banks" if per_manager
                  else "none" if cal is None else f"on the {cfg.reader.calibrate_with} banks")  # fmt: skip
    print(f"{cfg.data.source} {args.split}: {len(dialogues)} dialogues, {n_q} questions; reader "
          f"{'time-ordered' if cfg.reader.time_order else 'chain-aware'}, calibrated {calibrated}")  # fmt: skip
    print(format_table(results))
    print(f"\ngroup tie rate (G={args.group}, teacher with eps={args.epsilon}): {rate:.3f} over {groups} groups")
    if cal is not None and not per_manager:
        print(f"reader abstention threshold (dev calibration): {cal.threshold:.3f}")
    if args.json:
        out = {"managers": results, "tie_rate": rate, "groups": groups, "split": args.split,
               "abstain_threshold": None if cal is None or per_manager else cal.threshold,
               "calibration": calibrated, "time_order": cfg.reader.time_order}  # fmt: skip
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
