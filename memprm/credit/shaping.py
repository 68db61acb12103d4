"""Critic shaping: the suffix-min rule, the sum form (ablation arm) and the annealing schedule λ(k).

``scores[t]`` = p_t = φ(x_t) ∈ [0, 1] is the critic's score of the operation actually taken at step t (for a
Noop step that is φ_N(x_t), the critic's score of the Noop). For a Noop step the shaping is that direct
payout, s̃_t = φ_N(x_t); for a Write/Merge step it is computed over the *non-Noop* steps from t on:

- suffix-min (the method): ``s̃_t = min_{s ≥ t, a_s ≠ Noop} p_s``. It never exceeds p_t, is 1-Lipschitz in
  the scores, and raising a score that is no suffix minimum changes no credit (paper, Appendix B);
- sum (ablation): ``s̃_t = Σ_{s ≥ t, a_s ≠ Noop} p_s``, which every single-score inflation raises. The paper
  rescales it before training to the min arm's mean magnitude: pass ``scale`` (see :func:`sum_shaping_scale`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from memprm.credit.types import CreditError, as_vector


def _inputs(scores: object, is_noop: object, fn: str) -> tuple[np.ndarray, np.ndarray]:
    p = as_vector(scores, f"{fn}: scores")  # [T]
    mask = np.asarray(is_noop)
    if mask.shape != p.shape or mask.dtype != bool:
        raise CreditError(
            f"{fn}: is_noop must be a bool array of shape {p.shape}, got {mask.dtype} {mask.shape}"
        )
    out_of_range = np.flatnonzero((p < 0) | (p > 1))
    if out_of_range.size:
        t = int(out_of_range[0])
        raise CreditError(f"{fn}: scores[{t}] = {p[t]} lies outside [0, 1] (critic scores are probabilities)")
    return p, mask


def suffix_min_shaping(scores: object, is_noop: object) -> np.ndarray:
    """``s̃`` ``[T]``: suffix minimum over the non-Noop steps for Write/Merge steps, the score itself for Noops.

    >>> suffix_min_shaping([0.9, 0.5, 0.7, 0.2, 0.8], [False, False, True, False, False]).tolist()
    [0.2, 0.2, 0.7, 0.2, 0.8]
    """
    p, noop = _inputs(scores, is_noop, "suffix_min_shaping")
    out = p.copy()  # [T]; Noop steps keep φ_N(x_t)
    running = math.inf
    for t in range(p.shape[0] - 1, -1, -1):
        if not noop[t]:
            running = min(running, p[t])
            out[t] = running
    return out


def sum_shaping(scores: object, is_noop: object, *, scale: float = 1.0) -> np.ndarray:
    """``s̃`` ``[T]``: ``scale`` × the suffix sum over the non-Noop steps for Write/Merge steps; Noops keep
    their score (unscaled).

    >>> sum_shaping([0.9, 0.5, 0.7, 0.2, 0.8], [False, False, True, False, False]).round(6).tolist()
    [2.4, 1.5, 0.7, 1.0, 0.8]
    """
    if not (math.isfinite(scale) and scale >= 0):
        raise CreditError(f"sum_shaping: scale must be finite and >= 0, got {scale!r}")
    p, noop = _inputs(scores, is_noop, "sum_shaping")
    masked = np.where(noop, 0.0, p)  # [T]
    suffix = np.cumsum(masked[::-1])[::-1]  # [T]
    return np.where(noop, p, scale * suffix)


def magnitude_ratio(reference: object, values: object) -> float:
    """``Σ|reference| / Σ|values|``: the factor that gives ``values`` the mean magnitude of ``reference``.

    :func:`sum_shaping_scale` uses it to rescale the sum arm to the suffix-min arm (Remark 4).

    >>> magnitude_ratio([0.2, 0.2, 0.8], [2.4, 1.5, 0.8])
    0.25531914893617025
    """
    ref = as_vector(reference, "magnitude_ratio: reference")
    val = as_vector(values, "magnitude_ratio: values")
    mass = float(np.abs(val).sum())
    if mass == 0:
        raise CreditError("magnitude_ratio: values have zero magnitude; there is nothing to rescale")
    return float(np.abs(ref).sum()) / mass


def sum_shaping_scale(windows: Iterable[tuple[object, object]]) -> float:
    """The ``scale`` of :func:`sum_shaping` that gives the sum arm the suffix-min arm's mean magnitude over
    ``windows`` (Remark 4): ``windows`` yields one ``(scores, is_noop)`` per episode window, each shaped on its
    own as a rollout's is. The ratio (:func:`magnitude_ratio`) is taken over the Write/Merge steps: Noop steps
    carry the same unscaled score in both forms, so the scaled sum then has the suffix-min mean magnitude
    over all steps. :class:`CreditError` when the sum has zero magnitude (no Write/Merge step scored > 0).

    >>> first = ([0.9, 0.5, 0.7, 0.2, 0.8], [False, False, True, False, False])  # min 1.4, sum 5.7
    >>> round(sum_shaping_scale([first, ([0.4, 0.6], [False, False])]), 6)  # (1.4 + 1.0) / (5.7 + 1.6)
    0.328767
    """
    mins, sums = [np.zeros(0)], [np.zeros(0)]
    for scores, is_noop in windows:
        p, noop = _inputs(scores, is_noop, "sum_shaping_scale")
        mins.append(suffix_min_shaping(p, noop)[~noop])
        sums.append(sum_shaping(p, noop)[~noop])
    s_min, s_sum = np.concatenate(mins), np.concatenate(sums)
    if not s_sum.any():
        raise CreditError(
            f"sum_shaping_scale: the sum shaping of the {s_sum.size} Write/Merge steps given has zero "
            "magnitude (none, or all scored 0); there is nothing to rescale"
        )
    return magnitude_ratio(s_min, s_sum)


def lambda_schedule(k: float, lambda0: float, lambda_inf: float, k_decay: float) -> float:
    """``λ(k) = (λ0 − λ∞)·max(1 − k/K_decay, 0) + λ∞``: linear from λ0 at k = 0 to λ∞ at k ≥ K_decay.

    Requires ``k >= 0``, ``K_decay > 0`` and ``λ0 >= λ∞ >= 0`` (so λ is non-increasing).

    >>> [round(lambda_schedule(k, 1.0, 0.2, 100), 6) for k in (0, 50, 100, 150)]
    [1.0, 0.6, 0.2, 0.2]
    """
    for name, v in (("k", k), ("lambda0", lambda0), ("lambda_inf", lambda_inf), ("k_decay", k_decay)):
        if not math.isfinite(v):
            raise CreditError(f"lambda_schedule: {name} must be finite, got {v!r}")
    if k < 0:
        raise CreditError(f"lambda_schedule: k (the optimizer step) must be >= 0, got {k}")
    if k_decay <= 0:
        raise CreditError(f"lambda_schedule: k_decay must be > 0, got {k_decay}")
    if not lambda0 >= lambda_inf >= 0:
        raise CreditError(f"lambda_schedule: needs lambda0 >= lambda_inf >= 0, got {lambda0}, {lambda_inf}")
    return (lambda0 - lambda_inf) * max(1.0 - k / k_decay, 0.0) + lambda_inf
