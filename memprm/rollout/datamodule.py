"""RolloutDataModule: grouped episodes from an injected environment, with resumable state.

The environment (a :class:`~memprm.rollout.runner.GroupRunner` wrapping the ``MemoryEnv``) and the policy that
acts (the very module the LightningModule trains, so every episode is played by the current weights) are
injected; the DataModule never reaches into the trainer for them. Episodes walk the rank's dialogues round-robin, each dialogue window by window
from its own mainline bank; after a dialogue's last window its banks start over empty.

A run resumed from a checkpoint plays the same episodes as one that was never interrupted (what is saved, and
how the batch fetched ahead is replayed: :meth:`RolloutDataModule.state_dict`).
Under DDP each rank takes the dialogues ``dialogues[rank::world_size]`` and seeds its generators with
``seed + rank``, so ranks play different episodes. The loader ends before a batch whose whole-window groups
would take the rollouts played past ``rollout_data.max_rollouts`` (local re-runs count too).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from lightning import LightningDataModule
from torch.utils.data import DataLoader, IterableDataset

from memprm.data.records import Dialogue
from memprm.memory.bank import MemoryBank
from memprm.rollout.batches import GroupBatch, LocalOrigin
from memprm.rollout.datamodule_config import RolloutDataConfig
from memprm.rollout.heap import release_freed_memory
from memprm.rollout.local_groups import run_local_group


class _Episodes(IterableDataset):
    def __init__(self, dm: RolloutDataModule):
        self.dm = dm

    def __iter__(self) -> Iterator[list[GroupBatch]]:
        n, size = self.dm.cfg.groups_per_batch, self.dm.runner.cfg.group_size
        while self.dm.budget_allows(n * size):  # the loader ends at rollout_data.max_rollouts
            self.dm.before_batch()
            batch = [g for i in range(n) for g in self.dm.next_groups((n - 1 - i) * size)]
            if self.dm.cfg.release_memory:
                release_freed_memory()
            yield batch


class RolloutDataModule(LightningDataModule):
    def __init__(
        self, runner, dialogues: Sequence[Dialogue], cfg: RolloutDataConfig | None = None, *, policy
    ):
        super().__init__()
        if not dialogues:
            raise ValueError("RolloutDataModule: no dialogues to roll out")
        self.runner, self.all_dialogues = runner, tuple(dialogues)
        self.cfg = cfg or RolloutDataConfig()
        self.policy = policy  # the GatePolicy that plays the episodes (the module's own, in a Trainer)
        self.rank, self.world_size = 0, 1
        self._reset_state()

    def _reset_state(self) -> None:
        self.dialogues = self.all_dialogues[self.rank :: self.world_size]
        if not self.dialogues:
            raise ValueError(
                f"RolloutDataModule: {len(self.all_dialogues)} dialogues cannot feed {self.world_size} ranks"
            )
        self.cursor = 0
        self.next_window = {d.id: 0 for d in self.dialogues}  # position in d.sessions
        self.mainline = {d.id: MemoryBank() for d in self.dialogues}
        self.reference = {d.id: MemoryBank() for d in self.dialogues}
        self.rng = np.random.default_rng(self.cfg.seed + self.rank)
        self.generator = torch.Generator().manual_seed(self.cfg.seed + self.rank)
        self.episodes = 0
        self.rollouts = 0  # rollouts played: G per episode plus k per local re-run group
        self.seen: list[tuple[str, int]] = []  # (dialogue, window) of every episode played here
        self._pending: deque[dict[str, Any]] = deque()  # state before each batch not yet trained on

    def setup(self, stage: str | None = None) -> None:
        trainer = getattr(self, "trainer", None)
        trained = getattr(getattr(trainer, "lightning_module", None), "policy", self.policy)
        if trained is not self.policy:  # e.g. a copy made by pickling one without the other
            raise ValueError(
                "RolloutDataModule: its policy is not the LightningModule's policy, so episodes would be "
                "played by weights that do not train; pass policy=<the module's policy>"
            )
        if trainer is not None and (trainer.global_rank, trainer.world_size) != (self.rank, self.world_size):
            self.rank, self.world_size = trainer.global_rank, trainer.world_size
            self._reset_state()
        if self.world_size > 1 and self.cfg.max_rollouts and self.runner.cfg.local.p > 0:
            raise ValueError(
                "rollout_data.max_rollouts with local re-run groups (rollout.local.p > 0) would end the ranks "
                "at different batches (each rank draws its own re-runs); run on one process"
            )

    @property
    def rollouts_played(self) -> int:
        """Rollouts this rank has played (episodes × G plus k per local re-run group), skipped zero-variance
        groups included."""
        return self.rollouts

    def budget_allows(self, rollouts: int) -> bool:
        """Whether ``rollouts`` more stay within ``rollout_data.max_rollouts`` (always, when it is 0)."""
        return not self.cfg.max_rollouts or self.rollouts + rollouts <= self.cfg.max_rollouts

    def next_groups(self, reserve: int = 0) -> list[GroupBatch]:
        """The next episode's group, then, with probability ``rollout.local.p`` when its dialogue has a next
        window, a local re-run group of that window from one of its rollouts' banks, chosen at random
        (:mod:`memprm.rollout.local_groups`). The re-runs are skipped when they would leave fewer than
        ``reserve`` rollouts (the batch's main groups still to come) of ``rollout_data.max_rollouts``."""
        local = self.runner.cfg.local
        if local.p <= 0:
            return [self.next_group()]
        d = self.dialogues[self.cursor % len(self.dialogues)]
        pos = self.next_window[d.id]
        forks: list[MemoryBank] = []
        group = self.next_group(forks)
        if pos + 1 >= len(d.sessions) or self.rng.random() >= local.p:
            return [group]
        j = int(self.rng.integers(len(forks)))
        if not self.budget_allows(local.k + reserve):
            return [group]
        rerun = run_local_group(
            self.runner.env, d, d.sessions[pos + 1].index, forks[j], self.reference[d.id], self.policy,
            local.k, LocalOrigin(group.window, j), self.runner.stopwatch, self.generator,
        )  # fmt: skip
        self.rollouts += rerun.group_size
        return [group, rerun]

    def next_group(self, forks: list[MemoryBank] | None = None) -> GroupBatch:
        """The next episode's whole-window group; ``forks``, when given, receives its rollouts' final banks."""
        d = self.dialogues[self.cursor % len(self.dialogues)]
        self.cursor += 1
        pos = self.next_window[d.id]
        session = d.sessions[pos]
        batch, new_mainline = self.runner.run_group(
            d,
            session.index,
            self.mainline[d.id],
            self.reference[d.id],
            self.policy,
            self.rng,
            self.generator,
            forks=forks,
        )
        self.seen.append((d.id, session.index))
        self.episodes += 1
        self.rollouts += batch.group_size
        if pos + 1 < len(d.sessions):
            self.next_window[d.id], self.mainline[d.id] = pos + 1, new_mainline
        else:  # the dialogue is over: start it again from empty banks
            self.next_window[d.id], self.mainline[d.id], self.reference[d.id] = 0, MemoryBank(), MemoryBank()
        return batch

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_Episodes(self), batch_size=None, collate_fn=lambda x: x, num_workers=0)

    def before_batch(self) -> None:
        """Called before each batch is produced: under a Trainer, remember the state it starts from."""
        if getattr(self, "trainer", None) is not None:
            self._pending.append(self._state())

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Lightning hands ``batch`` (the oldest fetched) to training: its snapshot is no longer needed."""
        if self._pending:
            self._pending.popleft()
        return batch

    # ------------------------------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The state before the oldest batch produced but not yet trained on, else the current.

        State saved in checkpoints: the cursor (next dialogue, next window of each), every dialogue's mainline
        and verbatim reference banks, the numpy and torch generator states, episodes produced. Lightning's
        loader fetches a batch ahead of the one being trained on, so under a Trainer the module keeps a
        snapshot of its state from before each batch it produced (:meth:`before_batch`) and drops it when the
        batch reaches training (:meth:`on_before_batch_transfer`); this is the snapshot of the oldest batch
        not yet trained on. A run resumed from a checkpoint then replays the batch that had been fetched but
        not trained on, and plays the same episodes as one that was never interrupted.
        """
        return self._pending[0] if self._pending else self._state()

    def _state(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "world_size": self.world_size,
            "cursor": self.cursor,
            "next_window": dict(self.next_window),
            "mainline": {k: b.to_dict() for k, b in self.mainline.items()},
            "reference": {k: b.to_dict() for k, b in self.reference.items()},
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state(),
            "episodes": self.episodes,
            "rollouts": self.rollouts,
            "seen": list(self.seen),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if (state["rank"], state["world_size"]) != (self.rank, self.world_size):
            raise ValueError(
                f"RolloutDataModule state is of rank {state['rank']}/{state['world_size']}, "
                f"this is rank {self.rank}/{self.world_size}"
            )
        if set(state["next_window"]) != {d.id for d in self.dialogues}:
            raise ValueError("RolloutDataModule state holds other dialogues than this module's")
        self.cursor = int(state["cursor"])
        self.next_window = {k: int(v) for k, v in state["next_window"].items()}
        self.mainline = {k: MemoryBank.from_dict(v) for k, v in state["mainline"].items()}
        self.reference = {k: MemoryBank.from_dict(v) for k, v in state["reference"].items()}
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        self.generator = torch.Generator()
        self.generator.set_state(state["generator"])
        self.episodes = int(state["episodes"])
        # checkpoints written before local re-runs existed: G rollouts per episode
        self.rollouts = int(state.get("rollouts", self.episodes * self.runner.cfg.group_size))
        self.seen = [tuple(x) for x in state["seen"]]
        self._pending.clear()
