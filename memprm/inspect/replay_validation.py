"""Replay validation of chain credit (paper §3, "Two counterfactuals, two carriers"; Appendix L).

Eq. (6) credits the *final entry*; operations inherit it along the version chain. The action-level
counterfactual is measured by replay: a policy plays each window of some dialogues greedily (the test
protocol's choices) from the mainline its earlier windows left, sits the window's quiz (``rollout.quiz`` of
the config) and is audited online as GRPO audits a rollout; then sampled Write / Merge operations are taken
back one at a time — the window replayed from its starting bank with that gate a Noop and every other action
kept (:mod:`memprm.env.replay`) — and the same quiz, with the same reader cache, is sat again. The
operation's marginal is ΔR = R − R_without, both over the questions scored in both exams. Its chain credit comes from the same audit under each
propagation variant (un-normalized, normalized by chain length, cited-version-only), so the three are
compared on identical operations. An episode is one window, as in training: a Write's effect on later windows
is outside ΔR and outside its credit alike.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memprm.credit import (
    ChainMode,
    CreditConfig,
    CreditVariant,
    chain_step_credit,
    presence_credit,
)
from memprm.credit.tiers import TeacherDecision
from memprm.data.records import Dialogue
from memprm.env.exam import ExamResult, Quiz, ReaderCache, run_exam
from memprm.env.memory_env import MemoryEnv, advance_reference
from memprm.env.replay import replay_window
from memprm.eval.metrics import bootstrap_spearman
from memprm.logs import progress
from memprm.memory.bank import MemoryBank
from memprm.rollout.forks import play_forks
from memprm.timing import Stopwatch

MODES = (ChainMode.UNNORMALIZED, ChainMode.NORMALIZED, ChainMode.CITED_VERSION)


@dataclass(frozen=True)
class WindowCase:
    """One window as the policy played it: what a replay needs and the credit of each gate's operation."""

    dialogue: Dialogue
    window: int
    start: MemoryBank  # the bank at the window's start (never mutated)
    decisions: tuple[TeacherDecision, ...]  # the policy's decisions, gate by gate
    quiz: Quiz
    cache: (
        ReaderCache  # the window's reader cache: the replays reuse its answers where retrieval is unchanged
    )
    exam: ExamResult  # the window's exam
    credit: dict[str, np.ndarray]  # chain mode -> [T] credit of each gate's operation


@dataclass(frozen=True)
class ReplayedOp:
    dialogue_id: str
    window: int
    gate: int
    kind: str  # write | merge
    layer: str
    delta: float  # ΔR = R − R without the operation
    credit: dict[str, float]  # chain mode -> the operation's chain credit
    orphaned_merges: int  # later Merges into the entry a dropped Write started, applied as Noops


@dataclass
class ReplayCost:
    windows: int = 0
    replays: int = 0  # windows re-played and re-examined: the replay's cost in rollouts
    failed_exams: int = 0  # replays with no question scored in both exams (left out)
    reader_calls: int = 0
    seconds: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)


def play_windows(
    env: MemoryEnv,
    dialogues: Sequence[Dialogue],
    policy,
    credit_cfg: CreditConfig,
    cumulative: bool,
    seed: int = 0,
) -> list[WindowCase]:
    """Every window of ``dialogues`` played greedily by ``policy`` from the mainline, examined and audited;
    windows with an empty quiz or no gate are left out (they carry no credit)."""
    if credit_cfg.variant is CreditVariant.GOLD:
        raise ValueError("replay validation measures the audit's chain credit: credit.variant=gold has none")
    out, sw = [], Stopwatch()
    for d in progress(dialogues, desc="play", unit="dialogue", leave=False):
        mainline, reference = MemoryBank(), MemoryBank()
        for s in d.sessions:
            start, bank = mainline, mainline.fork()  # start is never written again: the mainline moves on
            (fp,) = play_forks(env, d, s.index, [bank], policy, sw, greedy=True)
            advance_reference(reference, d, s.index)
            cache = ReaderCache(env.reader, env.judge)
            quiz = env.prepare_quiz(d, s.index, reference, cache, cumulative=cumulative).quiz
            mainline = bank
            if not len(quiz) or not fp.play.steps:
                continue
            exam, audit = env.examine(bank, quiz, cache, fp.play)
            if exam.all_failed:
                continue
            u_entry = presence_credit(audit.records, credit_cfg, entry_ids=[e.id for e in bank], seed=seed)
            credit = {
                str(m): chain_step_credit(fp.play.steps, u_entry, audit.records, audit.chains, m)
                for m in MODES
            }
            out.append(WindowCase(d, s.index, start, fp.play.decisions, quiz, cache, exam, credit))
    return out


def paired_accuracy(a: ExamResult, b: ExamResult) -> tuple[float, float] | None:
    """R of two exams of one quiz over the items scored in both: an item whose call failed in either is
    dropped from both (training's rule for a group), so a failure never passes for an effect. None when no
    item is left.

    ``a.results`` [n] and ``b.results`` [n] pair up by position (the same quiz)."""
    if len(a.results) != len(b.results):
        raise ValueError(f"paired_accuracy: exams of {len(a.results)} and {len(b.results)} items")
    both = [(x, y) for x, y in zip(a.results, b.results, strict=True) if not (x.failed or y.failed)]
    total = sum(x.item.weight for x, _ in both)
    if not both or not total:
        return None
    return (sum(x.item.weight for x, _ in both if x.correct) / total,
            sum(y.item.weight for _, y in both if y.correct) / total)  # fmt: skip


def sample_ops(cases: Sequence[WindowCase], n: int, seed: int) -> list[tuple[int, int]]:
    """Up to ``n`` (case index, gate) pairs drawn uniformly without replacement among Write / Merge gates."""
    pool = [
        (i, g) for i, c in enumerate(cases) for g, d in enumerate(c.decisions) if d.kind in ("write", "merge")
    ]
    if len(pool) <= n:
        return pool
    pick = np.random.default_rng(seed).choice(len(pool), n, replace=False)
    return [pool[int(k)] for k in sorted(pick)]


def replay_ops(env: MemoryEnv, cases: Sequence[WindowCase], ops: Sequence[tuple[int, int]]) -> tuple[
    list[ReplayedOp], ReplayCost
]:  # fmt: skip
    """ΔR of each sampled operation (module docstring) and what the replays cost."""
    t0, cost, out = time.perf_counter(), ReplayCost(windows=len({i for i, _ in ops})), []
    calls0 = {id(c.cache): c.cache.reader_calls for c in cases}
    for i, gate in progress(ops, desc="replay", unit="op", leave=False):
        c = cases[i]
        rep = replay_window(env, c.dialogue, c.window, c.start, c.decisions, gate)
        exam = run_exam(rep.bank, c.quiz, env.reader, env.judge, env.retriever, c.cache)
        cost.replays += 1
        pair = paired_accuracy(c.exam, exam)
        if pair is None:
            cost.failed_exams += 1
            continue
        d = c.decisions[gate]
        cost.by_kind[d.kind] = cost.by_kind.get(d.kind, 0) + 1
        out.append(
            ReplayedOp(
                c.dialogue.id, c.window, gate, d.kind, d.layer, pair[0] - pair[1],
                {m: float(v[gate]) for m, v in c.credit.items()}, rep.orphaned_merges,
            )
        )  # fmt: skip
    cost.reader_calls = sum(c.cache.reader_calls - calls0[id(c.cache)] for c in cases)
    cost.seconds = time.perf_counter() - t0
    return out, cost


def summarize(ops: Sequence[ReplayedOp], n_boot: int = 1000, seed: int = 0) -> dict:
    """Spearman (with a bootstrap interval) between ΔR and each variant's chain credit, over all sampled
    operations and per kind; plus how often each side is non-zero."""
    groups = {"all": list(ops)} | {k: [o for o in ops if o.kind == k] for k in ("write", "merge")}
    out: dict = {}
    for name, rows in groups.items():
        delta = [o.delta for o in rows]
        out[name] = {
            "n": len(rows),
            "delta_nonzero": sum(x != 0 for x in delta),
            "mean_delta": float(np.mean(delta)) if rows else None,
            "spearman": {
                m: bootstrap_spearman([o.credit[m] for o in rows], delta, n_boot, seed=seed).to_dict()
                for m in map(str, MODES)
            },
            "credit_nonzero": {m: sum(o.credit[m] != 0 for o in rows) for m in map(str, MODES)},
        }
    return out
