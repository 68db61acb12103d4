"""ShapingShareMonitor: the shaping share of the composite reward over a window of recent training batches.

The share is :func:`memprm.credit.shaping_share`'s ratio, ``Σ|λ s̃| / (Σ|task| + Σ|w_u u| + Σ|w_miss miss| +
Σ|λ s̃|)``, with the sums taken over every gate step of every rollout of the last ``window`` batches (a
mass-weighted share, not a mean of per-batch shares); the paper reports it falls to 1.8% late in training.
Each batch is weighed as the GRPO module weighed it: its :class:`~memprm.rollout.batches.GroupBatch`
measurements, the reward weights and ``pl_module.shaping_lambda`` read in ``on_train_batch_end`` (the λ the
batch used: ``LambdaAnnealing`` only changes it at batch start). Rollouts without gate steps carry no reward
and add nothing, as in the module.

Logged per step as ``reward/shaping_share_window`` (under DDP each rank measures its own batches and rank
0's value is logged). The state (the window's per-batch masses) is saved, so a resumed run's window
continues; a checkpoint from a larger window keeps its most recent batches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
from lightning.pytorch import Callback, LightningModule, Trainer

from memprm.callbacks.callback_config import ShapingMonitorConfig
from memprm.credit import CreditError, RewardBreakdown, RewardWeights, composite_rewards
from memprm.rollout.batches import GroupBatch

COMPONENTS = ("task", "credit", "miss", "shaping")


def batch_masses(groups: Sequence[GroupBatch], lam: float, weights: RewardWeights) -> tuple[float, ...]:
    """Absolute mass of each weighted component (COMPONENTS order) over all gate steps of ``groups``."""
    sums = [0.0] * len(COMPONENTS)
    for g in groups:
        if not isinstance(g, GroupBatch):
            raise ValueError(f"ShapingShareMonitor: expected GroupBatch items, got {type(g).__name__}")
        for i, r in enumerate(g.rollouts):
            if r.n_steps == 0:
                continue
            try:
                b: RewardBreakdown = composite_rewards(
                    r.task, r.credit, r.miss, r.shaping, lam=lam, weights=weights
                )
            except CreditError as exc:
                raise ValueError(
                    f"ShapingShareMonitor: group {g.dialogue_id!r} window {g.window}, rollout {i}: {exc}"
                ) from exc
            for j, name in enumerate(COMPONENTS):
                sums[j] += float(np.abs(getattr(b, name)).sum())
    return tuple(sums)


class ShapingShareMonitor(Callback):
    """Windowed shaping share; ``weights`` defaults to the module's ``cfg.weights`` (read on fit start)."""

    def __init__(self, cfg: ShapingMonitorConfig, weights: RewardWeights | None = None):
        self.cfg = cfg
        self.weights = weights
        #: per batch, the absolute masses of (task, credit, miss, shaping), most recent last.
        self.masses: deque[tuple[float, ...]] = deque(maxlen=cfg.window)

    @property
    def share(self) -> float:
        """The shaping share over the window; 0.0 while the window holds no reward mass."""
        totals = [sum(m[j] for m in self.masses) for j in range(len(COMPONENTS))]
        total = sum(totals)
        return totals[COMPONENTS.index("shaping")] / total if total > 0 else 0.0

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.weights is None:
            weights = getattr(getattr(pl_module, "cfg", None), "weights", None)
            if not isinstance(weights, RewardWeights):
                raise ValueError(
                    f"ShapingShareMonitor: no reward weights given and {type(pl_module).__name__} has no "
                    "cfg.weights (a RewardWeights)"
                )
            self.weights = weights

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        groups = [batch] if isinstance(batch, GroupBatch) else list(batch)
        lam = getattr(pl_module, "shaping_lambda", None)
        if lam is None:
            raise ValueError(
                f"ShapingShareMonitor: {type(pl_module).__name__} has no attribute 'shaping_lambda'"
            )
        if self.weights is None:
            self.on_fit_start(trainer, pl_module)
        self.masses.append(batch_masses(groups, float(lam), self.weights))
        pl_module.log(
            "reward/shaping_share_window", self.share, on_step=True, on_epoch=False, batch_size=len(groups)
        )

    def state_dict(self) -> dict[str, Any]:
        return {"window": self.cfg.window, "masses": [list(m) for m in self.masses]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "masses" not in state_dict:
            raise ValueError("ShapingShareMonitor checkpoint state: field 'masses' is missing")
        rows = [tuple(float(v) for v in m) for m in state_dict["masses"]]
        bad = [m for m in rows if len(m) != len(COMPONENTS)]
        if bad:
            raise ValueError(
                f"ShapingShareMonitor checkpoint state: field 'masses' has a row of {len(bad[0])} values, "
                f"expected {len(COMPONENTS)} {COMPONENTS}"
            )
        self.masses = deque(rows, maxlen=self.cfg.window)
