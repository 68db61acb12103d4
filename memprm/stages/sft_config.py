"""Settings of the SFT stage (no torch or lightning import: configs load without them)."""

from __future__ import annotations

from dataclasses import dataclass

from memprm.models.policy_config import TRAINABLE_SUBSETS, TrainableSubset


@dataclass(frozen=True)
class SFTConfig:
    #: optimizer steps of SFT (0 skips SFT: the policy starts untrained). With the frozen-encoder default
    #: a step trains the linear head only (cached features), so 1,000 cost seconds. 1,000 steps at ``lr`` 0.3
    #: with ``trainable=structural`` were chosen on seed 2's dev gates (``tools/sft_confusion.py --on dev``:
    #: 7 of 766 gates off the teacher's choice, against 14 at 400 steps; experiments/README.md). Set 400 and
    #: 3e-2 with ``trainable=all`` (the earlier default) or a causal policy.
    steps: int = 1000
    #: AdamW learning rate (0.3 suits the 16 structural weights; far too large for LoRA or a causal LM).
    lr: float = 0.3
    #: gate samples per step.
    batch_size: int = 32
    #: exponent β of the inverse-frequency weights on the teacher's action kinds (noop / write / merge):
    #: a sample weighs count(kind)^-β (mean 1). 0 = the plain mean, where the teacher's majority Noop
    #: dominates; 1 = every kind the same total weight (see :mod:`memprm.models.sft`). 0.5 was chosen on the
    #: earlier testbed (turn copies, before notes): greedy recall on the teacher's train gates noop 91% / write
    #: 62% / merge 19%, where 0 Noops every gate and 1 writes 70% of the teacher's Noops (experiments/README.md);
    #: not re-measured since managed content became notes.
    balance: float = 0.5
    #: ε of label smoothing over the gate's candidates (:func:`memprm.models.sft.sft_loss`; scoring policy only):
    #: 0 = plain imitation, which drives the policy to near-certainty (entropy ≈ 0.02 nats on dev gates,
    #: so G forks of a window rarely differ and GRPO has no contrast to learn from).
    label_smoothing: float = 0.0
    #: which head weights SFT trains, as ``grpo.trainable``: ``all``, ``structural`` (two-tower scorer: the 16
    #: text-free weights on kind × layer, rank, the two cosines and the key match; the text-vector weights
    #: stay at their zero initialization) or ``kinds`` (kind × layer and rank only). The heuristic teacher's rule (merge into the
    #: nearest shown entry at cosine ≥ ``teacher.merge_threshold``, else write the note) is a function of the
    #: structural features, so ``structural`` can imitate it on dialogues SFT never saw, where ``all`` fits the
    #: train dialogues' texts (experiments/README.md, "SFT that generalizes"). Needs ``policy.kind=scoring`` with
    #: ``policy.scorer=two_tower`` unless ``all`` (a causal or pair-scorer config sets ``sft.trainable: all``).
    trainable: TrainableSubset = "structural"

    def __post_init__(self) -> None:
        if self.steps < 0 or self.lr <= 0 or self.batch_size < 1:
            raise ValueError("sft.steps must be >= 0, sft.lr > 0 and sft.batch_size >= 1")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"sft.label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.trainable not in TRAINABLE_SUBSETS:
            raise ValueError(f"sft.trainable must be one of {TRAINABLE_SUBSETS}, got {self.trainable!r}")
        if not 0.0 <= self.balance <= 1.0:
            raise ValueError(f"sft.balance must be in [0, 1], got {self.balance}")
