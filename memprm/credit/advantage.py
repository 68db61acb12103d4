"""GRPO advantages over one group of G rollouts forked from the same bank (Shao et al., 2024).

- ``process`` (the method): every step reward of every rollout is normalized by the mean and the std of
  *all* step rewards in the group, ``r̃ = (r − mean) / std``, then ``A_t = Σ_{s ≥ t} r̃_s`` within its rollout.
  Rollouts may have different lengths, but each needs at least one step.
- ``outcome`` (outcome-only arm): every step of rollout i gets ``(R_i − mean R) / std R``.
- ``gate``: each rollout's return to go ``G_t = Σ_{s ≥ t} r_s`` minus the group's mean at the same gate t,
  over the std of those differences (a per-gate baseline); :func:`gate_advantages` does this per reward
  component and weighs the standardized components, so a weight says how much a term steers the advantage.

The std is the population std (ddof = 0), so normalized values have unit variance. A group is skipped
(status not ``ok``, all advantages zero, shapes kept) when it carries no contrast: ``zero_variance`` when the
std is <= ``eps``; ``identical_rollouts`` (process mode) when every rollout got the same sequence of step
rewards (within ``eps``), which includes a group of one: "groups whose rollouts all got the same rewards are
skipped" (DESIGN.md). In outcome mode equal outcomes are exactly the zero-variance case. The trainer counts skipped groups by status.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memprm.credit.types import CreditError


class GroupStatus(enum.StrEnum):
    OK = "ok"
    ZERO_VARIANCE = "zero_variance"
    IDENTICAL_ROLLOUTS = "identical_rollouts"


@dataclass(frozen=True)
class GroupAdvantages:
    #: one ``[T_i]`` array per rollout, in input order.
    advantages: tuple[np.ndarray, ...]
    status: GroupStatus
    mean: float  # of the normalized quantity: all step rewards (process) or the outcomes (outcome)
    std: float
    #: :func:`gate_advantages` only: each component's share of Σ_k w_k·|Ĝ_k| over the group (K values).
    shares: tuple[float, ...] = ()

    @property
    def skip(self) -> bool:
        return self.status is not GroupStatus.OK


def group_advantages(
    rewards: Sequence[object],
    mode: str = "process",
    *,
    outcomes: Sequence[float] | None = None,
    eps: float = 1e-6,
) -> GroupAdvantages:
    """Advantages of a group. ``rewards[i]`` is rollout i's per-step rewards ``[T_i]`` (ragged allowed); in
    ``outcome`` mode they only give the lengths and ``outcomes[i]`` is rollout i's R.

    An empty group, an empty rollout in process mode, a length mismatch or a NaN/inf raises
    :class:`CreditError` naming the rollout.

    >>> g = group_advantages([[1.0, 0.0], [0.0, 0.0, 1.0]])        # mean 0.4, std 0.4899
    >>> [a.round(4).tolist() for a in g.advantages]
    [[0.4082, -0.8165], [-0.4082, 0.4082, 1.2247]]
    >>> g = group_advantages([[0.0, 0.0], [0.0]], "outcome", outcomes=[1.0, 0.0])
    >>> [a.tolist() for a in g.advantages], g.status.value
    ([[1.0, 1.0], [-1.0]], 'ok')
    >>> group_advantages([[0.3, 1.0], [0.3, 1.0]]).status.value
    'identical_rollouts'
    """
    if mode not in ("process", "outcome", "gate"):
        raise CreditError(f"group_advantages: mode must be 'process', 'outcome' or 'gate', got {mode!r}")
    if not (math.isfinite(eps) and eps >= 0):
        raise CreditError(f"group_advantages: eps must be finite and >= 0, got {eps!r}")
    if len(rewards) == 0:
        raise CreditError("group_advantages: the group is empty (no rollouts)")
    rows = [_rollout(r, i, mode) for i, r in enumerate(rewards)]
    if mode == "gate":
        return _gate_advantages(rows, eps)
    if mode == "process":
        values = np.concatenate(rows)  # [Σ T_i]
    else:
        if outcomes is None or len(outcomes) != len(rows):
            n = None if outcomes is None else len(outcomes)
            raise CreditError(
                f"group_advantages: outcome mode needs one outcome per rollout ({len(rows)}), got {n}"
            )
        values = np.array(outcomes, dtype=np.float64)  # [G]
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise CreditError(
                f"group_advantages: outcomes[{int(bad[0])}] (rollout {int(bad[0])}) is not finite"
            )
    mean, std = float(values.mean()), float(values.std())
    status = GroupStatus.OK
    if std <= eps:
        status = GroupStatus.ZERO_VARIANCE
    elif mode == "process" and _identical(rows, eps):
        status = GroupStatus.IDENTICAL_ROLLOUTS
    if status is not GroupStatus.OK:
        return GroupAdvantages(tuple(np.zeros_like(r) for r in rows), status, mean, std)
    if mode == "process":
        adv = tuple(np.cumsum(((r - mean) / std)[::-1])[::-1] for r in rows)
    else:
        adv = tuple(np.full_like(r, (values[i] - mean) / std) for i, r in enumerate(rows))
    return GroupAdvantages(adv, status, mean, std)


def _gate_advantages(rows: list[np.ndarray], eps: float) -> GroupAdvantages:
    """``gate`` mode on total step rewards: :func:`gate_advantages` with one component of weight 1."""
    return gate_advantages([r[None, :] for r in rows], [1.0], eps=eps)


def gate_advantages(parts: Sequence[np.ndarray], weights: Sequence[float], *, eps: float = 1e-6) -> GroupAdvantages:
    """Per-gate advantages from K reward components: ``A_t = Σ_k w_k · Ĝ_k,t``.

    ``parts[i]`` is rollout i's ``[K, T]`` step rewards by component (the forks of a window share its gates,
    so every T is equal). Per component, ``G_k,t = Σ_{s ≥ t} r_k,s`` minus the group's mean at gate t, over
    the std of all those differences (a component without variance contributes 0). Each component thus
    enters on the same scale and ``weights`` [K] (≥ 0) say how much it steers: the task reward R varies by a
    few hundredths between forks while a window's summed credit varies by units, so a sum of raw rewards is
    steered by whichever term has the largest spread, not by the weight a config gives it.

    ``process`` subtracts one mean from every step and sums it over the suffix, so its advantages carry an
    offset that depends on the gate's position and is shared by every rollout (R paid at the last gate lifts
    all rollouts' late gates alike, whatever they did); here each gate's baseline is what the group's forks
    earned from that gate on. The group is skipped when no weighted component varies.

    Two rollouts, K = 2: component 0 rewards [0, 1] vs [0, 0] (returns to go [1, 1] vs [0, 0], unit scale
    ±1), component 1 [2, 0] vs [0, 0] (centred [±1, 0], std √½, so ±√2 at gate 0), weights 1 and 0.5:

    >>> g = gate_advantages([np.array([[0.0, 1.0], [2.0, 0.0]]), np.zeros((2, 2))], [1.0, 0.5])
    >>> [a.round(4).tolist() for a in g.advantages], [round(x, 4) for x in g.shares]
    ([[1.7071, 1.0], [-1.7071, -1.0]], [0.7388, 0.2612])
    """
    w = np.asarray(weights, dtype=np.float64)  # [K]
    if w.ndim != 1 or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise CreditError(f"gate_advantages: weights must be a 1-D list of finite values >= 0, got {weights!r}")
    shapes = [np.shape(p) for p in parts]
    if len({s[1:] for s in shapes}) != 1 or any(len(s) != 2 or s[0] != w.shape[0] for s in shapes):
        raise CreditError(
            f"group_advantages: gate mode needs rollouts over the same gates, [K={w.shape[0]}, T] each; got "
            f"shapes {shapes}"
        )
    stacked = np.stack([np.asarray(p, dtype=np.float64) for p in parts])  # [G, K, T]
    togo = np.cumsum(stacked[:, :, ::-1], axis=2)[:, :, ::-1]  # [G, K, T]
    centred = togo - togo.mean(axis=0, keepdims=True)  # [G, K, T]
    std = np.sqrt((centred**2).mean(axis=(0, 2)))  # [K]
    live = (std > eps) & (w > 0)  # [K]
    if not live.any():
        status = GroupStatus.IDENTICAL_ROLLOUTS if len(parts) > 1 else GroupStatus.ZERO_VARIANCE
        return GroupAdvantages(tuple(np.zeros(s[1]) for s in shapes), status, 0.0, float(std.max(initial=0.0)))
    scaled = np.where(live[None, :, None], centred / np.where(live, std, 1.0)[None, :, None], 0.0)  # [G, K, T]
    weighted = w[None, :, None] * scaled  # [G, K, T]
    mass = np.abs(weighted).sum(axis=(0, 2))  # [K]
    adv = weighted.sum(axis=1)  # [G, T]
    return GroupAdvantages(tuple(adv), GroupStatus.OK, 0.0, 1.0, tuple(float(m) for m in mass / mass.sum()))


def _rollout(r: object, i: int, mode: str) -> np.ndarray:
    arr = np.array(r, dtype=np.float64)
    if arr.ndim != 1:
        raise CreditError(f"group_advantages: rollout {i}: rewards must be 1-D, got shape {arr.shape}")
    if mode == "process" and arr.shape[0] == 0:
        raise CreditError(f"group_advantages: rollout {i} has no steps (process mode needs step rewards)")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise CreditError(
            f"group_advantages: rollout {i}, step {int(bad[0])}: reward {arr[bad[0]]} is not finite"
        )
    return arr


def _identical(rows: list[np.ndarray], eps: float) -> bool:
    first = rows[0]
    return all(r.shape == first.shape and bool(np.all(np.abs(r - first) <= eps)) for r in rows[1:])
