"""Types of offline hindsight relabeling: tiers, their targets, teacher decisions and labeled examples.

Entry tiers, lowest first (DESIGN.md, "Relabeling tiers"): ``inert`` (never retrieved) ≺ ``duplicate``
(a later copy in a content cluster) ≺ ``novel_uncited`` (retrieved, never cited on a correct answer) ≺
``cited_non_flipping`` ≺ ``load_bearing`` (a deletion flipped an answer). Noop decisions get one of two labels
of their own: ``miss`` (the turn anchors a failed probe, or the counterfactual Noop of a load-bearing write)
and ``skip`` (any other Noop). Offline tiers ignore toxicity: cures enter only the online Eq. (6).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from memprm.credit.types import OP_KINDS, AuditRecord, CreditError, OpKind


class Tier(enum.StrEnum):
    INERT = "inert"
    DUPLICATE = "duplicate"
    NOVEL_UNCITED = "novel_uncited"
    CITED_NON_FLIPPING = "cited_non_flipping"
    LOAD_BEARING = "load_bearing"
    MISS = "miss"
    SKIP = "skip"


#: the ordinal entry tiers, lowest first (``miss`` and ``skip`` label Noops and are outside this order).
ENTRY_TIERS: tuple[Tier, ...] = (
    Tier.INERT,
    Tier.DUPLICATE,
    Tier.NOVEL_UNCITED,
    Tier.CITED_NON_FLIPPING,
    Tier.LOAD_BEARING,
)


@dataclass(frozen=True)
class TierTargets:
    """The critic's regression target u ∈ [0, 1] per tier. Entry tiers must be non-decreasing in order.

    ``skip`` is not fixed by the paper: a Noop that missed nothing has no measured value, so it defaults to the
    level of a harmless but unused write.
    """

    inert: float = 0.0
    duplicate: float = 0.1
    novel_uncited: float = 0.3
    cited_non_flipping: float = 0.6
    load_bearing: float = 1.0
    miss: float = 0.0
    skip: float = 0.3

    def __post_init__(self) -> None:
        for t in Tier:
            v = getattr(self, t.value)
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise CreditError(f"TierTargets.{t.value} must lie in [0, 1], got {v!r}")
        values = [getattr(self, t.value) for t in ENTRY_TIERS]
        if any(a > b for a, b in zip(values, values[1:], strict=False)):
            raise CreditError(f"TierTargets must be non-decreasing inert ≺ … ≺ load_bearing, got {values}")

    def __getitem__(self, tier: Tier) -> float:
        return getattr(self, Tier(tier).value)


@dataclass(frozen=True)
class RelabelConfig:
    #: two content operations on different entries are copies when their embedding cosine is >= this.
    cluster_threshold: float = 0.9
    #: two Writes that start different entries with the same layer and non-empty key are copies too
    #: (a contradictory pair: the second should have been a Merge), whatever their cosine.
    same_key_is_copy: bool = True
    targets: TierTargets = field(default_factory=TierTargets)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.cluster_threshold) and -1.0 <= self.cluster_threshold <= 1.0):
            raise CreditError(
                f"RelabelConfig.cluster_threshold must lie in [-1, 1], got {self.cluster_threshold}"
            )


@dataclass(frozen=True)
class Neighbour:
    """An entry the retriever returned at decision time, rendered as the policy saw it."""

    entry_id: str
    layer: str
    text: str
    #: the entry's key (what its Write was keyed by: a profile note's "<person>/<attribute>"; "" for none).
    key: str = ""


@dataclass(frozen=True)
class TeacherDecision:
    """One gate decision of a teacher trajectory with its decision-time context.

    ``target_entry_id`` is the entry a Write started or a Merge appended to (None for a Noop). The target's
    chain at decision time is not an input: :func:`memprm.credit.relabel_tiers` rebuilds it from the earlier
    decisions, so nothing written later can reach it.
    """

    op_id: str
    kind: OpKind
    layer: str
    turn_id: str
    turn_text: str
    context_turns: tuple[str, ...] = ()
    content: str | None = None
    key: str = ""
    target_entry_id: str | None = None
    neighbours: tuple[Neighbour, ...] = ()
    turn_is_informative: bool = True

    def __post_init__(self) -> None:
        where = f"TeacherDecision(op_id={self.op_id!r})"
        if self.kind not in OP_KINDS:
            raise CreditError(f"{where}: kind must be one of {OP_KINDS}, got {self.kind!r}")
        if self.kind == "noop":
            if self.content is not None or self.target_entry_id is not None:
                raise CreditError(f"{where}: a Noop has no content and no target_entry_id")
        elif not self.content or not self.target_entry_id:
            raise CreditError(f"{where}: a {self.kind} needs non-empty content and target_entry_id")


@dataclass(frozen=True)
class EntryOutcome:
    """What the audits saw of one entry over all of its quizzes (hindsight; labels only, never features)."""

    entry_id: str
    retrieved: bool
    cited_correct: bool
    flipped: bool

    def __post_init__(self) -> None:
        if (self.flipped and not self.cited_correct) or (self.cited_correct and not self.retrieved):
            raise CreditError(
                f"EntryOutcome(entry_id={self.entry_id!r}): needs flipped ⇒ cited_correct ⇒ "
                f"retrieved, got {self.retrieved}, {self.cited_correct}, {self.flipped}"
            )

    @property
    def tier(self) -> Tier:
        if self.flipped:
            return Tier.LOAD_BEARING
        if self.cited_correct:
            return Tier.CITED_NON_FLIPPING
        return Tier.NOVEL_UNCITED if self.retrieved else Tier.INERT


def entry_outcomes(records: Iterable[AuditRecord]) -> dict[str, EntryOutcome]:
    """Fold audit records (any number of quizzes) into one :class:`EntryOutcome` per entry with records.

    >>> rs = [AuditRecord("e1", "q1", 1.0, True, True, True, flips=False),
    ...       AuditRecord("e1", "q2", 1.0, False, True, False)]
    >>> entry_outcomes(rs)["e1"].tier
    <Tier.CITED_NON_FLIPPING: 'cited_non_flipping'>
    """
    acc: dict[str, list[bool]] = {}
    for r in records:
        flags = acc.setdefault(r.entry_id, [False, False, False])
        flags[0] |= r.retrieved
        flags[1] |= r.correct and r.cited
        flags[2] |= bool(r.flips)
    return {e: EntryOutcome(e, *flags) for e, flags in acc.items()}


@dataclass(frozen=True)
class LabeledExample:
    """One critic training example: decision-time fields, then the hindsight labels.

    ``target_chain`` holds the contents of the target entry's versions that existed when the decision was
    taken (empty for a Write or Noop). ``source`` is ``teacher`` or the kind of counterfactual; ``origin_op_id``
    is the teacher decision it was derived from (its own op id for ``teacher``).
    """

    op_id: str
    kind: OpKind
    layer: str
    turn_id: str
    turn_text: str
    context_turns: tuple[str, ...]
    content: str | None
    key: str
    target_entry_id: str | None
    target_chain: tuple[str, ...]
    neighbours: tuple[Neighbour, ...]
    tier: Tier
    target: float
    u_rr: int
    source: str
    origin_op_id: str


@dataclass(frozen=True)
class RelabelCounts:
    """How many examples of each kind were made, and how many counterfactuals were skipped and why."""

    teacher: int = 0
    cf_noop_miss: int = 0
    cf_uninformative_write: int = 0
    cf_forced_merge: int = 0
    #: teacher Writes with no same-layer managed neighbour at decision time to merge into.
    forced_merge_skipped_no_neighbour: int = 0
    #: teacher Writes that were later copies in a content cluster (merging would have been right).
    forced_merge_skipped_copy: int = 0
    #: teacher Noops on uninformative turns with no text to write.
    uninformative_write_skipped_empty_turn: int = 0
    #: teacher ops capped at ``duplicate`` as later copies in a content cluster.
    copies_penalized: int = 0
    #: earliest writers that inherited a higher tier from a later copy.
    earliest_promoted: int = 0
