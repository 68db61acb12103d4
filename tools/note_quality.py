"""Note writer precision and recall against the data's fact annotations (issue 23).

    python tools/note_quality.py [--config configs/locomo.yaml] [--split train] [--dialogues 0 1 2 3]
                                 [--threshold 0.5] [--json OUT] [key=value ...]

Runs the configured note writer (``notes.kind``; the offline rule writer by default) over every turn of the
split and matches its notes to the turns' fact annotations (:mod:`memprm.llm.note_quality`). Prints turns,
notes, facts, precision, recall and recall per fact kind, then a few turns with a missed fact or an
unmatched note. LoCoMo D1–D4 is ``--config configs/locomo.yaml --split train``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import load_config  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.stack import build_note_writer  # noqa: E402
from memprm.llm.note_quality import note_quality  # noqa: E402
from memprm.memory.embedder import build_embedder  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="a YAML config (default: the embedded default)")
    ap.add_argument("--split", default="train")
    ap.add_argument(
        "--dialogues", type=int, nargs="*", default=None, help="indices into the split (default: all)"
    )
    ap.add_argument("--threshold", type=float, default=0.5, help="token F1 a note needs to match a fact")
    ap.add_argument("--examples", type=int, default=8, help="turns with a miss to print")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, key.sub=value")
    args = ap.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    dialogues = list(load_source(cfg.data)[args.split])
    if args.dialogues is not None:
        bad = [i for i in args.dialogues if not 0 <= i < len(dialogues)]
        if bad:
            raise SystemExit(f"--dialogues {bad}: split {args.split!r} has {len(dialogues)} dialogues")
        dialogues = [dialogues[i] for i in args.dialogues]
    writer = build_note_writer(cfg.notes, cfg.llm, build_embedder(cfg.embedder), cfg.data.synthetic)
    q = note_quality(
        writer, tqdm(dialogues, desc="dialogues", unit="dialogue"), args.threshold, args.examples
    )
    ids = ", ".join(d.id for d in dialogues)
    print(f"{cfg.data.source} {args.split} ({ids}): notes.kind={cfg.notes.kind}, match at token F1 >= "
          f"{args.threshold}")  # fmt: skip
    print("| turns | with facts | with notes | facts | notes | matched | precision | recall |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {q.turns} | {q.turns_with_facts} | {q.turns_with_notes} | {q.facts} | {q.notes} | {q.matched} | "
          f"{100 * q.precision:.1f} | {100 * q.recall:.1f} |")  # fmt: skip
    print("recall per fact kind: " + ", ".join(f"{k} {m}/{n}" for k, (n, m) in sorted(q.by_kind.items())))
    for ex in q.examples[: args.examples]:
        print(f"- {ex['turn']}: {ex['text']!r}\n    notes: {ex['notes']}\n    facts: {ex['facts']}")
    out = q.as_dict() | {"source": cfg.data.source, "split": args.split, "dialogues": [d.id for d in dialogues],
                         "threshold": args.threshold, "notes_kind": cfg.notes.kind}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
