"""Dialogue-level significance tests (the paper treats each test dialogue as one unit).

- ``sign_test(a, b)``: exact one-sided sign test that arm ``a`` beats arm ``b`` on paired units; ties are
  dropped (the usual convention). With 5 units all won, p = 1/32 ≈ 0.031, the paper's "5-unit floor".
- ``paired_permutation(a, b)``: exact one-sided paired permutation test of the mean difference (all 2^n sign
  flips for n ≤ 16, else ``n_perm`` random flips with a seeded generator).

>>> sign_test([0.8, 0.7, 0.9, 0.6, 0.75], [0.7, 0.6, 0.8, 0.5, 0.7]).p_value
0.03125
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SignificanceResult:
    statistic: float
    p_value: float
    n: int  # units used (sign test: untied pairs)


def _paired(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired tests need two 1-D sequences of equal length, got {a.shape} and {b.shape}")
    return a - b


def sign_test(a: Sequence[float], b: Sequence[float]) -> SignificanceResult:
    d = _paired(a, b)
    wins, n = int((d > 0).sum()), int((d != 0).sum())
    p = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n if n else 1.0
    return SignificanceResult(float(wins), p, n)


def paired_permutation(
    a: Sequence[float], b: Sequence[float], n_perm: int = 10_000, seed: int = 0
) -> SignificanceResult:
    d = _paired(a, b)
    n, observed = len(d), float(d.mean()) if len(d) else 0.0
    if n == 0:
        return SignificanceResult(0.0, 1.0, 0)
    if n <= 16:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))  # [2^n, n]
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_perm, n))
    means = (signs * d).mean(axis=1)
    return SignificanceResult(observed, float((means >= observed - 1e-12).mean()), n)
