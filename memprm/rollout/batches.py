"""Typed containers for grouped rollouts: what the rollout DataModule hands to the GRPO module.

A rollout carries *measurements*, unweighted: the exam's R, the verified credit u_t, the coverage penalty
miss_t and the critic shaping s̃_t per gate step. The GRPO module weighs them (``RewardWeights``, λ(k) from the
annealing callback) into composite rewards and group advantages at training time, so changing λ never
requires new rollouts and the reward maths stay in :mod:`memprm.credit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memprm.env.policy import GateSample


@dataclass(frozen=True)
class RolloutSteps:
    samples: tuple[GateSample, ...]  # [T] what the policy did at each gate, with π_old log-probs
    noop: np.ndarray  # [T] bool
    credit: np.ndarray  # [T] u_t: verified presence credit reaching the step's op along its chain
    miss: np.ndarray  # [T] 1 for a Noop gate anchoring a failed probe
    shaping: np.ndarray  # [T] s̃_t from the critic (suffix-min or sum; zeros without a critic)
    task: float  # R: the window's exam accuracy in [0, 1]
    stats: dict[str, float] = field(default_factory=dict)  # bank size, versions/entry, context tokens, …
    #: the critic's input per step and its online label (u, u^RR) from the audit: the replay buffer of a
    #: critic refresh (:func:`memprm.credit.online_labels.online_labels`).
    critic_inputs: tuple[str, ...] = ()
    critic_u: np.ndarray | None = None  # [T]
    critic_rr: np.ndarray | None = None  # [T]

    def __post_init__(self) -> None:
        t = len(self.samples)
        for name in ("noop", "credit", "miss", "shaping"):
            if len(getattr(self, name)) != t:
                raise ValueError(f"RolloutSteps.{name} has {len(getattr(self, name))} values for {t} steps")

    @property
    def n_steps(self) -> int:
        return len(self.samples)


@dataclass(frozen=True)
class LocalOrigin:
    """Where a local re-run group started (:mod:`memprm.rollout.local_groups`): the whole-window group's
    window and the index of its rollout whose final bank the re-runs were forked from."""

    window: int
    rollout: int


@dataclass(frozen=True)
class GroupBatch:
    """G rollouts of one episode (one dialogue window), forked from the same mainline bank; or, with
    ``origin``, a local re-run group: k re-runs of ``window`` from one earlier rollout's bank, rewarded with
    the window quiz's R alone (outcome advantages)."""

    dialogue_id: str
    window: int
    rollouts: tuple[RolloutSteps, ...]
    quiz_size: int
    #: index of the rollout whose bank became the mainline (chosen at random); None for a local group and
    #: under ``rollout.write_back=greedy`` (the mainline is a greedy play, not one of the rollouts).
    write_back: int | None
    stats: dict[str, float] = field(default_factory=dict)  # probe gate rates, timings, …
    origin: LocalOrigin | None = None

    @property
    def is_local(self) -> bool:
        return self.origin is not None

    @property
    def group_size(self) -> int:
        return len(self.rollouts)
