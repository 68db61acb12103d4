"""The composite per-step reward and the shaping share.

``r_t = w_task·R·1[t = T−1] + w_u·u_t − w_miss·miss_t + λ(k)·s̃_t`` for the steps t = 0..T−1 of one rollout
(the paper writes 1[t = T] with steps counted from 1): R ∈ [0, 1] is the rollout's exam accuracy, u_t the
verified credit of the step's operation (:func:`memprm.credit.step_credit`), miss_t the coverage penalty,
s̃_t the critic shaping and λ(k) its annealed weight at optimizer step k
(:func:`memprm.credit.lambda_schedule`).

The shaping share is the shaping term's absolute mass over the summed absolute masses of all four
components, ``Σ|λ s̃| / (Σ|task| + Σ|w_u u| + Σ|w_miss miss| + Σ|λ s̃|)``: measured per component, so that
terms of opposite sign cannot cancel and the share stays in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memprm.credit.types import CreditError, as_vector


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the composite reward's measured terms (λ(k) weighs the shaping and is passed per step k).

    The paper gives no values for them; 1.0 each puts R, a load-bearing entry's credit and a miss on one scale.
    """

    #: weight of the task reward R, paid once at the last step.
    task: float = 1.0
    #: weight of the verified per-operation credit u_t.
    credit: float = 1.0
    #: weight of the coverage penalty miss_t (subtracted).
    miss: float = 1.0

    def __post_init__(self) -> None:
        for name in ("task", "credit", "miss"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise CreditError(f"RewardWeights.{name} must be finite and >= 0, got {v!r}")


@dataclass(frozen=True)
class RewardBreakdown:
    """Each weighted, signed component ``[T]`` and their sum ``total`` ``[T]`` (``miss`` is ≤ 0)."""

    task: np.ndarray
    credit: np.ndarray
    miss: np.ndarray
    shaping: np.ndarray
    total: np.ndarray


def composite_rewards(
    task_reward: float,
    credit: object,
    miss: object,
    shaping: object,
    *,
    lam: float,
    weights: RewardWeights | None = None,
) -> RewardBreakdown:
    """The per-step rewards of one rollout of T >= 1 gate steps, with their components.

    >>> b = composite_rewards(0.5, [0.6, 0.0, 1.0], [0, 1, 0], [0.2, 0.4, 0.2], lam=0.5,
    ...                       weights=RewardWeights(task=2.0, credit=1.0, miss=0.5))
    >>> b.total.round(6).tolist()   # [0.6 + 0.1, −0.5 + 0.2, 1.0 + 0.1 + 2·0.5]
    [0.7, -0.3, 2.1]
    >>> round(shaping_share(b), 6)  # 0.4 / (1.0 + 1.6 + 0.5 + 0.4)
    0.114286
    """
    weights = weights or RewardWeights()
    if not (math.isfinite(task_reward) and 0.0 <= task_reward <= 1.0):
        raise CreditError(f"composite_rewards: task_reward R must lie in [0, 1], got {task_reward!r}")
    if not (math.isfinite(lam) and lam >= 0):
        raise CreditError(f"composite_rewards: lam = λ(k) must be finite and >= 0, got {lam!r}")
    u = as_vector(credit, "composite_rewards: credit")  # [T]
    if u.shape[0] == 0:
        raise CreditError("composite_rewards: a rollout needs at least one step (R is paid at the last one)")
    m = as_vector(miss, "composite_rewards: miss", length=u.shape[0])  # [T]
    s = as_vector(shaping, "composite_rewards: shaping", length=u.shape[0])  # [T]
    task = np.zeros_like(u)
    task[-1] = weights.task * task_reward
    parts = (task, weights.credit * u, -weights.miss * m, lam * s)
    return RewardBreakdown(*parts, total=parts[0] + parts[1] + parts[2] + parts[3])


#: the components of a composite reward, in the order :func:`reward_masses` sums them.
COMPONENTS = ("task", "credit", "miss", "shaping")


def reward_masses(breakdowns: RewardBreakdown | Sequence[RewardBreakdown]) -> tuple[float, ...]:
    """Σ|component| over every step of one or more rollouts, per component (:data:`COMPONENTS` order).

    >>> reward_masses(composite_rewards(1.0, [0.5, 0.0], [0, 1], [0.5, 0.5], lam=0.2))
    (1.0, 0.5, 1.0, 0.2)
    >>> reward_masses([])
    (0.0, 0.0, 0.0, 0.0)
    """
    items = [breakdowns] if isinstance(breakdowns, RewardBreakdown) else list(breakdowns)
    return tuple(sum((float(np.abs(getattr(b, c)).sum()) for b in items), 0.0) for c in COMPONENTS)


def shaping_share(breakdowns: RewardBreakdown | Sequence[RewardBreakdown]) -> float:
    """|shaping| mass over the total |component| mass of one or more rollouts; 0.0 when there is no reward.

    >>> b = composite_rewards(1.0, [0.0, 0.0], [0, 0], [0.5, 0.5], lam=0.2)
    >>> round(shaping_share(b), 6)   # 0.2 / (1.0 + 0.2)
    0.166667
    """
    masses = reward_masses(breakdowns)
    total = sum(masses)
    return masses[COMPONENTS.index("shaping")] / total if total > 0 else 0.0
