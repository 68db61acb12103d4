"""Online verified credit: Eq. (6) per entry over one quiz, with the ladder's credit arms as options.

Eq. (6), per audit record (entry i, question q)::

    u_iq = 1[correct]·(w_r·retrieved + w_c·cited + w_f·flips) − w_tox·1[¬correct]·cited·cures

aggregated per entry over the quiz by :func:`presence_credit`; the reward-design ladder's credit arms
(:class:`CreditVariant`) drop or scramble its terms.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from memprm.credit.chains import ChainMode
from memprm.credit.types import AuditRecord, CreditError


class CreditVariant(enum.StrEnum):
    """The reward-design ladder's credit arms, options of :func:`presence_credit`.

    - ``full``: Eq. (6).
    - ``observational``: ``1[correct]·(w_r·retrieved + w_c·cited)``: no flip promotion, no toxicity.
    - ``flip_only``: Eq. (6) without the toxicity term (observational + flips).
    - ``toxicity_only``: Eq. (6) without the flip term (observational + toxicity).
    - ``matched_scale``: observational, multiplied by ``Σ_i |u_i^full| / Σ_i |u_i^obs|`` over the entries of
      the given quiz (the call's records), so its mean |u| equals the full method's; the ratio is the same
      whichever zero-credit entries the mean includes. If the observational mass is 0 every credit is 0.
    - ``shuffled_flip``: Eq. (6) after permuting the flip outcomes among the tested records (those with
      ``flips`` not None) with ``numpy.random.default_rng(seed)``. The number of flips is kept; which entry
      gets one becomes uninformative.
    - ``gold``: no audit: an entry whose source turns hold the gold evidence of a correctly answered quiz
      question gets credit (:func:`memprm.credit.gold.gold_credit`, aggregated by ``positive``; a probe's
      evidence is its anchor turn). It is computed from the bank and the quiz's evidence labels, not from
      audit records, so :func:`presence_credit` refuses it; the rollouts skip the deletion tests.
    """

    FULL = "full"
    OBSERVATIONAL = "observational"
    FLIP_ONLY = "flip_only"
    TOXICITY_ONLY = "toxicity_only"
    MATCHED_SCALE = "matched_scale"
    SHUFFLED_FLIP = "shuffled_flip"
    GOLD = "gold"


@dataclass(frozen=True)
class PresenceWeights:
    """Eq. (6)'s indicator weights; they only set the tier spacing {0, 0.3, 0.6, 1.0}."""

    retrieved: float = 0.3
    cited: float = 0.3
    flips: float = 0.4
    toxicity: float = 1.0

    def __post_init__(self) -> None:
        for name in ("retrieved", "cited", "flips", "toxicity"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise CreditError(f"PresenceWeights.{name} must be finite and >= 0, got {v!r}")


@dataclass(frozen=True)
class CreditConfig:
    """How entry credit is computed and handed to operations (the trainer builds it from YAML)."""

    #: the ladder arm (see :class:`CreditVariant`).
    variant: CreditVariant = CreditVariant.FULL
    weights: PresenceWeights = field(default_factory=PresenceWeights)
    #: per-entry aggregation of the positive part over the quiz: ``max``, question-weighted ``mean``, or
    #: ``share``: each correctly answered question's weight is split among the entries retrieved for it in
    #: proportion to their Eq. (6) values, and an entry sums its shares (a question pays at most its weight
    #: in all, however many entries the bank holds; :func:`presence_credit`).
    positive: str = "max"
    #: per-entry aggregation of the toxicity part: ``any`` or question-weighted ``mean``.
    toxicity: str = "any"
    #: how an entry's credit reaches the operations on its version chain (:func:`propagate_chain_credit`).
    chain: ChainMode = ChainMode.UNNORMALIZED

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", CreditVariant(self.variant))
        object.__setattr__(self, "chain", ChainMode(self.chain))
        if self.positive not in ("max", "mean", "share"):
            raise CreditError(f"CreditConfig.positive must be 'max', 'mean' or 'share', got {self.positive!r}")
        if self.toxicity not in ("any", "mean"):
            raise CreditError(f"CreditConfig.toxicity must be 'any' or 'mean', got {self.toxicity!r}")


def presence_credit(
    records: Sequence[AuditRecord],
    config: CreditConfig | None = None,
    *,
    entry_ids: Iterable[str] = (),
    seed: int | None = None,
) -> dict[str, float]:
    """Entry id → credit u_i over one quiz, for every entry with records and every id in ``entry_ids``.

    Eq. (6), per audit record (entry i, question q)::

        u_iq = 1[correct]·(w_r·retrieved + w_c·cited + w_f·flips) − w_tox·1[¬correct]·cited·cures

    with (w_r, w_c, w_f) = (0.3, 0.3, 0.4) and w_tox = 1 (:class:`PresenceWeights`). An untested flip or cure
    (``None``) counts 0. Per entry over the quiz, the positive part and the toxicity part are aggregated
    separately and ``u_i = positive_i − toxicity_i``:

    - positive: ``max`` over the entry's records (default), the question-weighted ``mean``, or ``share``:
      ``Σ_q w_q · p_iq / Σ_j p_jq`` over the correctly answered questions, the sum over every entry j
      (verbatim ones included) retrieved for q. Under ``max`` every retrieved entry of a correct answer earns
      its tier however many there are, so a bank with more entries collects more credit for the same
      answers; under ``share`` a correct question pays its weight once, split by Eq. (6)'s tiers;
    - toxicity: ``any`` (w_tox if any record is toxic; default) or the question-weighted ``mean``.

    An entry with no records was never retrieved and gets 0 (zero detection). ``config.variant`` picks the
    ladder arm (:class:`CreditVariant`).

    ``seed`` is required by (and only used by) the ``shuffled_flip`` variant. A repeated (entry, question)
    pair raises :class:`CreditError`.

    Worked example (default config):

    >>> rs = [AuditRecord("e1", "q1", 1.0, True, True, True, flips=True),    # 0.3+0.3+0.4 = 1.0
    ...       AuditRecord("e1", "q2", 1.0, True, True, False),               # 0.3
    ...       AuditRecord("e2", "q1", 1.0, True, True, True, flips=False),   # 0.6
    ...       AuditRecord("e3", "q3", 1.0, False, True, True, cures=True)]   # −1.0
    >>> {k: round(v, 6) for k, v in presence_credit(rs, entry_ids=["e9"]).items()}
    {'e1': 1.0, 'e2': 0.6, 'e3': -1.0, 'e9': 0.0}
    >>> obs = CreditConfig(variant="observational")
    >>> {k: round(v, 6) for k, v in presence_credit(rs, obs).items()}
    {'e1': 0.6, 'e2': 0.6, 'e3': 0.0}
    >>> sh = CreditConfig(positive="share")   # q1 splits 1.0 : 0.6; q2 goes to e1 alone
    >>> {k: round(v, 6) for k, v in presence_credit(rs, sh).items()}
    {'e1': 1.625, 'e2': 0.375, 'e3': -1.0}
    >>> ms = CreditConfig(variant="matched_scale")      # × (1.0+0.6+1.0)/(0.6+0.6) = 13/6
    >>> {k: round(v, 6) for k, v in presence_credit(rs, ms).items()}
    {'e1': 1.3, 'e2': 1.3, 'e3': 0.0}
    """
    config = config or CreditConfig()
    variant = config.variant
    if variant is CreditVariant.GOLD:
        raise CreditError(
            "presence_credit: variant 'gold' is computed from the bank's source turns and the quiz's gold "
            "evidence, not from audit records (memprm.credit.gold.gold_credit)"
        )
    if variant is CreditVariant.SHUFFLED_FLIP:
        if seed is None:
            raise CreditError("presence_credit: variant 'shuffled_flip' needs a seed")
        records = _shuffle_flips(records, seed)
    _check_unique(records)
    if variant is CreditVariant.MATCHED_SCALE:
        full = _aggregate(records, config, use_flips=True, use_toxicity=True)
        obs = _aggregate(records, config, use_flips=False, use_toxicity=False)
        obs_mass = sum(abs(v) for v in obs.values())
        scale = sum(abs(v) for v in full.values()) / obs_mass if obs_mass > 0 else 0.0
        credit = {k: v * scale for k, v in obs.items()}
    else:
        use_flips = variant in (CreditVariant.FULL, CreditVariant.FLIP_ONLY, CreditVariant.SHUFFLED_FLIP)
        use_tox = variant in (CreditVariant.FULL, CreditVariant.TOXICITY_ONLY, CreditVariant.SHUFFLED_FLIP)
        credit = _aggregate(records, config, use_flips=use_flips, use_toxicity=use_tox)
    for e in entry_ids:
        credit.setdefault(e, 0.0)
    return credit


def _check_unique(records: Sequence[AuditRecord]) -> None:
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(records):
        key = (r.entry_id, r.question_id)
        if key in seen:
            raise CreditError(f"presence_credit: records[{i}] repeats (entry_id, question_id) = {key}")
        seen.add(key)


def _shuffle_flips(records: Sequence[AuditRecord], seed: int) -> list[AuditRecord]:
    tested = [i for i, r in enumerate(records) if r.flips is not None]
    flips = [records[i].flips for i in tested]
    order = np.random.default_rng(seed).permutation(len(tested))
    out = list(records)
    for slot, src in zip(tested, order, strict=True):
        out[slot] = replace(records[slot], flips=flips[src])
    return out


def _question_shares(rows: Sequence[tuple[AuditRecord, float]]) -> dict[str, float]:
    """Entry → Σ over questions of ``w_q · p_iq / Σ_j p_jq``, from ``(record, p_iq)`` rows (questions whose
    values sum to 0 pay nothing)."""
    totals: dict[str, float] = {}
    for r, p in rows:
        totals[r.question_id] = totals.get(r.question_id, 0.0) + p
    out: dict[str, float] = {}
    for r, p in rows:
        if totals[r.question_id] > 0:
            out[r.entry_id] = out.get(r.entry_id, 0.0) + r.weight * p / totals[r.question_id]
    return out


def _aggregate(
    records: Sequence[AuditRecord], config: CreditConfig, *, use_flips: bool, use_toxicity: bool
) -> dict[str, float]:
    w = config.weights
    pos: dict[str, list[tuple[float, float]]] = {}  # entry → [(question weight, value)]
    tox: dict[str, list[tuple[float, float]]] = {}
    rows: list[tuple[AuditRecord, float]] = []  # (record, p_iq)
    for r in records:
        p = 0.0
        if r.correct:
            p = (
                w.retrieved * r.retrieved
                + w.cited * r.cited
                + (w.flips * bool(r.flips) if use_flips else 0.0)
            )
        t = w.toxicity * float((not r.correct) and r.cited and bool(r.cures)) if use_toxicity else 0.0
        pos.setdefault(r.entry_id, []).append((r.weight, p))
        rows.append((r, p))
        tox.setdefault(r.entry_id, []).append((r.weight, t))
    shared = _question_shares(rows) if config.positive == "share" else {}
    out: dict[str, float] = {}
    for e, pairs in pos.items():
        total_w = sum(q for q, _ in pairs)
        if config.positive == "share":
            p = shared.get(e, 0.0)
        elif config.positive == "max":
            p = max(v for _, v in pairs)
        else:
            p = sum(q * v for q, v in pairs) / total_w
        if config.toxicity == "any":
            t = max(v for _, v in tox[e])
        else:
            t = sum(q * v for q, v in tox[e]) / total_w
        out[e] = p - t
    return out
