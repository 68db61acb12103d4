"""The one builder of the memory-manager policy, for both kinds (:mod:`memprm.models.policy_config`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from memprm.models.causal_policy import CausalPolicy, build_causal_policy
from memprm.models.policy_config import PolicyConfig
from memprm.models.scoring_policy import ScoringPolicy, build_scoring_policy


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
