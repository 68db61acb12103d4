"""Examine and audit a bank built from the verbatim layer of a LoCoMo dialogue, offline.

    MEMPRM_DATA=../shared/data python tools/examine_bank.py --dialogue 5 [--categories 1 2 3 4]

Builds a bank holding every turn of dialogue D<n> (file order) in the verbatim layer, asks all its questions
(the retrieval-only setting: verbatim path, top-10), audits every retrieved entry, and prints accuracy by
category, mean context tokens and the audit counts. Roles: MiniLM embeddings, the extractive reader and
LoCoMo's token-F1 judge.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import MemprmConfig  # noqa: E402
from memprm.data.source import DataConfig, load_source  # noqa: E402
from memprm.env.audit import audit_exam  # noqa: E402
from memprm.env.exam import Quiz, QuizItem, run_exam  # noqa: E402
from memprm.env.memory_env import advance_reference  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.memory.bank import LAYERS, MemoryBank  # noqa: E402
from memprm.memory.retriever import RetrieverConfig  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dialogue", type=int, default=5, help="D1..D10 in file order (default 5, the dev dialogue)"
    )
    ap.add_argument("--categories", type=int, nargs="*", default=[1, 2, 3, 4])
    ap.add_argument("--width", type=int, default=10, help="verbatim entries read per question")
    args = ap.parse_args()
    splits = load_source(DataConfig(source="locomo", categories=tuple(args.categories)))
    dialogues = [d for name in ("train", "dev", "test") for d in splits[name]]
    d = dialogues[args.dialogue - 1]
    verbatim_only = RetrieverConfig(paths=("verbatim",), widths={"verbatim": args.width})
    stack = build_stack(dataclasses.replace(MemprmConfig(), retriever=verbatim_only))
    bank = MemoryBank()
    for s in d.sessions:
        advance_reference(bank, d, s.index)
    quiz = Quiz(tuple(QuizItem(q, 1.0, "official") for q in d.questions))
    cache = stack.cache()
    t0 = time.perf_counter()
    exam = run_exam(bank, quiz, stack.reader, stack.judge, stack.retriever, cache)
    quiz_calls, t1 = cache.reader_calls, time.perf_counter()
    audit = audit_exam(bank, exam, stack.reader, stack.judge, stack.retriever, cache, test_layers=LAYERS)
    t2 = time.perf_counter()
    by_cat: dict[str, list[bool]] = defaultdict(list)
    for r in exam.results:
        by_cat[r.item.question.category].append(r.correct)
    print(
        f"D{args.dialogue} = {d.id}: {d.n_turns} turns in the verbatim layer, {len(quiz)} questions "
        f"(categories {args.categories})"
    )
    print(f"\n{'category':<14} {'n':>5} {'accuracy':>9}")
    for cat, ok in sorted(by_cat.items()):
        print(f"{cat:<14} {len(ok):>5} {sum(ok) / len(ok):>9.3f}")
    print(f"{'all':<14} {len(exam.results):>5} {exam.accuracy:>9.3f}")
    print(f"\nmean context tokens per question: {exam.context_tokens:.0f} (approx. word/punctuation count)")
    print("\naudit counts:")
    for k, v in vars(audit.counts).items():
        print(f"  {k:<18} {v}")
    print(
        f"\nreader calls: quiz {quiz_calls}, audit {cache.reader_calls - quiz_calls} "
        f"(x{cache.reader_calls / max(quiz_calls, 1):.2f}); wall: quiz {t1 - t0:.1f}s, audit {t2 - t1:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
