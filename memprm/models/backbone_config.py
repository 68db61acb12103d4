"""Backbone settings (no heavy imports: configs load without torch/transformers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

_DEFAULT_TARGETS = {"encoder": ("query", "value"), "causal": ("q_proj", "v_proj")}
_DEFAULT_POOLING = {"encoder": "mean", "causal": "last"}
_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class BackboneConfig:
    #: ``encoder`` (bidirectional, e.g. MiniLM / BGE) or ``causal`` (decoder-only, e.g. Qwen3).
    kind: Literal["encoder", "causal"] = "encoder"
    #: Hugging Face model name or local path; ``minilm`` = the offline all-MiniLM-L6-v2.
    model: str = "minilm"
    #: ``mean`` (over non-pad tokens), ``last`` (last non-pad token) or ``auto`` (encoder → mean, causal → last).
    pooling: Literal["auto", "mean", "last"] = "auto"
    #: LoRA rank r.
    lora_rank: int = 8
    #: LoRA scaling alpha (the update is scaled by alpha / r).
    lora_alpha: float = 16.0
    #: dropout on the LoRA branch's input during training.
    lora_dropout: float = 0.05
    #: module names that receive LoRA; empty = the kind's default (encoder: query, value; causal: q_proj, v_proj).
    target_modules: tuple[str, ...] = ()
    #: weight dtype of the backbone when loaded from a name/path: ``float32``, ``bfloat16`` or ``float16``.
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"

    def __post_init__(self) -> None:
        if self.kind not in _DEFAULT_POOLING:
            raise ValueError(f"backbone.kind must be 'encoder' or 'causal', got {self.kind!r}")
        if self.pooling not in ("auto", "mean", "last"):
            raise ValueError(f"backbone.pooling must be 'auto', 'mean' or 'last', got {self.pooling!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"backbone.dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        if self.lora_rank < 1 or self.lora_alpha <= 0:
            raise ValueError(
                f"backbone.lora_rank must be >= 1 and lora_alpha > 0, got {self.lora_rank}, {self.lora_alpha}"
            )
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"backbone.lora_dropout must be in [0, 1), got {self.lora_dropout}")
        if not self.model:
            raise ValueError("backbone.model must name a model or a path")

    @property
    def resolved_pooling(self) -> str:
        return _DEFAULT_POOLING[self.kind] if self.pooling == "auto" else self.pooling

    @property
    def resolved_targets(self) -> tuple[str, ...]:
        return self.target_modules or _DEFAULT_TARGETS[self.kind]

    def lora_config(self):
        """peft's ``LoraConfig`` for these settings (peft imported here, so the config module stays light)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha,
            lora_dropout=self.lora_dropout,
            target_modules=list(self.resolved_targets),
            bias="none",
        )
