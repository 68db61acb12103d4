"""Benchmark: the counterfactual overhead of the audit, against quiz-only and against naive deletion.

    MEMPRM_DATA=../shared/data python tools/bench_audit.py [--synthetic-dialogues 2]

The heuristic teacher manages each dialogue window by window (offline roles: MiniLM, extractive reader,
token-F1 judge). At every window the quiz is answered (exam) and then audited. Reader calls are counted as
real reader invocations (cache misses). Columns:

  gate calls         reader calls of building the quiz: the three probe gates (DESIGN.md) on the reference
  quiz calls         reader calls of the exams alone
  audit calls        extra reader calls of the audits (deletion re-answers that missed the cache)
  tests              (entry, question) deletion tests run (one per pair at most; re-answers may hit the cache)
  tested share       share of the quiz's questions that need a deletion test under DESIGN.md's rule (the
                     answer cites an entry of a tested layer). In a single-bank audit every deletion view is a
                     new reader input (it lacks an entry the exam's input had, and a question is asked once),
                     so there overhead >= 1 + tested share: the goal needs tested share <= 0.25
  overhead           (quiz + audit) / quiz reader calls                 goal <= 1.25
  incl. gates        (gate + quiz + audit) / (gate + quiz): the audit against the whole quiz's cost
  naive overhead     (quiz + one re-answer per retrieved (entry, question) pair) / quiz — deleting every
                     retrieved entry, no zero detection, no citation filter, no cache (counted, not run)
  wall overhead      (exam + audit wall time) / exam wall time          goal <= 1.25

Audit modes: ``offline`` (teacher runs for relabeling) tests every cited managed entry; ``online`` (GRPO) tests
only entries that an operation of the current episode wrote or merged into, since chain credit reaches only the
episode's own steps; ``group`` is the online audit as GRPO runs it: G = --group forks of the mainline bank play
each window (the teacher, each operation replaced by a random Noop/Write with probability --epsilon), share one
quiz and one reader cache, and are examined and audited by ``memprm.rollout.runner.GroupRunner`` (reader calls
from its ``audit/*_reader_calls`` stats; no wall split there). The paper reports that its counterfactual
roughly doubles quiz cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import MemprmConfig  # noqa: E402
from memprm.credit import CreditConfig  # noqa: E402
from memprm.data.source import DataConfig, load_source  # noqa: E402
from memprm.data.synthetic import SyntheticConfig  # noqa: E402
from memprm.env.audit import audit_exam, episode_entries  # noqa: E402
from memprm.env.exam import run_exam  # noqa: E402
from memprm.env.gates import Action  # noqa: E402
from memprm.env.memory_env import advance_reference  # noqa: E402
from memprm.env.policy import GateSample  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.env.teacher import HeuristicTeacher  # noqa: E402
from memprm.memory.bank import MemoryBank  # noqa: E402
from memprm.rollout.runner import GroupRunner, RolloutConfig  # noqa: E402


def measure(stack, dialogues, online: bool) -> dict[str, float]:
    teacher = HeuristicTeacher(stack.embedder)
    tot = dict(gate=0, quiz=0, audit=0, naive=0, t_exam=0.0, t_audit=0.0, questions=0, tests=0, tested_q=0)
    for d in dialogues:
        cache = stack.cache()
        bank, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            play = stack.env.play_window(d, s.index, bank, teacher)
            advance_reference(reference, d, s.index)
            g0 = cache.reader_calls
            quiz = stack.env.prepare_quiz(d, s.index, reference, cache).quiz
            c0, t0 = cache.reader_calls, time.perf_counter()
            tot["gate"] += c0 - g0
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
            tot["tested_q"] += len(
                {r.question_id for r in audit.records if (r.flips, r.cures) != (None, None)}
            )
    return tot


class NoisyTeacher:
    """The heuristic teacher as a rollout policy: each action replaced by a random Noop or Write with
    probability ``epsilon``, so that the forks of a group differ the way sampled rollouts do."""

    def __init__(self, teacher, epsilon: float, rng: np.random.Generator):
        self.teacher, self.epsilon, self.rng = teacher, epsilon, rng

    def act(self, obs, *, greedy=False, generator=None):
        action = self.teacher(obs)
        if self.rng.random() < self.epsilon:
            action = Action.noop() if self.rng.random() < 0.5 else Action("write", obs.turn.text)
        return action, GateSample(prompt="")


def measure_groups(stack, dialogues, group: int, epsilon: float) -> dict[str, float]:
    rng = np.random.default_rng(0)
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=group))
    policy = NoisyTeacher(HeuristicTeacher(stack.embedder), epsilon, rng)
    tot = dict(gate=0, quiz=0, audit=0, naive=0, questions=0, tests=0)
    for d in dialogues:
        mainline, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            batch, mainline = runner.run_group(d, s.index, mainline, reference, policy, rng)
            tot["gate"] += int(batch.stats["audit/gate_reader_calls"])
            tot["quiz"] += int(batch.stats["audit/quiz_reader_calls"])
            tot["audit"] += int(batch.stats["audit/audit_reader_calls"])
            tot["questions"] += batch.quiz_size * group
            tot["tests"] += int(sum(r.stats["deletion_tests"] for r in batch.rollouts))
    tot["naive"] = tot["tested_q"] = float("nan")
    return tot


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthetic-dialogues", type=int, default=2, help="synthetic train dialogues to run")
    ap.add_argument("--no-locomo", action="store_true", help="skip LoCoMo D5 (needs MEMPRM_DATA)")
    ap.add_argument("--group", type=int, default=4, help="G of the group mode (the embedded default's)")
    ap.add_argument("--epsilon", type=float, default=0.3, help="group mode: random-action rate per fork")
    args = ap.parse_args()
    rows = []
    syn = load_source(DataConfig(synthetic=SyntheticConfig()))["train"][: args.synthetic_dialogues]
    data = [("synthetic default", syn)]
    if not args.no_locomo:
        data.append(("LoCoMo D5", load_source(DataConfig(source="locomo"))["dev"]))
    for name, dialogues in data:
        for mode in ("offline", "online"):
            stack = build_stack(MemprmConfig(), shared_embedder=False)  # a cold embedding cache for each measurement
            rows.append((f"{name}, {mode}", measure(stack, dialogues, online=mode == "online")))
        stack = build_stack(MemprmConfig(), shared_embedder=False)
        rows.append(
            (f"{name}, group G={args.group}", measure_groups(stack, dialogues, args.group, args.epsilon))
        )
    cols = ["questions", "gate calls", "quiz calls", "audit calls", "tests", "tested share", "overhead",
            "incl. gates", "naive overhead", "wall overhead"]  # fmt: skip
    print(f"{'data, audit mode':<28} " + " ".join(f"{c:>{len(c)}}" for c in cols))
    for name, t in rows:
        q = max(t["quiz"], 1)
        wall = (t["t_exam"] + t["t_audit"]) / max(t["t_exam"], 1e-9) if "t_exam" in t else float("nan")
        vals = [t["questions"], t["gate"], t["quiz"], t["audit"], t["tests"], t["tested_q"] / t["questions"],
                (q + t["audit"]) / q, (t["gate"] + q + t["audit"]) / (t["gate"] + q), (q + t["naive"]) / q, wall]  # fmt: skip
        cells = [
            f"{v:>{len(c)}.2f}" if isinstance(v, float) else f"{v:>{len(c)}}"
            for c, v in zip(cols, vals, strict=True)
        ]
        print(f"{name:<28} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
