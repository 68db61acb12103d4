"""Settings of the GRPO stage's callbacks (no torch or lightning import: configs load without them).

λ(k)'s schedule is not here: ``LambdaAnnealing`` takes ``grpo.lambda0``, ``grpo.lambda_inf`` and
``grpo.k_decay`` (:class:`memprm.models.grpo_config.GRPOConfig`), the same values the module starts from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _finite(section: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{section}.{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class CriticRefreshConfig:
    #: refresh the critic every this many optimizer steps; 0 = off (frozen critic, the paper's LoCoMo
    #: setting). The paper's LongMemEval run refreshes every 200 steps.
    every_n_steps: int = 0
    #: AdamW learning rate of the retraining (LoRA and heads; weight decay and the loss weights of Eq. (5)
    #: are the critic's own, ``critic.*``).
    lr: float = 5e-5
    #: passes over the replay buffer per refresh.
    epochs: int = 1
    #: replay examples per optimizer step; each step also takes this many anchor texts (cycling).
    batch_size: int = 32
    #: weight λ_anchor of the anchoring term MSE(φ(anchor), φ_offline(anchor)); 0 = no anchoring.
    lambda_anchor: float = 1.0
    #: the replay buffer keeps the most recent this many online-labeled operations.
    max_replay: int = 4096
    #: anchor texts drawn (seeded) from the replay buffer at the first refresh if none are given; then fixed.
    anchor_size: int = 256
    #: a refresh with fewer replay examples than this is skipped (recorded as such, the critic unchanged).
    min_replay: int = 32
    #: the refreshed critic is rolled back when any validity check is worse than before the refresh by more
    #: than this (:meth:`memprm.eval.validity.ValidityReport.worse_than`, each check in its own units).
    tolerance: float = 0.02
    #: seed of the retraining's shuffles and dropout (refresh i uses seed + i) and of the anchor draw.
    seed: int = 0

    def __post_init__(self) -> None:
        s = "critic_refresh"
        for name in (
            "every_n_steps",
            "epochs",
            "batch_size",
            "max_replay",
            "anchor_size",
            "min_replay",
            "seed",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{s}.{name} must be an integer, got {v!r}")
        if self.every_n_steps < 0:
            raise ValueError(f"{s}.every_n_steps must be >= 0 (0 = off), got {self.every_n_steps}")
        for name in ("epochs", "batch_size", "max_replay", "anchor_size", "min_replay"):
            if getattr(self, name) < 1:
                raise ValueError(f"{s}.{name} must be >= 1, got {getattr(self, name)}")
        if self.min_replay > self.max_replay:
            raise ValueError(f"{s}.min_replay ({self.min_replay}) exceeds max_replay ({self.max_replay})")
        if not _finite(s, "lr", self.lr) > 0:
            raise ValueError(f"{s}.lr must be > 0, got {self.lr}")
        for name in ("lambda_anchor", "tolerance"):
            if _finite(s, name, getattr(self, name)) < 0:
                raise ValueError(f"{s}.{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class DevSelectionConfig:
    #: evaluate the policy on the dev selection half every this many optimizer steps.
    every_n_steps: int = 6
    #: also evaluate before the first step (the SFT policy is a candidate: GRPO must beat it to be chosen).
    at_start: bool = True
    #: also evaluate after the last step when that step was not evaluated (the final policy is a candidate).
    at_end: bool = True

    def __post_init__(self) -> None:
        v = self.every_n_steps
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"dev_selection.every_n_steps must be an integer >= 1, got {v!r}")


@dataclass(frozen=True)
class ShapingMonitorConfig:
    #: the shaping share is measured over the most recent this many training batches.
    window: int = 50

    def __post_init__(self) -> None:
        v = self.window
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"shaping_monitor.window must be an integer >= 1, got {v!r}")
