"""Held-out evaluation: several managers on the test dialogues, one table (markdown + JSON + TensorBoard)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from memprm.data.records import Dialogue
from memprm.env.evaluate import EvalResult, evaluate_manager
from memprm.env.memory_env import Manager, MemoryEnv


def evaluate_managers(
    env: MemoryEnv, dialogues: Sequence[Dialogue], managers: Mapping[str, Manager], split: str = "test"
) -> dict[str, EvalResult]:
    return {
        name: evaluate_manager(env, dialogues, m, desc=f"{split}: {name}") for name, m in managers.items()
    }


def results_table(results: Mapping[str, EvalResult], split: str = "test") -> str:
    cats = sorted({c for r in results.values() for c in r.by_category})
    head = "| manager | accuracy | " + " | ".join(cats) + " | context tokens | entries | versions/entry |"
    lines = [f"### {split} ({next(iter(results.values())).n_questions if results else 0} questions)", "", head,
             "|" + "---|" * (5 + len(cats))]  # fmt: skip
    for name, r in results.items():
        per = " | ".join(f"{100 * r.by_category.get(c, float('nan')):.1f}" for c in cats)
        lines.append(f"| {name} | {100 * r.accuracy:.1f} | {per} | {r.context_tokens:.0f} | {r.entries:.1f} | "
                     f"{r.versions_per_entry:.2f} |")  # fmt: skip
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
