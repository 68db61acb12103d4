"""Local re-run groups (the ``local_reroll`` arm, after Memory-R2's LoGo-GRPO local re-rollouts).

After a whole-window group of window w (G forks of the mainline), with probability ``rollout.local.p`` the
rollout DataModule picks one of its rollouts at random and re-runs the *next* window w+1 k times from that
rollout's final bank (its bank at w+1's start: the only bank of a one-window rollout that is its own; at w's
start every fork holds the mainline), with sampled actions. Each re-run is rewarded with w+1's window quiz
accuracy alone (probes + the questions w+1 unlocks, whatever ``rollout.quiz`` says): no credit, no coverage
penalty, no shaping, and GRPO gives the group outcome advantages beside the whole-window groups
(:func:`memprm.models.grpo_batch.prepare_batch`). Nothing is written back and no deletion test runs; a
question failed in any re-run is dropped from all. ``local/identical_actions`` is 1 for a group whose k
re-runs took the same actions at every gate (no contrast in what was done).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from memprm.credit import noop_mask
from memprm.data.records import Dialogue
from memprm.env.exam import ExamResult, ReaderCache, run_exam
from memprm.env.gold_evidence import bank_evidence_kept, quiz_evidence
from memprm.env.memory_env import MemoryEnv, advance_reference
from memprm.llm import failures
from memprm.memory.bank import MANAGED_LAYERS, MemoryBank
from memprm.rollout.batches import GroupBatch, LocalOrigin, RolloutSteps
from memprm.rollout.forks import play_forks
from memprm.timing import Stopwatch


@dataclass(frozen=True)
class LocalRerunConfig:
    #: p: the probability, after each whole-window group whose dialogue has a next window, of one local
    #: re-run group of that next window (0 = none: the other arms).
    p: float = 0.0
    #: k: re-runs per local group (Memory-R2: k >= 4); they count toward the rollout budget.
    k: int = 4

    def __post_init__(self) -> None:
        if isinstance(self.p, bool) or not (math.isfinite(self.p) and 0.0 <= self.p <= 1.0):
            raise ValueError(f"rollout.local.p must lie in [0, 1], got {self.p!r}")
        if self.k < 2:
            raise ValueError(f"rollout.local.k must be >= 2 (a group of one has no contrast), got {self.k}")


def run_local_group(
    env: MemoryEnv,
    dialogue: Dialogue,
    window: int,
    start: MemoryBank,
    reference: MemoryBank,
    policy,
    k: int,
    origin: LocalOrigin,
    stopwatch: Stopwatch | None = None,
    generator=None,
    finals: list[MemoryBank] | None = None,
) -> GroupBatch:
    """The local group of session ``window``: ``k`` sampled re-runs from forks of ``start`` (the chosen
    rollout's bank; not mutated), examined on the window's quiz. ``reference``: the verbatim bank through the
    previous window (not mutated: a fork is advanced by this window). ``finals``, when given, receives every
    re-run's final bank in order (training keeps none)."""
    sw, t0 = stopwatch or Stopwatch(), time.perf_counter()
    before, llm_before = dict(sw.seconds), failures.snapshot()
    banks = [start.fork() for _ in range(k)]
    played = play_forks(env, dialogue, window, banks, policy, sw, greedy=False, generator=generator)
    ref = reference.fork()
    advance_reference(ref, dialogue, window)
    cache = ReaderCache(env.reader, env.judge)
    prepared = env.prepare_quiz(dialogue, window, ref, cache, cumulative=False)
    exams = [run_exam(b, prepared.quiz, env.reader, env.judge, env.retriever, cache) for b in banks]
    failed = {r.item.question.id for e in exams for r in e.results if r.failed}
    evidence = quiz_evidence(prepared.quiz)
    rollouts = []
    for bank, fp, exam in zip(banks, played, exams, strict=True):
        kept = ExamResult(tuple(r for r in exam.results if r.item.question.id not in failed))
        stats = bank.stats(MANAGED_LAYERS) | {
            "context_tokens": exam.context_tokens,
            "invalid_actions": float(fp.play.invalid_actions),
        }
        share = bank_evidence_kept(bank, evidence).share
        if share is not None:
            stats["evidence_kept"] = share
        zeros = np.zeros(len(fp.samples))
        noop = noop_mask(fp.play.steps)
        rollouts.append(
            RolloutSteps(fp.samples, noop, zeros, zeros, zeros, kept.accuracy, stats, fp.play.critic_inputs)
        )
    if finals is not None:
        finals.extend(banks)
    total = time.perf_counter() - t0
    models = sum(sw.seconds.get(x, 0.0) - before.get(x, 0.0) for x in ("policy", "critic", "embed"))
    sw.seconds["rollout"] = sw.seconds.get("rollout", 0.0) + total
    sw.seconds["rollout_models"] = sw.seconds.get("rollout_models", 0.0) + models
    stats = {
        "local/identical_actions": float(len({fp.actions for fp in played}) == 1),
        "local/reader_calls": float(cache.reader_calls),
        "local/dropped_questions": float(len(failed)),
    }
    stats |= failures.log_dict(failures.delta(llm_before, failures.snapshot()))
    return GroupBatch(dialogue.id, window, tuple(rollouts), len(prepared.quiz), None, stats, origin)
