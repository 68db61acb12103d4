"""Did training improve the manager? A run's SFT and GRPO policies on fresh synthetic dialogues, paired.

    python tools/eval_run.py runs/RUN [runs/RUN2 ...] [--fresh 10] [--policies sft,last,selected] [--json OUT]

Dev selection reads 54 questions, where one question is 1.9 points and recipes differ by one or two; the
test split must not choose recipes. This tool plays each policy greedily (the test protocol: every
dialogue's bank built from empty, every question answered from the final bank) on ``--fresh`` synthetic
dialogues no split of the run holds (indices after its RL dialogues: the generator makes each dialogue from
its index alone), so a recipe can be chosen on ~50 questions per dialogue × ``--fresh``, with intervals
clustered by dialogue and paired tests against the run's own SFT policy:

- ``sft``: ``policy_sft.pt``; ``selected``: ``policy_grpo.pt`` (dev selection's pick); ``last``: where
  training ended, ``grpo/last_policy.pt`` (older runs: ``grpo/checkpoints/last.ckpt``); the cleanest answer
  to "did training help".

``--shift "merge/event=-4,merge/profile=-4"`` (repeatable) adds a row of the SFT policy with those of the head's
16 text-free weights (:func:`memprm.models.two_tower.structural_names`) moved by the given amounts: what a
direction in that space is worth, the ceiling a ``grpo.trainable=kinds`` run can reach along it. ``--teacher``
adds the heuristic teacher (the manager SFT imitates) on the same dialogues; ``--oracles`` the annotation oracle
(gold notes) and the gold-decision manager (:class:`~memprm.env.managers.GoldDecisionManager`: the annotations
decide, the note writer's notes are written; the ceiling of a policy over the same notes), then with one of
its two decisions (whether to store, where to merge) taken by the teacher's rule instead. ``--oracle-notes``
adds the teacher and the key-merging manager (store = notes, merge = key) played with the annotation notes
in place of the note writer's: how far the key direction could lead with a perfect note writer (analysis
only: annotations are read).

Each run is read with its own ``config.yaml`` and reader calibration; synthetic runs only. Printed: one
table row per (run, policy) with accuracy, 95% interval, per category, entries, versions per entry and,
for GRPO policies, the mean per-dialogue difference to SFT with the sign test and the paired sign-flip
permutation p-value (one-sided, GRPO > SFT) over the fresh dialogues.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.evaluate import EvalResult, evaluate_manager, greedy_manager  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.eval.significance import paired_permutation, sign_test  # noqa: E402
from memprm.llm.notes import refuse_oracle_notes  # noqa: E402
from memprm.models.trainable import RUN_POLICY_FILES, load_trainable_state, run_policy_state  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402


def fresh_overrides(cfg, n: int) -> list[str]:
    """Overrides that make the synthetic source generate ``n`` more RL dialogues (the fresh ones)."""
    if cfg.data.source != "synthetic":
        raise SystemExit(f"eval_run: fresh dialogues need data.source=synthetic, this run uses {cfg.data.source!r}")
    return [f"data.synthetic.n_rl={cfg.data.synthetic.n_rl + n}"]


def policy_state(run: Path, which: str) -> dict[str, torch.Tensor]:
    """The trainable state of the run's ``which`` policy; a missing or wrong file exits naming it."""
    try:
        return run_policy_state(run, which)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"eval_run: {exc}") from None


def parse_shift(spec: str) -> dict[str, float]:
    """``"merge/event=-4,rank 0=1"`` -> {name: amount}; names from ``structural_names()``."""
    from memprm.models.two_tower import structural_names

    out = {}
    for part in filter(None, (p.strip() for p in re.split(r",(?![^()]*\))", spec))):  # not "cos(c,t)"'s comma
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in structural_names() or not value:
            raise SystemExit(f"eval_run: --shift {spec!r}: {part!r} is not NAME=AMOUNT with NAME in {structural_names()}")
        try:
            out[name] = float(value)
        except ValueError:
            raise SystemExit(f"eval_run: --shift {spec!r}: {value!r} is not a number") from None
    if not out:
        raise SystemExit(f"eval_run: --shift {spec!r} names no weight")
    return out


def shifted(state: dict[str, torch.Tensor], shift: dict[str, float]) -> dict[str, torch.Tensor]:
    """A copy of a scoring policy's trainable state with the named structural head weights moved."""
    from memprm.models.two_tower import structural_names

    if "head.weight" not in state:
        raise SystemExit("eval_run: --shift needs a scoring policy with the two-tower head ('head.weight')")
    head = state["head.weight"].clone()
    for name, amount in shift.items():
        head[..., structural_names().index(name)] += amount
    return {**state, "head.weight": head}


def paired(result: EvalResult, base: EvalResult) -> dict:
    """Per-dialogue accuracy differences to ``base`` on the same dialogues: mean, sign test, permutation."""
    ids = sorted(base.per_dialogue)
    a = [result.per_dialogue[i] for i in ids]
    b = [base.per_dialogue[i] for i in ids]
    sign, perm = sign_test(a, b), paired_permutation(a, b)
    wins = int(sign.statistic)
    return {"diff": perm.statistic, "wins": wins, "untied": sign.n, "p_sign": sign.p_value, "p_perm": perm.p_value}


def evaluate_run(
    run: Path,
    fresh: int,
    policies: list[str],
    overrides: list[str],
    on_row=None,
    shifts: list[str] = (),
    teacher: bool = False,
    oracles: bool = False,
    oracle_notes: bool = False,
) -> list[dict]:
    """Rows for one run: each policy of ``policies``, then SFT moved by each of ``shifts``, then (``teacher``)
    the heuristic teacher, then (``oracles``) the two annotation managers, then (``oracle_notes``) the teacher
    and key merging over the annotation notes, played on the run's ``fresh`` fresh dialogues; ``on_row(row)``
    is called as each one is done."""
    from memprm.env.managers import GoldDecisionManager, OracleManager, as_gate_policy
    from memprm.llm.notes import CachedNotes, OracleNoteWriter
    from memprm.models.policies import build_policy

    if not (run / "config.yaml").is_file():
        raise SystemExit(f"eval_run: {run / 'config.yaml'} does not exist: pass fit run folders")
    cfg = load_config(run / "config.yaml", overrides)
    refuse_oracle_notes(cfg.notes)
    n_rl = cfg.data.synthetic.n_rl if cfg.data.source == "synthetic" else 0
    cfg = load_config(run / "config.yaml", [*overrides, *fresh_overrides(cfg, fresh)])
    splits = load_source(cfg.data)
    dialogues = list(splits["rl"])[n_rl:]
    stack = build_stack(cfg)
    calibrate_reader(cfg, stack, splits)
    rows: list[dict] = []
    wanted = [(w, policy_state(run, w)) for w in policies]
    if shifts:
        sft = policy_state(run, "sft")
        wanted += [(f"sft+[{spec}]", shifted(sft, parse_shift(spec))) for spec in shifts]
    if teacher:
        wanted.append(("heuristic teacher", stack.teacher))
    if oracles:
        wanted.append(("oracle (annotations)", OracleManager(dialogues)))
        for store, merge in (("gold", "gold"), ("gold", "cosine"), ("notes", "gold"), ("notes", "key")):
            manager = GoldDecisionManager(dialogues, cfg.policy.merge_candidates, store=store, merge=merge,
                                          embedder=stack.embedder, merge_threshold=cfg.teacher.merge_threshold)
            wanted.append((f"gold decisions: store={store}, merge={merge}", manager))
    base = None

    def play(which: str, state) -> None:
        nonlocal base
        if callable(state):  # a fixed manager
            policy = as_gate_policy(state)
        else:
            policy = build_policy(cfg.policy).eval()
            load_trainable_state(policy, state, where=f"{run} {which}")
        res = evaluate_manager(stack.env, dialogues, greedy_manager(policy), desc=f"{run.name} {which}")
        ci = res.interval()
        row = {
            "run": str(run), "policy": which, "accuracy": res.accuracy, "ci95": [ci.low, ci.high],
            "n_questions": res.n_questions, "dialogues": len(dialogues), "by_category": res.by_category,
            "entries": res.entries, "versions_per_entry": res.versions_per_entry,
        }  # fmt: skip
        if which == "sft":
            base = res
        elif base is not None:
            row["vs_sft"] = paired(res, base)
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for which, state in wanted:
        play(which, state)
    if oracle_notes:  # the same managers' rows, with the annotation notes in place of the run's note writer
        key_merge = GoldDecisionManager([], cfg.policy.merge_candidates, store="notes", merge="key")
        run_notes, stack.env.notes = stack.env.notes, CachedNotes(OracleNoteWriter())
        try:
            for name, manager in (("teacher", stack.teacher), ("store=notes, merge=key", key_merge)):
                play(f"annotation notes: {name}", manager)
        finally:
            stack.env.notes = run_notes
    return rows


def markdown(rows: list[dict]) -> str:
    cats = sorted({c for r in rows for c in r["by_category"]})
    head = ["run", "policy", "accuracy", "95% CI", *cats, "entries", "versions/entry", "− SFT (wins/untied, p sign, p perm)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [Path(r["run"]).name, r["policy"], f"{100 * r['accuracy']:.1f}",
                 f"{100 * r['ci95'][0]:.1f}–{100 * r['ci95'][1]:.1f}"]  # fmt: skip
        cells += [f"{100 * r['by_category'][c]:.1f}" if c in r["by_category"] else "–" for c in cats]
        cells += [f"{r['entries']:.1f}", f"{r['versions_per_entry']:.2f}"]
        v = r.get("vs_sft")
        cells.append(
            f"{100 * v['diff']:+.1f} ({v['wins']}/{v['untied']}, {v['p_sign']:.2f}, {v['p_perm']:.2f})" if v else "–"
        )
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="fit run folders")
    ap.add_argument("--fresh", type=int, default=10, help="fresh dialogues (default 10)")
    ap.add_argument("--policies", default="sft,last,selected", help="comma-separated: sft, last, selected")
    ap.add_argument("--shift", action="append", default=[], help='SFT with head weights moved: "merge/event=-4,..."')
    ap.add_argument("--teacher", action="store_true", help="also the heuristic teacher (the imitated manager)")
    ap.add_argument("--oracles", action="store_true", help="also the annotation oracle and the gold-decision manager")
    ap.add_argument("--oracle-notes", action="store_true",
                    help="also the teacher and key merging over the annotation notes (a perfect note writer)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--set", dest="overrides", nargs="*", default=[], help="dotted config overrides for every run")
    args = ap.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = sorted(set(policies) - set(RUN_POLICY_FILES))
    if unknown or not policies:
        raise SystemExit(f"eval_run: --policies takes {sorted(RUN_POLICY_FILES)}, got {args.policies!r}")
    if args.shift and "sft" not in policies:
        raise SystemExit("eval_run: --shift rows are paired against SFT: add sft to --policies")
    for spec in args.shift:
        parse_shift(spec)  # a typo fails before minutes of loading
    if args.fresh < 1:
        raise SystemExit(f"eval_run: --fresh must be >= 1, got {args.fresh}")
    rows: list[dict] = []

    def keep(row: dict) -> None:  # print and save each row as it comes
        rows.append(row)
        print(markdown([row]).splitlines()[-1], flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")

    for run in args.runs:
        evaluate_run(run, args.fresh, policies, args.overrides, on_row=keep, shifts=args.shift, teacher=args.teacher,
                     oracles=args.oracles, oracle_notes=args.oracle_notes)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
