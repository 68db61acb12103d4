"""Grouped rollouts: G forks of the mainline bank play one window; the same quiz examines every fork.

``GroupRunner.run_group`` is one GRPO episode (DESIGN.md, "Reward and advantage"):

1. fork the dialogue's mainline bank G times and let the policy play the window's gates on each fork,
   recording its :class:`GateSample` per gate (π_old log-probs);
2. extend the verbatim reference bank by the window (``rollout.horizon``: every fork then plays later
   sessions greedily) and prepare the quiz once (probes + gates + unlocked official questions);
3. examine and audit each fork (online audit: deletion tests only on entries the episode touched) and turn
   the audit into per-step measurements: verified credit u_t (Eq. 6 → chain propagation; ``cited_version``:
   only to the versions read), coverage penalty miss_t and the critic's shaping s̃_t (suffix-min by default);
4. write one fork's window-end bank back as the new mainline, chosen at random (``rollout.write_back``).

A question whose call failed in any rollout is dropped from every rollout's measurement; that rule, the
``gold`` credit arm and the group's stats are on :meth:`GroupRunner.run_group`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from memprm.credit import (
    CreditConfig,
    CreditVariant,
    chain_step_credit,
    coverage_penalty,
    noop_mask,
    presence_credit,
    suffix_min_shaping,
    sum_shaping,
)
from memprm.credit.online_labels import online_labels
from memprm.data.records import Dialogue
from memprm.env.audit import AuditCounts, exclude_questions
from memprm.env.exam import ReaderCache
from memprm.env.gold_evidence import bank_evidence_kept, gold_entry_credit, quiz_evidence
from memprm.env.memory_env import MemoryEnv, advance_reference
from memprm.llm import failures
from memprm.memory.bank import MANAGED_LAYERS, MemoryBank
from memprm.rollout.batches import GroupBatch, RolloutSteps
from memprm.rollout.forks import play_forks
from memprm.rollout.local_groups import LocalRerunConfig
from memprm.timing import Stopwatch

CriticScore = Callable[[list[str]], np.ndarray]  # rendered operations -> φ [N]


@dataclass(frozen=True)
class RolloutConfig:
    #: G: rollouts per episode, all forked from the same mainline bank.
    group_size: int = 4
    #: the critic shaping: ``suffix_min`` (the method), ``sum`` (ablation) or ``none``.
    shaping: str = "suffix_min"
    #: the factor on the ``sum`` shaping's Write/Merge values (the other shapings ignore it): ``auto`` = the
    #: one that gives it the suffix-min shaping's mean magnitude on stage one's train teacher trajectories
    #: scored by stage one's critic, computed once before GRPO trains and kept for a resume (paper Remark 4;
    #: :mod:`memprm.stages.sum_scale`, recorded in ``grpo/result.json``); a number > 0 fixes it (1.0: unscaled).
    sum_scale: float | Literal["auto"] = "auto"
    #: the official questions of a window's quiz: ``window`` (those the window unlocks, DESIGN.md's "Exam")
    #: or ``cumulative`` (every question unlocked so far, re-asked of the bank as it now is; the last window
    #: asks the whole dialogue, as the test protocol does). The probes are the window's own either way.
    quiz: str = "window"
    #: the next window's mainline bank: ``random`` (one of the G rollouts, uniformly: the method) or ``greedy``
    #: (one more fork of the window's start played with greedy choices, neither examined nor trained on; it
    #: costs that play's policy forwards). ``greedy`` keeps the episodes' starting banks on the states the
    #: deployed (greedy) policy visits, where ``random`` lets the sampled deviations of every earlier window
    #: pile up in them.
    write_back: str = "random"
    #: sessions after the sampled window that every fork then plays greedily before the quiz (not trained on,
    #: not written back: the next mainline is a bank as the sampled window left it); the quiz (cumulative
    #: only) asks every question unlocked through the last of them. A window-end quiz sees only the questions
    #: unlocked so far, so an operation that hurts a later question (a mis-attached Merge read as a chain's
    #: newest value) costs nothing in its own group; later it is common to every fork and cancels. Clipped at
    #: the dialogue's last session; -1 = through it (the test protocol's exam); 0 = the window's end (method).
    horizon: int = 0
    #: local re-run groups (the ``local_reroll`` arm; :mod:`memprm.rollout.local_groups`): off at ``p`` = 0.
    local: LocalRerunConfig = field(default_factory=LocalRerunConfig)

    def __post_init__(self) -> None:
        if self.group_size < 1:
            raise ValueError(f"rollout.group_size must be >= 1, got {self.group_size}")
        if self.shaping not in ("suffix_min", "sum", "none"):
            raise ValueError(f"rollout.shaping must be suffix_min, sum or none, got {self.shaping!r}")
        if self.sum_scale != "auto" and not (math.isfinite(self.sum_scale) and self.sum_scale > 0):
            raise ValueError(f"rollout.sum_scale must be auto or a finite number > 0, got {self.sum_scale!r}")
        if self.quiz not in ("window", "cumulative"):
            raise ValueError(f"rollout.quiz must be window or cumulative, got {self.quiz!r}")
        if self.write_back not in ("random", "greedy"):
            raise ValueError(f"rollout.write_back must be random or greedy, got {self.write_back!r}")
        if isinstance(self.horizon, bool) or not isinstance(self.horizon, int) or self.horizon < -1:
            raise ValueError(f"rollout.horizon must be an integer >= -1, got {self.horizon!r}")
        if self.horizon and self.quiz != "cumulative":
            raise ValueError(f"rollout.horizon={self.horizon} needs rollout.quiz=cumulative, got {self.quiz!r}")


class GroupRunner:
    def __init__(
        self,
        env: MemoryEnv,
        credit: CreditConfig,
        cfg: RolloutConfig,
        critic: CriticScore | None = None,
        stopwatch: Stopwatch | None = None,
    ):
        if critic is not None and cfg.shaping == "sum" and cfg.sum_scale == "auto":
            raise ValueError(
                "rollout.sum_scale=auto is resolved by the GRPO stage (memprm.stages.sum_scale); a runner "
                "built outside it needs rollout.sum_scale=<number>"
            )
        self.env, self.credit, self.cfg, self.critic = env, credit, cfg, critic
        self.stopwatch = stopwatch or Stopwatch()

    def run_group(
        self,
        dialogue: Dialogue,
        window: int,
        mainline: MemoryBank,
        reference: MemoryBank,
        policy,
        rng: np.random.Generator,
        generator=None,
        greedy: bool = False,
        forks: list[MemoryBank] | None = None,
    ) -> tuple[GroupBatch, MemoryBank]:
        """One episode. ``reference`` (the verbatim bank through the previous window) is advanced in place.
        Returns the batch and the new mainline bank (``rollout.write_back``); ``forks``, when given, receives every rollout's bank at
        the window's end in rollout order (analysis tools compare them; training keeps only the mainline).
        Under ``rollout.horizon`` each fork is examined after its greedy continuation (on a copy).

        A quiz question whose reader or judge call failed in any rollout of the group is dropped from every
        rollout's measurement — R, credit, coverage penalty, online labels
        (:func:`memprm.env.audit.exclude_questions`) — so the rollouts are compared on the same questions and
        no advantage comes from a failed call; the number dropped is ``audit/group_dropped_questions``.

        Under ``credit.variant=gold`` the entry credit comes from the quiz's gold evidence
        (:func:`memprm.env.gold_evidence.gold_entry_credit`) and no deletion test runs. Every rollout's
        ``stats["evidence_kept"]`` is the share of the quiz's evidence turns its managed entries hold (absent
        for a quiz without evidence; logged as ``bank/evidence_kept``).

        Wall time is split into policy, critic, embedding and the rest (``stats["time/..."]``). The group's
        LLM traffic (``llm/<role>/<counter>``, ``llm/questions``, ``llm/failures``, ``llm/failure_share``:
        what the group's calls added to :mod:`memprm.llm.stats`), its audits' failure and citation counts
        summed over the rollouts (``audit/failed_answers``, ``audit/failed_verdicts``,
        ``audit/failed_deletion_tests``, ``audit/citation_cap_hits``, ``audit/dropped_citations``,
        ``audit/cited_share``, ``reader/missing_citations``) and the probes dropped for a failed gate answer
        (``probe/failed``) are in ``GroupBatch.stats`` too.
        """
        sw, t0 = self.stopwatch, time.perf_counter()
        before, llm_before = dict(sw.seconds), failures.snapshot()
        banks = [mainline.fork() for _ in range(self.cfg.group_size)]
        played = play_forks(self.env, dialogue, window, banks, policy, sw, greedy=greedy, generator=generator)
        plays, samples = [fp.play for fp in played], [fp.samples for fp in played]
        advance_reference(reference, dialogue, window)
        ends, quiz_ref, later = banks, reference, self.later_sessions(dialogue, window)
        if later:  # rollout.horizon: greedy continuation on copies; the window-end banks stay as they are
            ends, quiz_ref = [b.fork() for b in banks], reference.fork()
            for w in later:
                advance_reference(quiz_ref, dialogue, w)
                play_forks(self.env, dialogue, w, banks, policy, sw, greedy=True, generator=generator)
        cache = ReaderCache(self.env.reader, self.env.judge)
        prepared = self.env.prepare_quiz(
            dialogue, window, quiz_ref, cache, self.cfg.quiz == "cumulative", later[-1] if later else None
        )
        rollouts, audits = [], AuditCounts()
        # reader calls (cache misses) of the probe gates, the group's exams and their audits
        calls = {"gate": cache.reader_calls, "quiz": 0, "audit": 0}
        examined = []
        gold = self.credit.variant is CreditVariant.GOLD
        evidence = quiz_evidence(prepared.quiz)
        for bank, play in zip(banks, plays, strict=True):
            c0 = cache.reader_calls
            exam, audit = self.env.examine(bank, prepared.quiz, cache, play, deletion_tests=not gold)
            audits.add(audit.counts)
            calls["audit"] += audit.counts.reader_calls
            calls["quiz"] += cache.reader_calls - c0 - audit.counts.reader_calls
            examined.append((exam, audit))
        failed = {r.item.question.id for exam, _ in examined for r in exam.results if r.failed}
        for bank, play, recorded, (exam, audit) in zip(banks, plays, samples, examined, strict=True):
            audit = exclude_questions(audit, exam, failed)
            seed = int(rng.integers(2**31))
            if gold:  # from the quiz's gold evidence, not the audit (memprm.credit.gold)
                u_entry = gold_entry_credit(bank, prepared.quiz, audit.correct, self.credit.positive)
            else:
                ids = [e.id for e in bank]
                u_entry = presence_credit(audit.records, self.credit, entry_ids=ids, seed=seed)
            # cited_version credit goes to the versions the reader read (AuditRecord.versions; cited_versions)
            u = chain_step_credit(play.steps, u_entry, audit.records, audit.chains, self.credit.chain)
            miss = coverage_penalty(play.steps, audit.failed_probe_anchors)
            noop = noop_mask(play.steps)
            shaping = self._shaping(play.critic_inputs, noop)
            stats = bank.stats(MANAGED_LAYERS) | {
                "context_tokens": exam.context_tokens,
                "invalid_actions": float(play.invalid_actions),
                "deletion_tests": float(audit.counts.deletion_tests),
            }
            kept = bank_evidence_kept(bank, evidence).share
            if kept is not None:  # a quiz with gold evidence
                stats["evidence_kept"] = kept
            lab_u, lab_rr = online_labels(play.steps, audit.records, audit.chains, audit.failed_probe_anchors)
            rollouts.append(
                RolloutSteps(
                    recorded, noop, u, miss, shaping, audit.accuracy, stats, play.critic_inputs, lab_u, lab_rr
                )
            )
        write_back: int | None = int(rng.integers(len(ends)))
        nxt = ends[write_back]
        if self.cfg.write_back == "greedy":
            nxt, write_back = mainline.fork(), None
            play_forks(self.env, dialogue, window, [nxt], policy, sw, greedy=True, generator=generator)
        if forks is not None:
            forks.extend(ends)
        total = time.perf_counter() - t0
        spent = {k: sw.seconds.get(k, 0.0) - before.get(k, 0.0) for k in ("policy", "critic", "embed")}
        sw.seconds["rollout"] = sw.seconds.get("rollout", 0.0) + total
        sw.seconds["rollout_models"] = sw.seconds.get("rollout_models", 0.0) + sum(spent.values())
        stats = {f"probe/{k}": v for k, v in prepared.gates.rates().items()}
        stats |= {f"time/{k}": v for k, v in spent.items()} | {"time/total": total}
        stats["time/outside_models_share"] = max(0.0, total - sum(spent.values())) / max(total, 1e-9)
        stats |= {f"audit/{k}_reader_calls": float(v) for k, v in calls.items()}
        stats |= failure_stats(audits, prepared.gates.failed)
        stats["audit/group_dropped_questions"] = float(len(failed))
        stats["rollout/continued_sessions"] = float(len(later))
        stats |= failures.log_dict(failures.delta(llm_before, failures.snapshot()))
        batch = GroupBatch(dialogue.id, window, tuple(rollouts), len(prepared.quiz), write_back, stats)
        return batch, nxt

    def later_sessions(self, dialogue: Dialogue, window: int) -> list[int]:
        """The sessions after ``window`` that ``rollout.horizon`` plays before the quiz, in order."""
        after = [s.index for s in dialogue.sessions if s.index > window]
        return after if self.cfg.horizon == -1 else after[: self.cfg.horizon]

    def _shaping(self, critic_inputs: tuple[str, ...], noop: np.ndarray) -> np.ndarray:
        if self.critic is None or self.cfg.shaping == "none" or not len(noop):
            return np.zeros(len(noop))
        with self.stopwatch("critic"):
            p = np.asarray(self.critic(list(critic_inputs)), dtype=np.float64)  # [T]
        if self.cfg.shaping == "suffix_min":
            return suffix_min_shaping(p, noop)
        return sum_shaping(p, noop, scale=self.cfg.sum_scale)


def failure_stats(audits: AuditCounts, failed_probes: int) -> dict[str, float]:
    """A group's failure and citation counts (summed over its rollouts' audits) as ``GroupBatch.stats``."""
    out = {
        f"audit/{k}": float(getattr(audits, k))
        for k in (
            "failed_answers",
            "failed_verdicts",
            "failed_deletion_tests",
            "citation_cap_hits",
            "dropped_citations",
        )
    }
    return out | {
        "audit/cited_share": audits.cited_share,
        "reader/missing_citations": float(audits.missing_citations),
        "probe/failed": float(failed_probes),
    }
