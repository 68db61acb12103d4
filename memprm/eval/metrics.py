"""The measurements behind the critic validity checks: rank statistics (via scipy) and deletion causality.

Spearman's ρ is the Pearson correlation of :func:`scipy.stats.rankdata` average ranks (bit-for-bit the old
values, which ``spearmanr``'s ``corrcoef`` is not: 0.8 vs 0.7999…) and the binary AUC is the Mann–Whitney U
of :func:`scipy.stats.mannwhitneyu` over ``n_pos · n_neg`` pairs; with average ranks a tie counts ½.
Not torchmetrics: it ranks in float32, adds 1e-6 to the Spearman denominator (ρ of equal inputs is 0.9999985)
and sends AUC scores outside [0, 1] through a sigmoid, which ties large scores. When a statistic is undefined
(fewer than two items, constant input, one class empty) the result is a :class:`Metric` whose value is NaN and
whose ``reason`` says why; it never raises for that. Malformed input (not 1-D, non-finite values, mismatched
lengths) is a caller bug and raises :class:`EvalInputError` naming the argument and the first bad index.
:func:`deletion_causality` measures accuracy drops through a callback that deletes entries;
:mod:`memprm.eval.validity` re-exports it with the other checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


class EvalInputError(ValueError):
    """Bad input to an evaluation function. The message names the function, the argument and the index."""


@dataclass(frozen=True)
class Metric:
    """A statistic with its sample sizes; ``value`` is NaN exactly when ``reason`` is non-empty.

    ``sizes`` are the group sizes it was computed on: ``(n,)`` for Spearman, ``(n_pos, n_neg)`` for an AUC,
    ``(n_adversarial, n_real)`` for the false-positive rate.
    """

    value: float
    sizes: tuple[int, ...]
    reason: str = ""

    def __post_init__(self) -> None:
        if math.isnan(self.value) != bool(self.reason):
            raise EvalInputError(f"Metric: value {self.value!r} and reason {self.reason!r} disagree")

    @property
    def defined(self) -> bool:
        return not self.reason

    def __float__(self) -> float:
        return self.value

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (NaN becomes None; the reason says why)."""
        return {
            "value": self.value if self.defined else None,
            "reason": self.reason,
            "sizes": list(self.sizes),
        }


def as_scores(values: Sequence[float] | np.ndarray, where: str) -> np.ndarray:
    """``values`` as a finite 1-D float64 array; ``where`` ("function(argument)") names it in errors."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise EvalInputError(f"{where}: expected a 1-D sequence of scores, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise EvalInputError(f"{where}: score at index {int(bad[0])} is not finite ({arr[bad[0]]!r})")
    return arr


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Metric:
    """Spearman's ρ of paired ``x`` [n] and ``y`` [n] with average ranks for ties.

    NaN when n < 2 or either side is constant (its ranks have zero variance).

    >>> round(spearman([1, 2, 2, 3], [1, 3, 2, 4]).value, 6)  # ranks (1, 2.5, 2.5, 4), (1, 3, 2, 4): 3/√10
    0.948683
    >>> spearman([1, 2, 3], [5, 5, 5]).reason
    'Spearman undefined: y is constant over all 3 items'
    """
    xa, ya = as_scores(x, "spearman(x)"), as_scores(y, "spearman(y)")
    if xa.shape != ya.shape:
        raise EvalInputError(f"spearman: x and y must pair up, got lengths {xa.shape[0]} and {ya.shape[0]}")
    n = xa.shape[0]
    if n < 2:
        return Metric(math.nan, (n,), f"Spearman needs at least 2 pairs, got {n}")
    dx = stats.rankdata(xa) - (n + 1) / 2.0  # [n] centred average ranks (their mean is (n+1)/2 with ties too)
    dy = stats.rankdata(ya) - (n + 1) / 2.0
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx == 0.0 or syy == 0.0:
        side = "x" if sxx == 0.0 else "y"
        return Metric(math.nan, (n,), f"Spearman undefined: {side} is constant over all {n} items")
    rho = float(dx @ dy) / math.sqrt(sxx * syy)  # Pearson of the ranks, as stats.spearmanr up to rounding
    return Metric(min(1.0, max(-1.0, rho)), (n,))


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval of a statistic: ``defined`` of ``n_boot`` resamples gave a value."""

    estimate: Metric
    low: float
    high: float
    level: float
    n_boot: int
    defined: int

    def to_dict(self) -> dict[str, object]:
        ok = self.defined > 0
        return self.estimate.to_dict() | {
            "low": self.low if ok else None, "high": self.high if ok else None, "level": self.level,
            "n_boot": self.n_boot, "defined_resamples": self.defined,
        }  # fmt: skip


def bootstrap_spearman(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Spearman's ρ of pairs ``x`` [n], ``y`` [n] with a percentile bootstrap interval: ``n_boot`` resamples
    of the n pairs with replacement (``default_rng(seed)``); a resample whose ρ is undefined (a constant
    side) is left out of the percentiles and ``defined`` counts the rest. With no defined resample the
    bounds are NaN.

    >>> ci = bootstrap_spearman([1, 2, 3, 4], [2, 4, 6, 8], n_boot=50)  # every defined resample is monotone
    >>> ci.estimate.value, ci.low, ci.high
    (1.0, 1.0, 1.0)
    """
    if n_boot < 1 or not 0.0 < level < 1.0:
        raise EvalInputError(f"bootstrap_spearman: need n_boot >= 1 and 0 < level < 1, got {n_boot}, {level}")
    est = spearman(x, y)
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng, values = np.random.default_rng(seed), []
    for _ in range(n_boot if est.defined else 0):  # no resample of an undefined ρ is defined
        idx = rng.integers(len(xa), size=len(xa))  # [n] a resample of the pairs
        rho = spearman(xa[idx], ya[idx])
        if rho.defined:
            values.append(rho.value)
    if not values:
        return BootstrapInterval(est, math.nan, math.nan, level, n_boot, 0)
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return BootstrapInterval(est, float(lo), float(hi), level, n_boot, len(values))


def binary_auc(positive: Sequence[float] | np.ndarray, negative: Sequence[float] | np.ndarray) -> Metric:
    """P(score(pos) > score(neg)) + ½ P(tie) over all pairs: the Mann–Whitney U / (n_pos · n_neg).

    1.0 when every positive outscores every negative, 0.0 when reversed, 0.5 at chance or all ties; NaN when
    either class is empty.

    >>> binary_auc([0.9, 0.5], [0.5, 0.1]).value  # pairs: 1, 1, ½, 1
    0.875
    >>> binary_auc([], [0.5]).reason
    'AUC undefined: the positive class is empty'
    """
    pos, neg = as_scores(positive, "binary_auc(positive)"), as_scores(negative, "binary_auc(negative)")
    n_pos, n_neg = pos.shape[0], neg.shape[0]
    if n_pos == 0 or n_neg == 0:
        empty = "positive" if n_pos == 0 else "negative"
        return Metric(math.nan, (n_pos, n_neg), f"AUC undefined: the {empty} class is empty")
    u = float(stats.mannwhitneyu(pos, neg, method="asymptotic").statistic)  # pairs won by positives, ties ½
    return Metric(u / (n_pos * n_neg), (n_pos, n_neg))


@dataclass(frozen=True)
class DeletionCausality:
    """Accuracy drops in points (100 · (base − accuracy without the k entries)); ``random_drop`` is the mean
    of ``random_drops``, one per repeat."""

    top_drop: float
    random_drop: float
    bottom_drop: float
    k: int
    random_drops: tuple[float, ...] = ()

    def margin(self) -> float:
        """top_drop − random_drop: how much more the critic's top entries matter than random ones (points)."""
        return self.top_drop - self.random_drop

    def ordered(self, gap: float = 0.0) -> bool:
        """top − random > gap and random − bottom > gap (points)."""
        return self.margin() > gap and self.random_drop - self.bottom_drop > gap


def deletion_causality(
    entry_scores: Mapping[str, float],
    accuracy_without: Callable[[list[str]], float],
    base_accuracy: float,
    k: int,
    rng_seed: int,
    random_repeats: int = 5,
) -> DeletionCausality:
    """Delete the k top-scored, k bottom-scored and ``random_repeats`` × k uniformly drawn entries.

    ``accuracy_without(ids)`` returns the accuracy in [0, 1] with those entries removed (top ids are passed
    best first, bottom ids worst first). Equal scores are ordered by entry id (ascending) in both directions;
    random draws are without replacement from the id-sorted entries, so the result is deterministic given
    ``rng_seed``. ``k`` must lie in [1, number of entries]: a larger k raises rather than clamps, because a
    clamped k would silently make top, random and bottom the same set.
    """
    where = "deletion_causality"
    if not 1 <= k <= len(entry_scores):
        raise EvalInputError(f"{where}(k): need 1 <= k <= {len(entry_scores)} entries, got {k}")
    if random_repeats < 1:
        raise EvalInputError(f"{where}(random_repeats): need at least 1, got {random_repeats}")
    if not (math.isfinite(base_accuracy) and 0.0 <= base_accuracy <= 1.0):
        raise EvalInputError(f"{where}(base_accuracy): must lie in [0, 1], got {base_accuracy!r}")
    ids = sorted(entry_scores)
    for i in ids:
        if not math.isfinite(entry_scores[i]):
            raise EvalInputError(f"{where}(entry_scores): entry {i!r} has a non-finite score")

    def drop(deleted: list[str]) -> float:
        acc = float(accuracy_without(deleted))
        if not (math.isfinite(acc) and 0.0 <= acc <= 1.0):
            raise EvalInputError(
                f"{where}(accuracy_without): returned {acc!r} without {len(deleted)} entries "
                f"(first {deleted[0]!r}), not in [0, 1]"
            )
        return 100.0 * (base_accuracy - acc)

    top = sorted(ids, key=lambda i: (-entry_scores[i], i))[:k]
    bottom = sorted(ids, key=lambda i: (entry_scores[i], i))[:k]
    rng = np.random.default_rng(rng_seed)
    randoms = tuple(
        drop([ids[j] for j in sorted(rng.choice(len(ids), size=k, replace=False))])
        for _ in range(random_repeats)
    )
    return DeletionCausality(drop(top), float(np.mean(randoms)), drop(bottom), k, randoms)
