"""The GRPO stage's settings (no torch import: configs load without it).

The paper gives the reward form, the advantage form and λ∞ = 0.2 but no optimizer settings; the defaults
here are the usual ones for PPO-style clipped updates of a LoRA-adapted policy (ε = 0.2, two PPO epochs per
batch, no KL penalty, as in DAPO-style GRPO without a reference model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from memprm.credit.reward import RewardWeights
from memprm.models.policy_config import TRAINABLE_SUBSETS, TrainableSubset

ADVANTAGE_MODES = ("process", "outcome", "gate")


@dataclass(frozen=True)
class GRPOConfig:
    #: AdamW learning rate (every trainable policy parameter: LoRA and the scoring head alike).
    lr: float = 1e-3
    #: sampling temperature of the rollouts and of every GRPO log-probability (0 = ``policy.temperature``),
    #: set for the GRPO stage only (:func:`memprm.models.policies.sampling_temperature`): greedy choices, so
    #: dev selection and the test, do not depend on it. SFT by imitation leaves the policy near-certain
    #: (0.02 nats on the dev gates: a window's forks rarely differ); t = 6 gives 0.25 nats (experiments/README.md).
    temperature: float = 0.0
    #: AdamW decoupled weight decay.
    weight_decay: float = 0.0
    #: what GRPO may change: ``all`` (every trainable parameter) or ``structural`` (scoring policy with the
    #: two-tower scorer only: the head's 16 weights on kind × layer, rank, the two cosines and the key match;
    #: every other gradient is zeroed, so the text-vector weights keep their SFT values). 16 shared weights
    #: move every gate's choice the same way and average the rollouts' noise over all gates, where the 1,152
    #: text-vector weights let noisy advantages drift each text's score (experiments/README.md).
    #: ``kinds``: the 13 of them on kind × layer and rank only (the cosines and the key match, which pick
    #: among candidates of one kind, keep their SFT values too). ``match``: those 3 only (which entry a Merge
    #: picks; how often each kind is chosen keeps its SFT weights). Every value but ``all`` needs
    #: ``weight_decay`` 0 (decay would shrink the frozen weights).
    trainable: TrainableSubset = "all"
    #: lower clip range: the ratio π_θ/π_old is clipped below at 1 − eps_low (binds for negative advantages).
    eps_low: float = 0.2
    #: upper clip range: clipped above at 1 + eps_high (binds for positive advantages); a value different
    #: from eps_low makes the clip asymmetric (e.g. DAPO's "clip-higher", eps_high = 0.28).
    eps_high: float = 0.2
    #: weight β of the KL penalty to the reference (SFT) policy, estimated with Schulman's k3 from each
    #: sample's ``ref_logprob``; 0 = no penalty (the rollouts then need no reference log-probs).
    beta_kl: float = 0.0
    #: passes over each batch of rollouts (PPO epochs); each pass re-scores the samples with the current
    #: weights against the same π_old log-probs.
    ppo_epochs: int = 2
    #: gate samples per optimizer step within a pass (shuffled each pass); 0 = the whole batch in one step.
    minibatch_size: int = 0
    #: ``process``: per-step composite rewards normalized over the group and summed from t on (Shao et al.'s
    #: process supervision); ``gate``: each gate's return to go minus the group's mean return to go at that
    #: gate (a per-gate baseline, no offset growing with the steps left); ``outcome``: the group-normalized R
    #: at every step (outcome-only arm). See :mod:`memprm.credit.advantage`.
    advantage_mode: Literal["process", "outcome", "gate"] = "process"
    #: weights of R, u and miss in the composite reward (λ(k) weighs the shaping, see below).
    weights: RewardWeights = field(default_factory=RewardWeights)
    #: λ0: the shaping weight at optimizer step 0 (the paper gives no value; 1.0 puts s̃ on R's scale).
    lambda0: float = 1.0
    #: λ∞: the shaping weight from step K_decay on (paper: 0.2).
    lambda_inf: float = 0.2
    #: K_decay: optimizer steps over which λ falls linearly from λ0 to λ∞ (the paper's LoCoMo run is 214
    #: steps long; 200 anneals over about the whole run).
    k_decay: float = 200.0
    #: gradient-norm clip per optimizer step (total L2 norm); 0 = no clipping.
    max_grad_norm: float = 1.0
    #: a group whose normalized quantity has std <= adv_eps carries no contrast and is skipped
    #: (:func:`memprm.credit.group_advantages`'s ``eps``).
    adv_eps: float = 1e-6
    #: optimizer steps of the GRPO stage (each training batch makes ``ppo_epochs`` × mini-batches of them).
    max_steps: int = 12
    #: training batches drawn at most (per rank), with or without an optimizer step; 0 = ``max_steps``.
    #: A batch whose groups all lack contrast (equal rewards) takes no step, so an arm whose rewards rarely
    #: differ (outcome-only on an easy set) would roll out forever short of ``max_steps`` without this bound.
    max_batches: int = 0
    #: write ``grpo/checkpoints/last.ckpt`` (weights, optimizer, loops, callbacks, rollout data state, RNG)
    #: each time the optimizer step count crosses a multiple of this, so a killed run resumes from it when the
    #: same command is run again (:mod:`memprm.stages.grpo_stage`); 0 = no checkpoints. Not part of the
    #: config hash: changing it does not restart a run.
    checkpoint_every: int = 4

    @property
    def batch_budget(self) -> int:
        """Training batches the stage draws at most: ``max_batches``, or ``max_steps`` when that is 0."""
        return self.max_batches or self.max_steps

    def __post_init__(self) -> None:
        def finite(name: str) -> float:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"grpo.{name} must be a finite number, got {v!r}")
            return float(v)

        if not finite("lr") > 0:
            raise ValueError(f"grpo.lr must be > 0, got {self.lr}")
        for name in ("weight_decay", "beta_kl", "max_grad_norm", "adv_eps", "temperature"):
            if finite(name) < 0:
                raise ValueError(f"grpo.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("eps_low", "eps_high"):
            if not 0 < finite(name) < 1:
                raise ValueError(f"grpo.{name} must lie in (0, 1), got {getattr(self, name)}")
        if self.ppo_epochs < 1:
            raise ValueError(f"grpo.ppo_epochs must be >= 1, got {self.ppo_epochs}")
        if self.max_steps < 0:
            raise ValueError(f"grpo.max_steps must be >= 0, got {self.max_steps}")
        if self.max_batches < 0:
            raise ValueError(f"grpo.max_batches must be >= 0 (0 = grpo.max_steps), got {self.max_batches}")
        if isinstance(self.checkpoint_every, bool) or self.checkpoint_every < 0:
            raise ValueError(f"grpo.checkpoint_every must be >= 0 (0 = off), got {self.checkpoint_every}")
        if self.minibatch_size < 0:
            raise ValueError(f"grpo.minibatch_size must be >= 0 (0 = whole batch), got {self.minibatch_size}")
        if self.trainable not in TRAINABLE_SUBSETS:
            raise ValueError(f"grpo.trainable must be one of {TRAINABLE_SUBSETS}, got {self.trainable!r}")
        if self.trainable != "all" and self.weight_decay > 0:
            raise ValueError(
                f"grpo.trainable={self.trainable} needs grpo.weight_decay=0 (AdamW would decay the frozen weights), "
                f"got {self.weight_decay}"
            )
        if self.advantage_mode not in ADVANTAGE_MODES:
            raise ValueError(
                f"grpo.advantage_mode must be one of {ADVANTAGE_MODES}, got {self.advantage_mode!r}"
            )
        if not isinstance(self.weights, RewardWeights):
            raise ValueError(f"grpo.weights must be a RewardWeights, got {type(self.weights).__name__}")
        if not finite("lambda0") >= finite("lambda_inf") >= 0:
            raise ValueError(
                f"grpo.lambda0 >= grpo.lambda_inf >= 0 is required (λ is non-increasing), "
                f"got {self.lambda0}, {self.lambda_inf}"
            )
        if not finite("k_decay") > 0:
            raise ValueError(f"grpo.k_decay must be > 0, got {self.k_decay}")
