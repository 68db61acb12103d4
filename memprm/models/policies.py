"""The one builder of the memory-manager policy, for both kinds (:mod:`memprm.models.policy_config`)."""

from __future__ import annotations

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
