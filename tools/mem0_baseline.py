"""The Mem0-style baseline (memprm/env/mem0.py) beside the fixed managers, on one split, test protocol.

    python tools/mem0_baseline.py [--config FILE] [--split dev] [--grid] [--json OUT] [key.sub=value ...]

Rows: the verbatim-only bank (Noop-only), the heuristic teacher (both read through the config's retriever,
default top-10 = event 4 + profile 3 + verbatim 3 chains) and Mem0 read flat at each ``--top-k`` (default 10
and 200). Every manager builds each dialogue's memory from empty over all its sessions; every question of the
dialogue is then answered from it by the same reader and judge (no audit). The reader's abstention
threshold is calibrated first on the dev calibration half, as in ``fit`` and ``tools/policy_gap.py``.
Printed per row: accuracy, its dialogue-clustered 95% interval, per category, entries per dialogue (managed
entries, verbatim not counted; Mem0: its facts) and mean reader context tokens per question; then Mem0's
operation counts (ADD / UPDATE / DELETE / NONE).

``--grid`` instead prints Mem0's top-10 accuracy for each (update, duplicate) threshold pair on the split:
how :class:`memprm.env.mem0.Mem0Config`'s defaults were chosen (on ``--split train``, never test).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.evaluate import EvalResult, evaluate_manager  # noqa: E402
from memprm.env.managers import noop_manager  # noqa: E402
from memprm.env.mem0 import Mem0Config, build_store, evaluate_mem0  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402

GRID_UPDATE = (0.6, 0.7, 0.8, 0.9, 1.01)  # 1.01: an event note never overwrites by similarity
GRID_DUPLICATE = (0.9, 0.95, 1.01)  # 1.01: no near-duplicate NONE


def row(r: EvalResult) -> dict:
    ci = r.interval()
    return {"accuracy": r.accuracy, "ci95": [ci.low, ci.high], "ci95_text": ci.format(), "n_questions": r.n_questions,
            "by_category": r.by_category, "entries": r.entries, "context_tokens": r.context_tokens}  # fmt: skip


def format_table(rows: dict[str, dict]) -> str:
    cats = sorted({c for r in rows.values() for c in r["by_category"]})
    head = ["manager", "accuracy", "95% CI", *cats, "entries", "context tokens"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rows.items():
        cells = [name, f"{100 * r['accuracy']:.1f}", r["ci95_text"]]
        cells += [f"{100 * r['by_category'][c]:.1f}" if c in r["by_category"] else "–" for c in cats]
        cells += [f"{r['entries']:.1f}", f"{r['context_tokens']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="a YAML config (default: the embedded default)")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--top-k", type=int, nargs="+", default=list(Mem0Config.top_k))
    ap.add_argument("--grid", action="store_true", help="print the threshold grid instead (train split only)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key.sub=value")
    args = ap.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    splits = load_source(cfg.data)
    dialogues = list(splits[args.split])
    stack = build_stack(cfg)
    cal = calibrate_reader(cfg, stack, splits)
    n_q = sum(len(d.questions) for d in dialogues)
    print(f"{cfg.data.source} {args.split}: {len(dialogues)} dialogues, {n_q} questions; reader abstention "
          f"threshold {'not calibrated' if cal is None else f'{cal.threshold:.3f} (dev calibration)'}")  # fmt: skip
    if args.grid:
        if args.split == "test":
            ap.error("--grid chooses thresholds: never on the test split")
        grid = {}
        print("| update | duplicate | Mem0 top-10 accuracy |\n|---|---|---|")
        for u in GRID_UPDATE:
            for dup in (d for d in GRID_DUPLICATE if d >= u):
                acc = evaluate_mem0(stack.env, dialogues, Mem0Config(update=u, duplicate=dup, top_k=(10,)))[
                    10
                ].accuracy
                grid[f"{u}/{dup}"] = acc
                print(f"| {u} | {dup} | {100 * acc:.1f} |")
        if args.json:
            Path(args.json).write_text(json.dumps({"split": args.split, "grid": grid}, indent=2))
        return 0
    mem0 = Mem0Config(top_k=tuple(args.top_k))
    rows = {"Noop-only (verbatim)": row(evaluate_manager(stack.env, dialogues, noop_manager, "noop")),
            "heuristic teacher": row(evaluate_manager(stack.env, dialogues, stack.teacher, "teacher"))}  # fmt: skip
    rows |= {f"Mem0 (top-{k})": row(r) for k, r in evaluate_mem0(stack.env, dialogues, mem0).items()}
    ops = Counter(op.kind for d in dialogues for op in build_store(stack.env, d, mem0).ops)
    print(format_table(rows))
    print(
        f"\nMem0 {mem0}: operations "
        + ", ".join(f"{k.upper()} {ops[k]}" for k in ("add", "update", "delete", "none"))
    )
    if args.json:
        out = {"split": args.split, "managers": rows, "mem0_ops": dict(ops), "mem0_config": repr(mem0)}
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
