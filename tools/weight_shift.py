"""Where GRPO moved a scoring policy: dev-selection history and the change of the 16 structural weights.

    python tools/weight_shift.py runs/RUN [runs/RUN2 ...] [--at last|selected] [--json OUT]

For each run folder (one that finished its GRPO stage with ``policy.kind=scoring`` and the two-tower head)
prints the dev-selection accuracy at every evaluated step (``grpo/dev_selection.json``), the selected step, and
the change of the head's weights on kind × layer, rank, the two cosines and the key match between the SFT
policy (``policy_sft.pt``) and GRPO's weights: ``--at last`` (default) the last checkpoint
(``grpo/checkpoints/last.ckpt``), ``--at selected`` the dev-selected policy (``policy_grpo.pt``). These 16
weights shift every gate's choice of one kind the same way, so their change says in which direction a run
pushed the manager (write more, merge less, ...); experiments/README.md reads its tables this way.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from memprm.models.trainable import RUN_POLICY_FILES, run_policy_state
from memprm.models.two_tower import structural_dim, structural_names

HEAD = "head.weight"


def head_row(state: dict[str, torch.Tensor], where: Path) -> torch.Tensor:
    """The first :func:`structural_dim` weights of the scoring head in a state dict (any key prefix)."""
    keys = [k for k in state if k == HEAD or k.endswith("." + HEAD)]
    if len(keys) != 1:
        raise SystemExit(f"{where}: expected one '{HEAD}' tensor, found {keys or 'none'} (not a scoring policy?)")
    w = state[keys[0]].detach().float().reshape(-1)
    if w.numel() < structural_dim():
        raise SystemExit(f"{where}: {keys[0]} has {w.numel()} weights, fewer than the two-tower head's {structural_dim()}")
    return w[: structural_dim()]


def _load(run: Path, which: str) -> dict[str, torch.Tensor]:
    try:
        return run_policy_state(run, which)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"weight_shift: {exc}") from None


def run_shift(run: Path, at: str = "last") -> dict:
    """One run's dev history, selected step and per-weight change (GRPO − SFT) as a JSON-able dict."""
    sft = head_row(_load(run, "sft"), run / RUN_POLICY_FILES["sft"])
    grpo = head_row(_load(run, at), run / RUN_POLICY_FILES[at])
    dev_path = run / "grpo" / "dev_selection.json"
    dev = json.loads(dev_path.read_text()) if dev_path.is_file() else {"history": [], "best_step": None}
    return {
        "run": str(run),
        "at": at,
        "dev": [[h["step"], h["accuracy"]] for h in dev["history"]],
        "selected_step": dev["best_step"],
        "shift": dict(zip(structural_names(), (grpo - sft).tolist(), strict=True)),
    }


def markdown(rows: list[dict]) -> str:
    """Two tables: dev-selection history per run, then the weight changes (one column per run)."""
    out = ["| run | dev selection (step: accuracy) | selected |", "|---|---|---|"]
    for r in rows:
        hist = " / ".join(f"{s}: {100 * a:.1f}" for s, a in r["dev"]) or "—"
        out.append(f"| {Path(r['run']).name} | {hist} | {r['selected_step']} |")
    out += ["", "| weight | " + " | ".join(Path(r["run"]).name for r in rows) + " |"]
    out.append("|---|" + "---|" * len(rows))
    for name in structural_names():
        out.append(f"| {name} | " + " | ".join(f"{r['shift'][name]:+.2f}" for r in rows) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (runs/NAME)")
    ap.add_argument("--at", choices=("last", "selected"), default="last", help="GRPO weights compared with SFT's")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = [run_shift(r, args.at) for r in args.runs]
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
