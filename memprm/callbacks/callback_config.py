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
    #: the dialogues it plays: ``dev_selection`` (the dev split's selection half of the questions; 54 on the
    #: embedded default, where one question is 1.9 points) or ``select`` (the synthetic source's
    #: ``data.synthetic.n_select`` extra dialogues with every question, which no other split holds).
    split: str = "dev_selection"

    def __post_init__(self) -> None:
        v = self.every_n_steps
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"dev_selection.every_n_steps must be an integer >= 1, got {v!r}")
        if self.split not in ("dev_selection", "select"):
            raise ValueError(f"dev_selection.split must be dev_selection or select, got {self.split!r}")


@dataclass(frozen=True)
class ShapingMonitorConfig:
    #: the shaping share is measured over the most recent this many training batches.
    window: int = 50

    def __post_init__(self) -> None:
        v = self.window
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"shaping_monitor.window must be an integer >= 1, got {v!r}")


@dataclass(frozen=True)
class DriftMonitorConfig:
    #: log how far GRPO moves the policy from the SFT policy on fixed dev selection gates (``drift/*`` in
    #: TensorBoard, :mod:`memprm.callbacks.policy_drift`). Scoring policy only: with ``policy.kind`` causal
    #: (no exact distribution over a candidate set) the GRPO stage skips it with a warning. It changes no
    #: result, so this section is not part of the GRPO stage's key (:mod:`memprm.stages.markers`).
    enabled: bool = True
    #: measure every this many optimizer steps, and once before the first.
    every_n_steps: int = 4
    #: measure on at most this many gates, evenly spaced over the SFT policy's greedy play of the dev selection
    #: dialogues (all of them when fewer).
    max_gates: int = 400
    #: gates scored per policy forward (bounds the memory of one measurement).
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValueError(f"drift.enabled must be true or false, got {self.enabled!r}")
        for name in ("every_n_steps", "max_gates", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"drift.{name} must be an integer >= 1, got {v!r}")
