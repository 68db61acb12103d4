"""Benchmark: the counterfactual overhead of the audit, against quiz-only and against naive deletion.

    MEMPRM_DATA=../shared/data python tools/bench_audit.py [--synthetic-dialogues 2]

The heuristic teacher manages each dialogue window by window (offline roles: MiniLM, extractive reader,
token-F1 judge). At every window the quiz is answered (exam) and then audited. Reader calls are counted as
real reader invocations (cache misses). Columns:

  quiz calls         reader calls of the exams alone
  audit calls        extra reader calls of the audits (deletion re-answers that missed the cache)
  overhead           (quiz + audit) / quiz reader calls                 goal <= 1.25
  naive overhead     (quiz + one re-answer per retrieved (entry, question) pair) / quiz — deleting every
                     retrieved entry, no zero detection, no citation filter, no cache (counted, not run)
  wall overhead      (exam + audit wall time) / exam wall time          goal <= 1.25

Audit modes: ``offline`` (teacher runs for relabeling) tests every cited managed entry; ``online`` (GRPO) tests
only entries that an operation of the current episode wrote or merged into, since chain credit reaches only the
episode's own steps. The paper reports that its counterfactual roughly doubles quiz cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.data.source import DataConfig, load_source  # noqa: E402
from memprm.data.synthetic import SyntheticConfig  # noqa: E402
from memprm.env.audit import audit_exam, episode_entries  # noqa: E402
from memprm.env.exam import run_exam  # noqa: E402
from memprm.env.memory_env import advance_reference  # noqa: E402
from memprm.env.offline import offline_stack  # noqa: E402
from memprm.llm.teacher import HeuristicTeacher  # noqa: E402
from memprm.memory.bank import MemoryBank  # noqa: E402


def measure(stack, dialogues, online: bool) -> dict[str, float]:
    teacher = HeuristicTeacher(stack.embedder)
    tot = dict(quiz=0, audit=0, naive=0, t_exam=0.0, t_audit=0.0, questions=0, tests=0)
    for d in dialogues:
        cache = stack.cache()
        bank, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            play = stack.env.play_window(d, s.index, bank, teacher)
            advance_reference(reference, d, s.index)
            quiz = stack.env.prepare_quiz(d, s.index, reference, cache).quiz
            c0, t0 = cache.reader_calls, time.perf_counter()
            exam = run_exam(bank, quiz, stack.reader, stack.judge, stack.retriever, cache)
            c1, t1 = cache.reader_calls, time.perf_counter()
            only = episode_entries(bank, [st.op_id for st in play.steps]) if online else None
            audit = audit_exam(
                bank, exam, stack.reader, stack.judge, stack.retriever, cache, only_entries=only
            )
            c2, t2 = cache.reader_calls, time.perf_counter()
            tot["quiz"] += c1 - c0
            tot["audit"] += c2 - c1
            tot["naive"] += len(audit.records)
            tot["t_exam"] += t1 - t0
            tot["t_audit"] += t2 - t1
            tot["questions"] += len(quiz)
            tot["tests"] += audit.counts.deletion_tests
    return tot


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthetic-dialogues", type=int, default=2, help="synthetic train dialogues to run")
    ap.add_argument("--no-locomo", action="store_true", help="skip LoCoMo D5 (needs MEMPRM_DATA)")
    args = ap.parse_args()
    rows = []
    syn = load_source(DataConfig(synthetic=SyntheticConfig()))["train"][: args.synthetic_dialogues]
    data = [("synthetic default", syn)]
    if not args.no_locomo:
        data.append(("LoCoMo D5", load_source(DataConfig(source="locomo"))["dev"]))
    for name, dialogues in data:
        for mode in ("offline", "online"):
            stack = offline_stack(shared_embedder=False)  # a cold embedding cache for each measurement
            rows.append((f"{name}, {mode}", measure(stack, dialogues, online=mode == "online")))
    head = f"{'data, audit mode':<28} {'questions':>9} {'quiz calls':>10} {'audit calls':>11} {'tests':>6} "
    print(head + f"{'overhead':>9} {'naive overhead':>15} {'wall overhead':>14}")
    for name, t in rows:
        q = max(t["quiz"], 1)
        print(
            f"{name:<28} {t['questions']:>9} {t['quiz']:>10} {t['audit']:>11} {t['tests']:>6} "
            f"{(t['quiz'] + t['audit']) / q:>9.2f} {(t['quiz'] + t['naive']) / q:>15.2f} "
            f"{(t['t_exam'] + t['t_audit']) / max(t['t_exam'], 1e-9):>14.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
