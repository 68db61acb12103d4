"""Does GRPO's training signal rank memory managers the way test accuracy does?

    python tools/reward_alignment.py --run RUN [--config FILE] [--split train] [--manager NAME ...] [--no-within]
        [--json OUT] [key.sub=value ...]

Per manager (the fixed managers of ``tools/policy_gap.py`` and, when ``RUN/policy_sft.pt`` exists, the SFT
policy, greedy) the *training protocol* is played as GRPO plays it: every dialogue window by window from an
empty mainline, each window's quiz (probes + official questions, ``rollout.quiz`` of the config), exam, online
audit, Eq. (6) credit, coverage penalty and the critic's shaping (stage one's critic from ``RUN``; none with
``rollout.shaping=none``). One rollout per window: these managers are deterministic. Per manager: mean R, Σu,
Σmiss, Σs̃ per episode and the total return Σ r_t at λ = λ0 (:func:`memprm.credit.composite_rewards`), beside
the *test-protocol* accuracy of the same manager on the same dialogues (whole dialogue, then every question).
Then the Spearman across managers of each column against that accuracy.

Within groups: G rollouts per window of the heuristic teacher with ε of its actions random (a GRPO group);
per rollout its return and the accuracy of its final bank on the dialogue's official questions unlocked so far
(the test protocol's questions the bank can answer at that point); ``--target end``: instead, the accuracy on
every question of the dialogue after the heuristic teacher has played the fork's bank on through the last
session (greedy, the same for every fork): what the window's operations do to the final exam. Reported: the
mean over groups of the within-group Spearman of each column against that accuracy, and the share of groups
where it is defined.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.credit import composite_rewards  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.evaluate import evaluate_manager, greedy_manager  # noqa: E402
from memprm.env.exam import Quiz, QuizItem, ReaderCache, run_exam, unlocked_questions  # noqa: E402
from memprm.env.managers import NoisyManager, as_gate_policy, fixed_managers  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.eval.metrics import spearman  # noqa: E402
from memprm.llm.notes import refuse_oracle_notes  # noqa: E402
from memprm.memory.bank import MemoryBank  # noqa: E402
from memprm.rollout.runner import GroupRunner  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402

#: the per-rollout columns, in table order.
COLUMNS = ("R", "credit", "miss", "shaping", "return")


@dataclass(frozen=True)
class RolloutSignal:
    """One rollout's training signal: R, Σu, Σmiss, Σs̃ (unweighted) and Σ r_t at λ = λ0."""

    R: float
    credit: float
    miss: float
    shaping: float
    ret: float

    def column(self, name: str) -> float:
        return self.ret if name == "return" else float(getattr(self, name))


def signal(rollout, cfg) -> RolloutSignal:
    b = composite_rewards(
        rollout.task, rollout.credit, rollout.miss, rollout.shaping, lam=cfg.grpo.lambda0, weights=cfg.grpo.weights
    )
    return RolloutSignal(
        float(rollout.task),
        float(np.sum(rollout.credit)),
        float(np.sum(rollout.miss)),
        float(np.sum(rollout.shaping)),
        float(b.total.sum()),
    )


def play(runner: GroupRunner, cfg, dialogues, policy, on_group=None) -> list[list[RolloutSignal]]:
    """The training protocol over ``dialogues`` (module docstring): per non-empty quiz, each rollout's
    signal; ``on_group(dialogue, window, forks, batch)`` sees every rollout's final bank."""
    rng, out = np.random.default_rng(cfg.seed), []
    for d in dialogues:
        mainline, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            forks: list[MemoryBank] = []
            batch, mainline = runner.run_group(d, s.index, mainline, reference, policy, rng, greedy=True, forks=forks)
            if batch.quiz_size == 0 or batch.rollouts[0].n_steps == 0:
                continue
            out.append([signal(r, cfg) for r in batch.rollouts])
            if on_group is not None:
                on_group(d, s.index, forks, batch)
    return out


def official_accuracy(env, bank: MemoryBank, questions, cache: ReaderCache) -> float | None:
    """Accuracy of ``bank`` on ``questions`` asked as official quiz items (failed calls not counted)."""
    if not questions:
        return None
    exam = run_exam(bank, Quiz(tuple(QuizItem(q, 1.0, "official") for q in questions)), env.reader, env.judge,
                    env.retriever, cache)  # fmt: skip
    scored = [r.correct for r in exam.results if not r.failed]
    return sum(scored) / len(scored) if scored else None


def so_far_accuracy(env, dialogue, window: int, bank: MemoryBank, cache: ReaderCache) -> float | None:
    """Accuracy of ``bank`` on the dialogue's official questions unlocked through session ``window``."""
    seen = [t.id for s in dialogue.sessions if s.index <= window for t in s.turns]
    return official_accuracy(env, bank, unlocked_questions(dialogue, [], seen), cache)


def end_accuracy(env, dialogue, window: int, bank: MemoryBank, manager, cache: ReaderCache) -> float | None:
    """Accuracy on every question of ``dialogue`` of a copy of ``bank`` after ``manager`` has played the
    sessions after ``window`` on it (the test protocol's exam, given the bank at the window's end)."""
    bank = bank.fork()
    for s in dialogue.sessions:
        if s.index > window:
            env.play_window(dialogue, s.index, bank, manager)
    return official_accuracy(env, bank, dialogue.questions, cache)


def manager_table(cfg, stack, runner, dialogues, managers: dict) -> dict[str, dict]:
    """Per manager: mean of each column over its episodes and the test-protocol accuracy."""
    rows = {}
    for name, manager in tqdm(managers.items(), desc="managers", unit="manager"):
        policy = as_gate_policy(manager)
        flat = [g[0] for g in play(runner, cfg, dialogues, policy)]
        acc = evaluate_manager(stack.env, dialogues, greedy_manager(policy), desc=name, progress=False)
        rows[name] = {c: float(np.mean([r.column(c) for r in flat])) if flat else float("nan") for c in COLUMNS}
        rows[name] |= {"episodes": len(flat), "accuracy": acc.accuracy}
    return rows


def alignment(rows: dict[str, dict]) -> dict[str, dict]:
    """Spearman across managers of each column against test-protocol accuracy (NaN with a reason if undefined)."""
    acc = [r["accuracy"] for r in rows.values()]
    return {c: spearman([r[c] for r in rows.values()], acc).to_dict() for c in COLUMNS}


def within_groups(cfg, stack, runner, dialogues, group: int, epsilon: float, target: str = "so_far") -> dict:
    """Mean within-group Spearman of each column vs each fork's ``target`` accuracy (module docstring):
    ``so_far`` (:func:`so_far_accuracy`) or ``end`` (:func:`end_accuracy`, the teacher continuing)."""
    cache = ReaderCache(stack.env.reader, stack.env.judge)
    per_column: dict[str, list[float]] = {c: [] for c in COLUMNS}
    n_groups, kept = 0, []

    def on_group(d, window, forks, batch):
        nonlocal n_groups
        if target == "end":
            acc = [end_accuracy(stack.env, d, window, b, stack.teacher, cache) for b in forks]
        else:
            acc = [so_far_accuracy(stack.env, d, window, b, cache) for b in forks]
        if any(a is None for a in acc):
            return
        n_groups += 1
        sig = [signal(r, cfg) for r in batch.rollouts]
        kept.append([{c: s.column(c) for c in COLUMNS} | {"accuracy": a} for s, a in zip(sig, acc, strict=True)])
        for c in COLUMNS:
            rho = spearman([s.column(c) for s in sig], acc)
            if rho.defined:
                per_column[c].append(rho.value)

    wide = GroupRunner(stack.env, cfg.credit, replace(cfg.rollout, group_size=group), runner.critic, stack.stopwatch)
    play(wide, cfg, tqdm(dialogues, desc="groups", unit="dialogue", leave=False),
         NoisyManager(stack.teacher, epsilon, cfg.seed), on_group)  # fmt: skip
    out = {
        c: {"mean_spearman": float(np.mean(v)) if v else float("nan"), "defined": len(v), "groups": n_groups}
        for c, v in per_column.items()
    }
    return out | {"rollouts": kept, "target": target}


def critic_scorer(run_dir: Path | None, cfg):
    """Stage one's critic φ from ``run_dir`` (None without a run or with ``rollout.shaping=none``)."""
    if run_dir is None or cfg.rollout.shaping == "none":
        return None
    from memprm.stages.critic_stage import load_critic_stage

    critic = load_critic_stage(run_dir).critic
    return lambda texts: critic.score(list(texts))[0]


def sft_policy(run_dir: Path | None, cfg):
    """The SFT policy of ``run_dir`` (``policy_sft.pt``), or None when the run has none."""
    if run_dir is None or not (run_dir / "policy_sft.pt").is_file():
        return None
    from memprm.models.policies import build_policy
    from memprm.models.trainable import load_trainable

    policy = build_policy(cfg.policy)
    load_trainable(policy, run_dir / "policy_sft.pt")
    return policy.eval()


def format_report(rows: dict, spear: dict, within: dict) -> str:
    head = ["manager", "test-protocol acc", "R", "Σu", "Σmiss", "Σs̃", "return", "episodes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rows.items():
        cells = [f"{100 * r['accuracy']:.1f}"] + [f"{r[c]:.3f}" for c in COLUMNS] + [str(r["episodes"])]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    lines.append("| Spearman vs accuracy (across managers) | | "
                 + " | ".join(_fmt(spear[c]["value"]) for c in COLUMNS) + " | |")  # fmt: skip
    lines.append("| mean within-group Spearman vs fork accuracy | | "
                 + " | ".join(_fmt(within[c]["mean_spearman"]) for c in COLUMNS) + " | |")  # fmt: skip
    return "\n".join(lines)


def _fmt(v) -> str:
    return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.2f}"


def keep_managers(managers: dict, names: list[str] | None) -> dict:
    """The line-up restricted to ``names`` (in the line-up's order); all of it for ``None``."""
    if names is None:
        return managers
    unknown = [n for n in names if n not in managers]
    if unknown:
        raise SystemExit(f"reward_alignment: no manager named {unknown}; the line-up: {list(managers)}")
    return {name: m for name, m in managers.items() if name in names}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="a YAML config (default: the embedded default)")
    ap.add_argument("--run", default=None, help="a run folder with stage one's critic (and policy_sft.pt)")
    ap.add_argument("--split", default="train", help="the dialogues played (default: GRPO's train split)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--epsilon", type=float, default=0.3)
    ap.add_argument("--no-oracle", action="store_true", help="skip the oracle (data without fact annotations)")
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--within-only", action="store_true", help="only the within-group part (no manager table)")
    part.add_argument("--no-within", action="store_true", help="only the manager table (no teacher-with-ε groups)")
    ap.add_argument("--manager", action="append", default=None, metavar="NAME",
                    help="keep only this manager of the line-up (repeatable; default: all)")  # fmt: skip
    ap.add_argument("--target", choices=("so_far", "end"), default="so_far",
                    help="within groups, rank forks against: so_far (questions unlocked so far) or end (the "
                         "whole dialogue's exam after the teacher plays the rest)")  # fmt: skip
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key.sub=value")
    args = ap.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    refuse_oracle_notes(cfg.notes)  # gold facts on offer as notes would lift every manager's signal
    splits = load_source(cfg.data)
    dialogues = list(splits[args.split])
    stack = build_stack(cfg)
    calibrate_reader(cfg, stack, splits)
    run_dir = Path(args.run) if args.run else None
    runner = GroupRunner(stack.env, cfg.credit, replace(cfg.rollout, group_size=1), critic_scorer(run_dir, cfg),
                         stack.stopwatch)  # fmt: skip
    oracle_dialogues = None if args.no_oracle else dialogues
    managers = fixed_managers(stack.teacher, cfg.policy.merge_candidates, oracle_dialogues)
    policy = sft_policy(run_dir, cfg)
    if policy is not None:
        managers["SFT policy"] = policy
    managers = keep_managers(managers, args.manager)
    rows = {} if args.within_only else manager_table(cfg, stack, runner, dialogues, managers)
    spear = alignment(rows) if rows else {c: {"value": None} for c in COLUMNS}
    if args.no_within:
        within = {c: {"mean_spearman": None} for c in COLUMNS}
    else:
        within = within_groups(cfg, stack, runner, dialogues, args.group, args.epsilon, args.target)
    print(f"{cfg.data.source} {args.split}: {len(dialogues)} dialogues; rollout.quiz={cfg.rollout.quiz}, "
          f"shaping={cfg.rollout.shaping if runner.critic else 'none'}, λ0={cfg.grpo.lambda0}")  # fmt: skip
    print(format_report(rows, spear, within))
    if args.json:
        out = {"managers": rows, "spearman_vs_accuracy": spear, "within_group": within, "split": args.split,
               "quiz": cfg.rollout.quiz, "shaping": cfg.rollout.shaping if runner.critic else "none"}  # fmt: skip
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
