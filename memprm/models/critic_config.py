"""The critic's settings (no heavy imports: configs load without lightning)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from memprm.models.backbone_config import BackboneConfig


@dataclass(frozen=True)
class CriticConfig:
    #: backbone model, pooling and LoRA settings.
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    #: weight λ_aux of the retrieval BCE term.
    lambda_aux: float = 0.5
    #: weight λ_rank of the margin-rank term.
    lambda_rank: float = 1.0
    #: hinge margin m of the rank term (in φ units).
    margin: float = 0.1
    #: minimum target gap δ for a pair to enter the rank term (> 0; tier values are ≥ 0.2 apart by default).
    delta: float = 0.2
    #: AdamW learning rate (LoRA and heads alike). 3e-4 on the embedded default: at 1e-4 one epoch left the dev
    #: tier Spearman at 0.22 and every other validity check at chance; at 3e-4 it reads 0.72 after one epoch.
    lr: float = 3e-4
    #: AdamW decoupled weight decay.
    weight_decay: float = 0.0
    #: tokens per input after truncation (special tokens included).
    max_length: int = 128
    #: which end of an over-long rendering is cut: ``left`` keeps the end (the operation), ``right`` the start.
    truncation_side: Literal["left", "right"] = "left"
    #: training / validation batch size (the rank term pairs examples within a batch).
    batch_size: int = 32
    #: each training example labeled ``miss`` (a Noop that skipped a needed write) is drawn this many times per
    #: epoch (:class:`memprm.models.critic_data.CriticDataModule`), so that misses weigh about as much as the
    #: correct Noops. Observed misses are rare: on the embedded default (seed 0) 36 misses (33 counterfactual)
    #: against 1305 correct Noops among 4067 examples; drawn once, the critic scores every Noop alike (dev miss
    #: AUC 0.398, deletion causality inverted); 10 → miss AUC 0.674; 30 → 0.850 and all five checks pass, for
    #: +35% critic training time (317 → 427 s).
    miss_repeats: int = 30
    #: epochs over the relabeled teacher examples (~100 s each on the embedded default, 2 CPU cores).
    max_epochs: int = 2
    #: what φ regresses on: ``audit`` (the method: each teacher operation's hindsight tier and the counterfactual
    #: negatives, :mod:`memprm.credit.relabel`) or ``mc`` (the AgentPRM control, Choudhury 2025: the mean exam
    #: R of ``mc_continuations`` continuations of the window from the bank right after the operation, on
    #: ``mc_steps_per_window`` sampled teacher operations per train window; unsampled operations and
    #: counterfactuals are not trained on; :mod:`memprm.stages.mc_targets`). The ``mc_*`` settings enter the
    #: critic stage's key only when ``target=mc``.
    target: Literal["audit", "mc"] = "audit"
    #: ``target=mc``: teacher operations sampled (uniformly, without replacement; all of a smaller window) per
    #: train window with a non-empty quiz: 3 × 4 continuations = 12 window exams where the audit targets take
    #: one exam and its audit. Embedded default (seed 0): 72 of the 1496 train operations, 288 continuation
    #: rollouts, 4019 reader calls (3.8× the train teacher trajectories' exams, audits and probe gates), 27 s;
    #: the paper reports 6× the API cost of its audit targets.
    mc_steps_per_window: int = 3
    #: ``target=mc``: continuations K per sampled operation; its target is the mean of their K exam scores R.
    mc_continuations: int = 4
    #: ``target=mc``: the continuations' behaviour policy is the stage's teacher with each action replaced, with
    #: this probability, by a uniform draw from the gate's candidates
    #: (:class:`~memprm.env.managers.NoisyManager`; 0 = the teacher itself, so every continuation is the same).
    mc_epsilon: float = 0.3
    #: texts per forward pass when scoring with :class:`FrozenCritic`.
    score_batch_size: int = 64
    #: :class:`FrozenCritic` scores each distinct text once (cached by text for the critic's lifetime: its
    #: weights never change in place, a refresh or rollback makes a new one) and batches texts of similar
    #: length; false = every text scored in input order (the reference path of ``tools/bench_rollout.py``).
    score_cache: bool = True

    def __post_init__(self) -> None:
        if self.lambda_aux < 0 or self.lambda_rank < 0:
            raise ValueError(
                f"critic.lambda_aux and lambda_rank must be >= 0, got {self.lambda_aux}, {self.lambda_rank}"
            )
        if self.margin < 0 or self.delta <= 0:
            raise ValueError(
                f"critic.margin must be >= 0 and critic.delta > 0, got {self.margin}, {self.delta}"
            )
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError(
                f"critic.lr must be > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}"
            )
        if self.miss_repeats < 1:
            raise ValueError(f"critic.miss_repeats must be >= 1, got {self.miss_repeats}")
        if self.max_length < 2 or self.batch_size < 1 or self.score_batch_size < 1 or self.max_epochs < 1:
            raise ValueError("critic.max_length must be >= 2 and critic.batch_size, score_batch_size >= 1")
        if self.target not in ("audit", "mc"):
            raise ValueError(f"critic.target must be 'audit' or 'mc', got {self.target!r}")
        if self.mc_steps_per_window < 1 or self.mc_continuations < 1:
            raise ValueError(
                "critic.mc_steps_per_window and critic.mc_continuations must be >= 1, got "
                f"{self.mc_steps_per_window}, {self.mc_continuations}"
            )
        if not 0.0 <= _finite("critic", "mc_epsilon", self.mc_epsilon) <= 1.0:
            raise ValueError(f"critic.mc_epsilon must lie in [0, 1], got {self.mc_epsilon}")
        if self.truncation_side not in ("left", "right"):
            raise ValueError(
                f"critic.truncation_side must be 'left' or 'right', got {self.truncation_side!r}"
            )


#: the :class:`CriticConfig` fields that only ``target=mc`` reads (with ``target`` itself).
MC_TARGET_FIELDS = ("target", "mc_steps_per_window", "mc_continuations", "mc_epsilon")


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
