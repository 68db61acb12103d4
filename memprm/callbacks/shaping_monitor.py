"""ShapingShareMonitor: the shaping share of the composite reward over a window of recent training batches.

The share is ``Σ|λ s̃| / (Σ|task| + Σ|w_u u| + Σ|w_miss miss| + Σ|λ s̃|)`` over every gate step of every
rollout of the last ``window`` batches (mass-weighted, not a mean of per-batch shares); the paper reports it
falls to 1.8% late in training. The monitor computes no reward: it reads the masses the training step
returned (``outputs["reward_masses"]``, :func:`memprm.credit.reward_masses` of the rewards the step trained
on), so the share is exactly what the module weighed. Logged per step as ``reward/shaping_share_window``
(under DDP each rank measures its own batches and rank 0's value is logged); the window is saved in
checkpoints.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from memprm.callbacks.callback_config import ShapingMonitorConfig
from memprm.credit.reward import COMPONENTS


class ShapingShareMonitor(Callback):
    """Windowed shaping share of the masses each training step returns; see the module doc."""

    def __init__(self, cfg: ShapingMonitorConfig):
        self.cfg = cfg
        #: per batch, the absolute masses of (task, credit, miss, shaping), most recent last.
        self.masses: deque[tuple[float, ...]] = deque(maxlen=cfg.window)

    @property
    def share(self) -> float:
        """The shaping share over the window; 0.0 while the window holds no reward mass."""
        totals = [sum(m[j] for m in self.masses) for j in range(len(COMPONENTS))]
        total = sum(totals)
        return totals[COMPONENTS.index("shaping")] / total if total > 0 else 0.0

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        masses = outputs.get("reward_masses") if isinstance(outputs, dict) else None
        if masses is None or len(masses) != len(COMPONENTS):
            raise ValueError(
                f"ShapingShareMonitor: {type(pl_module).__name__}.training_step must return a dict with "
                f"'reward_masses' ({len(COMPONENTS)} values: {COMPONENTS}), got {outputs!r}"
            )
        self.masses.append(tuple(float(v) for v in masses))
        n = len(batch) if isinstance(batch, (list, tuple)) else 1
        pl_module.log("reward/shaping_share_window", self.share, on_step=True, on_epoch=False, batch_size=n)

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
