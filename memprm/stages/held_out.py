"""Held-out evaluation: several managers on the test dialogues, one table (markdown + JSON + TensorBoard)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from memprm.data.records import Dialogue
from memprm.env.evaluate import EvalResult, evaluate_manager, greedy_manager
from memprm.env.memory_env import Manager, MemoryEnv
from memprm.inspect.trail import TEST_TRAIL, TrailRecorder
from memprm.models.trainable import load_trainable_state, run_policy_state, trainable_state
from memprm.stages.run_context import Run, StageResult


def evaluate_managers(
    env: MemoryEnv, dialogues: Sequence[Dialogue], managers: Mapping[str, Manager], split: str = "test"
) -> dict[str, EvalResult]:
    return {
        name: evaluate_manager(env, dialogues, m, desc=f"{split}: {name}") for name, m in managers.items()
    }


def results_table(results: Mapping[str, EvalResult], split: str = "test") -> str:
    cats = sorted({c for r in results.values() for c in r.by_category})
    head = "| manager | accuracy | 95% CI | " + " | ".join(cats)
    head += " | context tokens | entries | versions/entry | evidence kept |"
    first = next(iter(results.values()), None)
    lines = [
        f"### {split} ({first.n_questions if first else 0} questions, "
        f"{len(first.per_dialogue) if first else 0} dialogues; 95% CI clustered by dialogue)",
        "",
        head,
        "|" + "---|" * (7 + len(cats)),
    ]
    for name, r in results.items():
        per = " | ".join(f"{100 * r.by_category.get(c, float('nan')):.1f}" for c in cats)
        kept = "–" if r.evidence_kept is None else f"{100 * r.evidence_kept:.1f}"
        lines.append(
            f"| {name} | {100 * r.accuracy:.1f} | {r.interval().format()} | {per} | {r.context_tokens:.0f} | {r.entries:.1f} | "
            f"{r.versions_per_entry:.2f} | {kept} |"
        )
    return "\n".join(lines)


def write_results(results: Mapping[str, EvalResult], run_dir: Path, split: str = "test") -> str:
    table = results_table(results, split)
    (run_dir / f"{split}_results.md").write_text(table + "\n")
    (run_dir / f"{split}_results.json").write_text(
        json.dumps({k: asdict(v) for k, v in results.items()}, indent=2)
    )
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(run_dir / "tb" / split)) as w:
        w.add_text(f"{split}/results", table)
        for name, r in results.items():
            for k, v in r.as_metrics(f"{split}/{name}").items():
                w.add_scalar(k, v, 0)
    return table


def test(cfg, run: Run) -> StageResult:
    """The test stage of ``run``: its table reloaded when done under its key, else every policy state the run
    has (untrained, SFT, GRPO) and the heuristic teacher on the test dialogues, audited into
    ``test_audit.jsonl`` (:func:`evaluate_states`). ``cfg``: a :class:`memprm.config.MemprmConfig`."""
    if run.reusable("test", "test stage", "test_results.json"):
        saved = json.loads((run.dir / "test_results.json").read_text())
        run.out.test = {k: EvalResult(**v) for k, v in saved.items()}
        run.out.table = (run.dir / "test_results.md").read_text().rstrip("\n")
        return StageResult(
            "test", True, "test stage: done earlier with this config; its table:\n" + run.out.table
        )
    run.markers.clear("test")
    with run.measure("test"):
        run.out.test = evaluate_states(cfg, run)
        run.out.table = write_results(run.out.test, run.dir, "test")
    run.markers.write(run.keys["test"])
    return StageResult("test", False, run.out.table)


def evaluate_states(cfg, run: Run) -> dict[str, EvalResult]:
    """Test accuracy of every policy state the run has, beside the heuristic teacher (``fit.test_baselines``;
    else the GRPO states only, or the final state without GRPO); every exam is audited into
    ``test_audit.jsonl``, with the critic's φ at each gate when the run has a critic. GRPO's states are dev
    selection's pick, ``GRPO (<arm>)``, and, when dev selection kept an earlier step, where training ended,
    ``GRPO (<arm>) last step <n>``: so a kept step 0 never hides what training did. The policy is left as
    training left it."""
    critic = run.out.critic
    trail = TrailRecorder(cfg.credit, critic.critic.score if critic is not None else None)
    current = trainable_state(run.policy)
    states = {"untrained": run.snapshots["untrained"]}
    if "sft" in cfg.fit.stages and cfg.sft.steps > 0:
        states["SFT"] = run.snapshots["SFT"]
    grpo = {f"GRPO ({cfg.arm})": current, **_last_step(cfg, run)} if "grpo" in cfg.fit.stages else {}
    env, test_dialogues = run.stack.env, run.splits["test"]
    results = {}
    if cfg.fit.test_baselines:
        observer = trail.observer("heuristic teacher")
        teacher = run.stack.teacher
        results["heuristic teacher"] = evaluate_manager(
            env, test_dialogues, teacher, "test: teacher", audit=True, on_dialogue=observer
        )
        states |= grpo
    else:  # the run's final policy only (GRPO's two states when it has them)
        states = grpo or dict([list(states.items())[-1]])
    for name, state in states.items():
        load_trainable_state(run.policy, state)
        manager = greedy_manager(run.policy)
        results[name] = evaluate_manager(
            env, test_dialogues, manager, f"test: {name}", audit=True, on_dialogue=trail.observer(name)
        )
    load_trainable_state(run.policy, current)
    trail.write(run.dir / TEST_TRAIL)
    return results


def _last_step(cfg, run: Run) -> dict[str, dict]:
    """``{"GRPO (<arm>) last step <n>": state}`` when dev selection kept a step before GRPO's last, else {}."""
    out = run.out.grpo
    if out is None or out.best_step is None or out.best_step == out.steps:
        return {}
    return {f"GRPO ({cfg.arm}) last step {out.steps}": run_policy_state(run.dir, "last")}
