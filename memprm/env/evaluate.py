"""Evaluating a memory manager on held-out dialogues (dev selection half, test).

Protocol: the manager (greedy) builds the bank over the whole dialogue, window by window from an empty bank;
then every official question of the dialogue is answered from the final bank with the shared reader and
judged. Accuracy is over questions (each weighs 1), overall and by category, with the mean reader context
size; probes are a training signal and are not asked here. Nothing is trained or cached across calls.
Per-dialogue counts give the dialogue-clustered 95% interval of the accuracy (:meth:`EvalResult.interval`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from memprm.credit.gold import EvidenceKept
from memprm.data.records import Dialogue
from memprm.env.audit import AuditResult, audit_exam
from memprm.env.exam import ExamResult, Quiz, QuizItem, ReaderCache, run_exam
from memprm.env.gold_evidence import bank_evidence_kept, quiz_evidence
from memprm.env.memory_env import Manager, MemoryEnv, WindowPlay
from memprm.eval.significance import Interval, clustered_interval
from memprm.llm.failures import FailureGuard
from memprm.logs import progress as progress_bar
from memprm.memory.bank import MANAGED_LAYERS, MemoryBank


@dataclass(frozen=True)
class EvalResult:
    accuracy: float
    n_questions: int
    context_tokens: float
    by_category: dict[str, float] = field(default_factory=dict)
    per_dialogue: dict[str, float] = field(default_factory=dict)
    entries: float = 0.0  # managed entries per dialogue, mean
    versions_per_entry: float = 0.0
    #: with ``audit=True``: entries whose deletion flipped an answer / entries deletion-tested (all dialogues).
    flips: int = 0
    tested: int = 0
    #: questions whose reader or judge call failed: not scored (not in ``n_questions`` or any accuracy).
    failed: int = 0
    #: per dialogue: questions scored and answered correctly (the clusters of :meth:`interval`).
    per_dialogue_questions: dict[str, int] = field(default_factory=dict)
    per_dialogue_correct: dict[str, int] = field(default_factory=dict)
    #: share of the questions' gold evidence turns (distinct per dialogue, pooled over the dialogues) that
    #: some managed entry of the final bank holds among its source turns
    #: (:func:`memprm.env.gold_evidence.bank_evidence_kept`); None without evidence or in older results.
    evidence_kept: float | None = None

    def interval(self, level: float = 0.95) -> Interval:
        """The dialogue-clustered ``level`` interval of :attr:`accuracy`
        (:func:`memprm.eval.significance.clustered_interval`; undefined for results saved without counts)."""
        ids = list(self.per_dialogue_questions)
        return clustered_interval(
            [self.per_dialogue_correct[i] for i in ids], [self.per_dialogue_questions[i] for i in ids], level
        )

    def as_metrics(self, prefix: str) -> dict[str, float]:
        out = {
            f"{prefix}/accuracy": self.accuracy,
            f"{prefix}/context_tokens": self.context_tokens,
            f"{prefix}/entries": self.entries,
            f"{prefix}/versions_per_entry": self.versions_per_entry,
        }
        out |= {f"{prefix}/accuracy_{k}": v for k, v in self.by_category.items()}
        if self.evidence_kept is not None:
            out[f"{prefix}/evidence_kept"] = self.evidence_kept
        return out


@dataclass(frozen=True)
class DialogueEval:
    """What one dialogue's evaluation left behind, for an ``on_dialogue`` observer (the audit trail)."""

    dialogue: Dialogue
    bank: MemoryBank  # the final bank
    plays: tuple[WindowPlay, ...]  # the gates of every window, in order
    exam: ExamResult
    audit: AuditResult | None  # with ``audit=True``


def evaluate_manager(
    env: MemoryEnv,
    dialogues: Sequence[Dialogue],
    manager: Manager,
    desc: str = "eval",
    progress: bool = True,
    audit: bool = False,
    on_dialogue: Callable[[DialogueEval], None] | None = None,
) -> EvalResult:
    """The protocol of the module docstring; ``audit`` also runs the deletion tests of every final bank's exam
    (:func:`memprm.env.audit.audit_exam`) and counts flipped / tested entries. ``on_dialogue`` is called with
    each dialogue's :class:`DialogueEval` (``fit``'s test stage writes the audit trail with it)."""
    cache = ReaderCache(env.reader, env.judge)
    exams: list[tuple[str, ExamResult]] = []
    sizes = []
    flips = tested = 0
    evidence = EvidenceKept(0, 0)
    guard = FailureGuard()
    bar = progress_bar(dialogues, desc=desc, unit="dialogue", enabled=progress)
    for d in bar:
        bank = MemoryBank()
        plays = tuple(env.play_window(d, s.index, bank, manager) for s in d.sessions)
        quiz = official_quiz(d)
        exam = run_exam(bank, quiz, env.reader, env.judge, env.retriever, cache)
        audited = audit_exam(bank, exam, env.reader, env.judge, env.retriever, cache) if audit else None
        if audited is not None:
            tested += len({r.entry_id for r in audited.records if r.flips is not None})
            flips += len({r.entry_id for r in audited.records if r.flips})
        if on_dialogue is not None:
            on_dialogue(DialogueEval(d, bank, plays, exam, audited))
        try:
            guard.check(f"{desc}, dialogue {d.id}")
        except Exception:
            bar.close()  # the bar's last line before the error's
            raise
        exams.append((d.id, exam))
        sizes.append(bank.stats(MANAGED_LAYERS))
        evidence += bank_evidence_kept(bank, quiz_evidence(quiz))
    return summarize_exams(exams, sizes, flips=flips, tested=tested, evidence=evidence)


def official_quiz(dialogue: Dialogue) -> Quiz:
    """Every official question of ``dialogue``, each weighing 1 (the test protocol's exam)."""
    return Quiz(tuple(QuizItem(q, 1.0, "official") for q in dialogue.questions))


def summarize_exams(
    exams: Sequence[tuple[str, ExamResult]],
    sizes: Sequence[Mapping[str, float]],
    flips: int = 0,
    tested: int = 0,
    evidence: EvidenceKept | None = None,
) -> EvalResult:
    """The :class:`EvalResult` of per-dialogue exams ``(dialogue id, exam)`` and final-bank sizes
    (``MemoryBank.stats``, one per dialogue): failed items are counted, never scored. ``evidence``: the
    final banks' gold evidence turns kept, summed over the dialogues."""
    correct: dict[str, list[bool]] = defaultdict(list)
    per_dialogue, tokens = {}, []
    per_questions: dict[str, int] = {}
    per_correct: dict[str, int] = {}
    failed = 0
    for did, exam in exams:
        failed += exam.n_failed
        for r in exam.results:
            if not r.failed:  # a failed call is not scored
                correct[r.item.question.category].append(r.correct)
        per_dialogue[did] = exam.accuracy
        scored = [r.correct for r in exam.results if not r.failed]
        per_questions[did], per_correct[did] = len(scored), sum(scored)
        tokens.extend(r.answer.context_tokens for r in exam.results)
    flat = [c for v in correct.values() for c in v]
    n = len(flat)
    return EvalResult(
        accuracy=sum(flat) / n if n else 0.0,
        n_questions=n,
        context_tokens=sum(tokens) / len(tokens) if tokens else 0.0,
        by_category={k: sum(v) / len(v) for k, v in sorted(correct.items())},
        per_dialogue=per_dialogue,
        entries=sum(s["entries"] for s in sizes) / max(len(sizes), 1),
        versions_per_entry=sum(s["versions_per_entry"] for s in sizes) / max(len(sizes), 1),
        flips=flips,
        tested=tested,
        failed=failed,
        per_dialogue_questions=per_questions,
        per_dialogue_correct=per_correct,
        evidence_kept=evidence.share if evidence is not None else None,
    )


def greedy_manager(policy) -> Manager:
    """A :class:`~memprm.env.policy.GatePolicy` as a deterministic manager (its most likely action)."""

    def manage(obs):
        return policy.act(obs, greedy=True)[0]

    return manage
