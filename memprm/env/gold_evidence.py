"""Gold evidence of a bank and a quiz: the ``gold`` credit arm's entry credit and ``bank/evidence_kept``.

Adapters from the bank and the quiz to the pure maths of :mod:`memprm.credit.gold`: an entry's source turns
are those of all its versions (the reader sees the whole chain), over the managed layers only (verbatim
entries are written by no operation); a quiz item's gold evidence is its question's ``evidence`` (a probe's:
its anchor turn).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from memprm.credit.gold import EvidenceKept, GoldOutcome, evidence_kept, gold_credit
from memprm.env.exam import Quiz
from memprm.memory.bank import MANAGED_LAYERS, BankView, MemoryBank


def entry_sources(
    bank: MemoryBank | BankView, layers: Collection[str] = MANAGED_LAYERS
) -> dict[str, frozenset[str]]:
    """Entry id → the source turn ids of all its versions, for the entries of ``layers``."""
    return {
        e.id: frozenset(t for v in e.versions for t in v.source_turn_ids) for e in bank if e.layer in layers
    }


def quiz_evidence(quiz: Quiz) -> list[str]:
    """Every gold evidence turn id of the quiz's items (repeats included)."""
    return [t for item in quiz.items for t in item.question.evidence]


def bank_evidence_kept(bank: MemoryBank | BankView, evidence: Iterable[str]) -> EvidenceKept:
    """How many of the distinct ``evidence`` turns some managed entry of ``bank`` holds."""
    return evidence_kept(entry_sources(bank), evidence)


def gold_entry_credit(
    bank: MemoryBank, quiz: Quiz, correct: Mapping[str, bool], positive: str = "max"
) -> dict[str, float]:
    """Entry id → gold credit (:func:`memprm.credit.gold.gold_credit`) for every entry of ``bank`` (verbatim
    ones get 0), over the quiz items scored in ``correct`` (question id → judged correct; failed or dropped
    questions are absent and pay nothing)."""
    outcomes = [
        GoldOutcome(i.question.id, i.question.evidence, i.weight, correct[i.question.id])
        for i in quiz.items
        if i.question.id in correct
    ]
    return gold_credit(entry_sources(bank), outcomes, positive, entry_ids=[e.id for e in bank])
