"""The one builder of the memory-manager policy, for both kinds (:mod:`memprm.models.policy_config`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from memprm.models.causal_policy import CausalPolicy, build_causal_policy
from memprm.models.policy_config import STRUCTURAL_NEEDS, TRAINABLE_SUBSETS, PolicyConfig
from memprm.models.scoring_policy import ScoringPolicy, build_scoring_policy
from memprm.models.two_tower import kind_rank_dim, structural_dim


def build_policy(cfg: PolicyConfig, model: Any = None, tokenizer: Any = None) -> ScoringPolicy | CausalPolicy:
    """Build the policy ``cfg.kind`` names.

    ``model`` / ``tokenizer`` inject ready parts (tests, callers holding a model): a ``PreTrainedModel`` or a
    ``PretrainedConfig`` (random weights) plus a tokenizer; ``None`` loads ``cfg.model``. LoRA layers are
    injected into an injected model *in place* (peft's ``get_peft_model``): do not reuse it as a plain model.
    """
    if cfg.kind == "scoring":
        return build_scoring_policy(cfg, model, tokenizer)
    return build_causal_policy(cfg, model, tokenizer)


@contextmanager
def sampling_temperature(policy: ScoringPolicy | CausalPolicy, temperature: float) -> Iterator[None]:
    """Within the block the policy samples, and takes every log-probability, under ``softmax(logits / t)``;
    its ``policy.temperature`` is restored afterwards. 0 leaves it as it is. The weights are untouched and a
    greedy choice (the argmax) is the same at any t, so GRPO can explore around an SFT policy that imitation
    made near-certain without changing what dev selection and the test evaluate."""
    if temperature < 0 or not math.isfinite(temperature):
        raise ValueError(f"sampling temperature must be finite and >= 0 (0 = the policy's own), got {temperature}")
    before = policy.cfg
    if temperature > 0:
        policy.cfg = replace(before, temperature=float(temperature))
    try:
        yield
    finally:
        policy.cfg = before


@contextmanager
def trainable_subset(
    policy: ScoringPolicy | CausalPolicy, which: str, setting: str = "grpo.trainable"
) -> Iterator[None]:
    """Within the block, gradients reach only the part of the policy ``which`` names (the config ``setting``:
    ``grpo.trainable`` or ``sft.trainable``, named in the error when the policy has no structural head).

    ``all`` changes nothing. ``structural`` (two-tower scoring policy only) zeroes, by gradient hooks, every
    gradient but those of the head's first :func:`~memprm.models.two_tower.structural_dim` weights (kind ×
    layer, rank, cosines, key match), ``kinds`` those of the first :func:`~memprm.models.two_tower.kind_rank_dim` (the
    cosines and the key match frozen too), ``match`` those of the three in between (the two cosines and the key
    match: which entry a Merge picks; the kind and rank weights frozen): an AdamW step with weight decay 0 then leaves every other weight exactly as it was
    (its moments stay 0). ``requires_grad`` is left alone, so snapshots and weight files keep every trainable
    tensor. The hooks are removed when the block ends, also when it raises."""
    if which not in TRAINABLE_SUBSETS:
        raise ValueError(f"trainable subset must be one of {TRAINABLE_SUBSETS}, got {which!r}")
    if which == "all":
        yield
        return
    if not policy.cfg.structural_head:
        raise ValueError(STRUCTURAL_NEEDS.format(setting=setting, kind=policy.cfg.kind, scorer=policy.cfg.scorer))
    handles = []
    for name, param in policy.named_parameters():
        if not param.requires_grad:
            continue
        if name == "head.weight":
            mask = param.new_zeros(param.shape)  # [1, feature_dim]
            lo, hi = {
                "structural": (0, structural_dim()),
                "kinds": (0, kind_rank_dim()),
                "match": (kind_rank_dim(), structural_dim()),
            }[which]
            mask[:, lo:hi] = 1.0
            handles.append(param.register_hook(lambda g, m=mask: g * m.to(g.device)))
        else:
            handles.append(param.register_hook(lambda g: g.new_zeros(g.shape)))
    try:
        yield
    finally:
        for h in handles:
            h.remove()
