"""How far a policy has moved from a reference policy, gate by gate, over the same candidate sets.

Both policies are given as padded log-probability tables ``[N, C]`` (N gates, C = the most candidates any gate
has) with a boolean ``mask`` ``[N, C]`` marking the real candidates (each row holds at least one); padded
cells are ignored whatever they hold. A real cell may be ``-inf`` (probability 0), never NaN or ``+inf``.
:func:`kl_divergence` is exact over the candidates (both distributions live on the same finite set),
:func:`greedy_choices` takes the argmax with ties to the lowest index (as the policies' greedy ``act`` does),
and :func:`even_indices` picks a fixed, evenly spaced subset of gates. numpy only;
:mod:`memprm.callbacks.policy_drift` logs these during GRPO.
"""

from __future__ import annotations

import numpy as np

from memprm.eval.metrics import EvalInputError


def as_table(logp: np.ndarray, mask: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``logp`` [N, C] as float64 with ``-inf`` at padding, and ``mask`` [N, C] as bool, checked."""
    table, m = np.asarray(logp, dtype=np.float64), np.asarray(mask)
    if table.ndim != 2 or m.shape != table.shape or m.dtype != np.bool_:
        raise EvalInputError(
            f"{where}: expected a [N, C] table and a boolean mask of the same shape, got {table.shape} and "
            f"{m.shape} ({m.dtype})"
        )
    empty = np.flatnonzero(~m.any(axis=1))
    if empty.size:
        raise EvalInputError(f"{where}: row {int(empty[0])} has no candidate")
    bad = np.argwhere(m & (np.isnan(table) | (table == np.inf)))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise EvalInputError(f"{where}: log-probability at [{i}, {j}] is {float(table[i, j])}")
    return np.where(m, table, -np.inf), m


def entropy(logp: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """H(π) per row [N] = −Σ_c π_c log π_c over the real candidates (0 · log 0 = 0).

    >>> entropy(np.log([[0.5, 0.5, 1.0]]), np.array([[True, True, False]])).round(6)  # log 2
    array([0.693147])
    """
    table, _ = as_table(logp, mask, "entropy")
    p = np.exp(table)  # [N, C], 0 at padding
    with np.errstate(invalid="ignore"):
        return -np.where(p > 0, p * table, 0.0).sum(axis=1)  # [N]


def kl_divergence(logp: np.ndarray, logq: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """KL(p || q) per row [N] = Σ_c p_c (log p_c − log q_c) over the real candidates; ``inf`` where q puts 0
    on a candidate p does not. Clipped at 0: tables normalised in float32 can sum to a hair below it.

    >>> kl_divergence(np.log([[0.5, 0.5]]), np.log([[0.25, 0.75]]), np.ones((1, 2), bool)).round(6)
    array([0.143841])
    """
    p_table, m = as_table(logp, mask, "kl_divergence(logp)")
    q_table, _ = as_table(logq, mask, "kl_divergence(logq)")
    p = np.exp(p_table)  # [N, C]
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0, p * (p_table - q_table), 0.0)  # [N, C]
    return np.maximum(terms.sum(axis=1), 0.0)  # [N]


def greedy_choices(logp: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The argmax candidate per row [N] (int), the lowest index on ties; padding is never chosen."""
    table, _ = as_table(logp, mask, "greedy_choices")
    return np.argmax(table, axis=1)  # np.argmax returns the first maximum


def changed_share(logp: np.ndarray, ref_logp: np.ndarray, mask: np.ndarray) -> float:
    """The share of rows whose greedy candidate under ``logp`` differs from the one under ``ref_logp``.

    >>> m = np.ones((2, 2), bool)
    >>> changed_share(np.log([[0.5, 0.5], [0.1, 0.9]]), np.log([[0.4, 0.6], [0.2, 0.8]]), m)  # 0 vs 1; 1 vs 1
    0.5
    """
    mine, ref = greedy_choices(logp, mask), greedy_choices(ref_logp, mask)
    if mine.shape != ref.shape:
        raise EvalInputError(f"changed_share: tables of {mine.shape[0]} and {ref.shape[0]} rows")
    return float(np.mean(mine != ref))


def even_indices(n: int, k: int) -> list[int]:
    """``min(n, k)`` distinct indices spread evenly over ``range(n)``, the first always 0: ⌊i·n/k⌋.

    >>> even_indices(10, 4), even_indices(3, 5)
    ([0, 2, 5, 7], [0, 1, 2])
    """
    if n < 0 or k < 1:
        raise EvalInputError(f"even_indices: need n >= 0 and k >= 1, got n={n}, k={k}")
    if n <= k:
        return list(range(n))
    return [i * n // k for i in range(k)]
