"""Settings of the GRPO stage's callbacks (no torch or lightning import: configs load without them).

λ(k)'s schedule is not here: ``LambdaAnnealing`` takes ``grpo.lambda0``, ``grpo.lambda_inf`` and
``grpo.k_decay`` (:class:`memprm.models.grpo_config.GRPOConfig`), the same values the module starts from.
"""

from __future__ import annotations

from dataclasses import dataclass


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
