"""Settings of the rollout DataModule (no torch or lightning import: configs load without them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RolloutDataConfig:
    #: the split whose dialogues GRPO plays: ``train`` (those SFT imitated the teacher on) or ``rl`` (the
    #: synthetic source's extra dialogues, ``data.synthetic.n_rl``, which no earlier stage has seen).
    split: str = "train"
    #: episodes (groups) per training batch.
    groups_per_batch: int = 1
    #: seed of the write-back choice, the credit shuffles and the policy's sampling (plus the rank).
    seed: int = 0
    #: after each batch of episodes, hand freed heap pages back to the OS (glibc ``malloc_trim``; a no-op
    #: elsewhere). Without it the resident size creeps up by the audit's freed buffers (:mod:`memprm.rollout.heap`).
    release_memory: bool = True
    #: rollouts this rank plays at most (0 = no cap: ``grpo.max_batches`` alone ends the stage): the loader
    #: ends before a batch whose whole-window groups would pass it, and a local re-run group that would
    #: leave too few for the rest of its batch is not made, so the rollouts played never exceed it. An equal
    #: budget for arms that spend rollouts on local re-runs (``rollout.local``), whose batches are larger.
    max_rollouts: int = 0

    def __post_init__(self) -> None:
        if self.split not in ("train", "rl"):
            raise ValueError(f"rollout_data.split must be 'train' or 'rl', got {self.split!r}")
        if self.groups_per_batch < 1:
            raise ValueError(f"rollout_data.groups_per_batch must be >= 1, got {self.groups_per_batch}")
        if self.max_rollouts < 0:
            raise ValueError(f"rollout_data.max_rollouts must be >= 0 (0 = no cap), got {self.max_rollouts}")
