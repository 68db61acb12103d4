"""Credit and coverage from gold evidence labels (the ``gold`` credit arm and ``bank/evidence_kept``).

An entry *holds* a question's gold evidence when its source turns (over all its versions) meet the
question's evidence turns. Gold credit pays an entry that holds the evidence of a correctly answered quiz
question, with no retrieval, citation or deletion test (:func:`gold_credit`); it needs labels a deployment
does not have, so it is the upper reference for credit without them. A source-anchored probe's gold evidence
is its anchor turn (``Question.evidence == (anchor,)``: the turn it was written from and the only one the
probe gates check it against). :func:`evidence_kept` is the share of a quiz's evidence turns that some entry
holds. Inputs are plain (entry id → source turns; :class:`GoldOutcome`), so this module imports no bank.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from memprm.credit.types import CreditError


@dataclass(frozen=True)
class GoldOutcome:
    """One scored quiz question: its gold evidence turns, its weight in the quiz and whether it was right."""

    question_id: str
    evidence: tuple[str, ...]
    weight: float
    correct: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", tuple(self.evidence))
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise CreditError(
                f"GoldOutcome(question_id={self.question_id!r}): weight must be finite and > 0, got {self.weight!r}"
            )


@dataclass(frozen=True)
class EvidenceKept:
    """Of ``total`` distinct gold evidence turns of a quiz, ``kept`` are held by some entry."""

    kept: int
    total: int

    @property
    def share(self) -> float | None:
        """``kept / total``; None for a quiz without evidence (nothing to keep)."""
        return self.kept / self.total if self.total else None

    def __add__(self, other: EvidenceKept) -> EvidenceKept:
        return EvidenceKept(self.kept + other.kept, self.total + other.total)


def gold_credit(
    sources: Mapping[str, Collection[str]],
    outcomes: Sequence[GoldOutcome],
    positive: str = "max",
    *,
    entry_ids: Iterable[str] = (),
) -> dict[str, float]:
    """Entry id → gold credit over one quiz, for every entry in ``sources`` and every id in ``entry_ids``.

    Per (entry i, question q): ``g_iq = 1[correct_q] · 1[sources_i ∩ evidence_q ≠ ∅]`` (1.0 is Eq. (6)'s top
    tier). Per entry, like :class:`~memprm.credit.presence.CreditConfig`'s ``positive``: ``max`` over the
    questions, the question-weighted ``mean`` over the questions whose evidence the entry holds, or ``share``
    (each correct question's weight split equally among the entries holding its evidence). Never negative: a
    wrong answer costs nothing, questions without evidence pay nothing, nor do entries holding no evidence.

    >>> src = {"e1": {"D1:1", "D1:2"}, "e2": {"D1:2"}, "e3": {"D1:5"}}
    >>> qs = [GoldOutcome("q1", ("D1:2",), 1.0, True), GoldOutcome("q2", ("D1:1",), 2.0, False)]
    >>> gold_credit(src, qs), gold_credit(src, qs, "mean"), gold_credit(src, qs, "share")
    ({'e1': 1.0, 'e2': 1.0, 'e3': 0.0}, {'e1': 0.3333333333333333, 'e2': 1.0, 'e3': 0.0}, {'e1': 0.5, 'e2': 0.5, 'e3': 0.0})
    """
    if positive not in ("max", "mean", "share"):
        raise CreditError(f"gold_credit: positive must be 'max', 'mean' or 'share', got {positive!r}")
    seen: set[str] = set()
    for o in outcomes:
        if o.question_id in seen:
            raise CreditError(f"gold_credit: question {o.question_id!r} is given twice")
        seen.add(o.question_id)
    holders = {o.question_id: [e for e, s in sources.items() if set(o.evidence) & set(s)] for o in outcomes}
    out: dict[str, float] = {}
    for e in sources:
        held = [o for o in outcomes if e in holders[o.question_id]]
        if not held:
            out[e] = 0.0
        elif positive == "max":
            out[e] = float(any(o.correct for o in held))
        elif positive == "mean":
            out[e] = sum(o.weight * o.correct for o in held) / sum(o.weight for o in held)
        else:
            out[e] = sum(o.weight / len(holders[o.question_id]) for o in held if o.correct)
    for e in entry_ids:
        out.setdefault(e, 0.0)
    return out


def evidence_kept(sources: Mapping[str, Collection[str]], evidence: Iterable[str]) -> EvidenceKept:
    """How many of the distinct turns ``evidence`` some entry of ``sources`` holds among its source turns.

    >>> evidence_kept({"e1": {"D1:1"}, "e2": {"D1:3", "D1:4"}}, ["D1:1", "D1:2", "D1:3", "D1:1"])
    EvidenceKept(kept=2, total=3)
    """
    wanted = set(evidence)
    held = set().union(*sources.values()) if sources else set()
    return EvidenceKept(len(wanted & held), len(wanted))
