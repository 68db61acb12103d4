"""Dialogue-level significance tests (the paper treats each test dialogue as one unit), on top of scipy.

- ``sign_test(a, b)``: exact one-sided sign test (:func:`scipy.stats.binomtest`) that arm ``a`` beats arm
  ``b`` on paired units; ties are dropped (the usual convention). With 5 units all won, p = 1/32 ≈ 0.031,
  the paper's "5-unit floor".
- ``paired_permutation(a, b)``: one-sided paired permutation test of the mean difference
  (:func:`scipy.stats.permutation_test` flipping the sign of whole units): exact over all 2^n sign flips for
  n ≤ 16 (or n_perm ≥ 2^n), else ``n_perm`` random flips from ``default_rng(seed)`` with p = (hits + 1) /
  (n_perm + 1). A flip counts as a hit when its mean is ≥ the observed one less 1e-12 (float ties).
- ``clustered_interval(correct, questions)``: a dialogue-clustered interval of a pooled accuracy.

>>> sign_test([0.8, 0.7, 0.9, 0.6, 0.75], [0.7, 0.6, 0.8, 0.5, 0.7]).p_value
0.03125
>>> paired_permutation([2, 1], [1, 2]).p_value  # d = (1, -1): flip means 0, 1, -1, 0; 3 of 4 are >= 0
0.75
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

_EXACT_MAX_N = 16  # enumerate all 2^n sign flips up to this many units
_TIE_TOL = 1e-12  # a flipped mean this close below the observed one still counts as a hit


@dataclass(frozen=True)
class SignificanceResult:
    statistic: float
    p_value: float
    n: int  # units used (sign test: untied pairs)


@dataclass(frozen=True)
class Interval:
    estimate: float  # pooled accuracy Σc / Σn
    low: float
    high: float
    se: float  # cluster-robust standard error (NaN with fewer than 2 clusters)
    clusters: int
    level: float

    def format(self, scale: float = 100.0) -> str:
        """``low–high`` on ``scale`` (percent by default), or ``–`` when undefined."""
        if not np.isfinite(self.se):
            return "–"
        return f"{scale * self.low:.1f}–{scale * self.high:.1f}"


def clustered_interval(correct: Sequence[float], questions: Sequence[float], level: float = 0.95) -> Interval:
    """The ``level`` interval of Σcorrect / Σquestions clustered by unit.

    ``correct`` [k], ``questions`` [k]: per cluster (dialogue), correct answers and questions scored. Units
    with no question add nothing and are not counted as clusters. The pooled accuracy p = Σc / Σn is a ratio
    estimator; its cluster-robust variance over k clusters is k/(k−1) · Σ (c_i − p·n_i)² / (Σn)², and the
    interval is p ± t_{k−1} · se, clipped to [0, 1] (Student's t with k − 1 degrees of freedom: with 5 test
    dialogues t = 2.78, not 1.96). Undefined (NaN) for k < 2.

    >>> ci = clustered_interval([6, 2], [10, 10])  # p = 0.4, residuals ±2: se = sqrt(2 · 8 / 400) = 0.2
    >>> round(ci.estimate, 6), round(ci.se, 6), round(ci.low, 6), round(ci.high, 6)  # t_1 = 12.706: clipped
    (0.4, 0.2, 0.0, 1.0)
    """
    c, n = np.asarray(correct, dtype=np.float64), np.asarray(questions, dtype=np.float64)
    if c.shape != n.shape or c.ndim != 1:
        raise ValueError(f"clustered_interval: correct and questions must be 1-D of equal length, got {c.shape}, "
                         f"{n.shape}")  # fmt: skip
    if not 0.0 < level < 1.0:
        raise ValueError(f"clustered_interval: level must lie in (0, 1), got {level}")
    if (n < 0).any() or (c < 0).any() or (c > n).any():
        raise ValueError("clustered_interval: need 0 <= correct <= questions for every cluster")
    keep = n > 0
    c, n = c[keep], n[keep]
    k, total = len(n), float(n.sum())
    p = float(c.sum()) / total if total else float("nan")
    if k < 2:
        return Interval(p, float("nan"), float("nan"), float("nan"), k, level)
    resid = c - p * n  # [k]
    se = float(np.sqrt(k / (k - 1) * float((resid**2).sum())) / total)
    half = float(stats.t.ppf(0.5 + level / 2, df=k - 1)) * se
    return Interval(p, max(0.0, p - half), min(1.0, p + half), se, k, level)


def _paired(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired tests need two 1-D sequences of equal length, got {a.shape} and {b.shape}")
    return a - b


def sign_test(a: Sequence[float], b: Sequence[float]) -> SignificanceResult:
    """P(at least ``wins`` of the n untied units won | each won with ½); p = 1 when every unit ties."""
    d = _paired(a, b)
    wins, n = int((d > 0).sum()), int((d != 0).sum())
    p = float(stats.binomtest(wins, n, 0.5, alternative="greater").pvalue) if n else 1.0
    return SignificanceResult(float(wins), p, n)


def _mean(d: np.ndarray, axis: int) -> np.ndarray:
    return d.mean(axis=axis)


def paired_permutation(
    a: Sequence[float], b: Sequence[float], n_perm: int = 10_000, seed: int = 0
) -> SignificanceResult:
    """P(mean of the sign-flipped differences ≥ observed mean); see the module docstring."""
    d = _paired(a, b)
    n = len(d)
    if n == 0:
        return SignificanceResult(0.0, 1.0, 0)
    observed = float(d.mean())
    exact = n <= _EXACT_MAX_N or n_perm >= 2**n
    if n == 1:  # scipy needs two units; the two flips are d and -d
        null = np.array([observed, -observed])
    else:
        null = stats.permutation_test(
            (d,),  # one sample: scipy's null flips the sign of each unit
            _mean,
            permutation_type="samples",
            vectorized=True,
            n_resamples=np.inf if exact else n_perm,
            alternative="greater",
            random_state=np.random.default_rng(seed),
        ).null_distribution
    hits = int(np.count_nonzero(null >= observed - _TIE_TOL))
    return SignificanceResult(observed, hits / null.size if exact else (hits + 1) / (null.size + 1), n)
