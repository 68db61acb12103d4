"""Configuration of the memory-manager policy (both kinds; :func:`memprm.models.policies.build_policy` builds it).

Two kinds share one GRPO module through :class:`memprm.env.policy.GatePolicy`:

- ``scoring`` (the embedded default's policy, CPU-friendly): an encoder (MiniLM by default) scores a small
  candidate set per gate — Noop, Write(the turn), Write(each note), Merge(the first note into each of the
  first ``merge_candidates`` neighbours) — softmax over the candidates. See :mod:`memprm.models.scoring_policy`.
- ``causal`` (the paper's policy, Qwen3 family): a causal LM writes one strict-JSON operation per gate. See
  :mod:`memprm.models.causal_policy`.

Both compute log-probabilities under ``softmax(logits / temperature)`` and without dropout where it matters
(:class:`PolicyConfig`). This module imports neither torch nor transformers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

_DEFAULT_TARGETS = {"scoring": ("query", "value"), "causal": ("q_proj", "v_proj")}
DTYPES = ("float32", "bfloat16", "float16")
#: the values of ``grpo.trainable`` / ``sft.trainable`` (documented on :class:`memprm.models.grpo_config.GRPOConfig`).
TrainableSubset = Literal["all", "structural", "kinds", "match"]
TRAINABLE_SUBSETS: tuple[str, ...] = get_args(TrainableSubset)
STRUCTURAL_NEEDS = (
    "{setting}=structural (or kinds, match) needs policy.kind=scoring with policy.scorer=two_tower (the structural features "
    "are the two-tower head's), got policy.kind={kind}, policy.scorer={scorer}"
)


@dataclass(frozen=True)
class LoraSettings:
    #: LoRA rank r. 0 = no adapter: the scoring policy then trains its linear head only (encoder frozen, its
    #: features cached), the causal policy trains every weight of the model (full fine-tuning). -1 = the
    #: kind's default: 0 for the scoring policy (the CPU default), 16 for the causal policy.
    rank: int = -1
    #: LoRA scaling alpha (the update is scaled by alpha / r).
    alpha: float = 16.0
    #: dropout on the LoRA branch's input in train mode; 0 keeps train- and eval-mode log-probs equal.
    dropout: float = 0.0
    #: module names that receive LoRA; empty = the kind's default (scoring: query, value — BERT naming;
    #: causal: q_proj, v_proj — Qwen3 naming).
    target_modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.rank < -1:
            raise ValueError(f"policy.lora.rank must be >= 0 (or -1 for the kind's default), got {self.rank}")
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"policy.lora.alpha must be > 0, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"policy.lora.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class PolicyConfig:
    """The policy's settings (``policy`` in the config).

    Log-probabilities, sampled and recomputed alike, are taken under ``softmax(logits / temperature)``: the
    distribution the behaviour policy actually samples from. Greedy decoding reports the log-probability of
    its choice under that same distribution.

    Dropout: LoRA dropout defaults to 0, and both policies compute ``act`` in eval mode; ``log_probs`` runs in
    the module's current mode. GRPO and SFT run the policy in eval mode (``policy.eval()``), so that the ratio
    π_θ / π_old compares dropout-free log-probabilities (the base models' own dropout — MiniLM has 0.1 — would
    otherwise make a recomputed log-probability differ from the sampled one).
    """

    #: ``scoring`` (an encoder scores Noop / Write / Merge candidates) or ``causal`` (an LM writes JSON ops).
    kind: Literal["scoring", "causal"] = "scoring"
    #: Hugging Face model name or local path; ``minilm`` = the offline all-MiniLM-L6-v2 (scoring only; the
    #: causal policy needs a causal LM such as ``Qwen/Qwen3-8B``).
    model: str = "minilm"
    #: adapter settings (rank 0 = no adapter, see :class:`LoraSettings`).
    lora: LoraSettings = field(default_factory=LoraSettings)
    #: scoring policy: ``two_tower`` (gate query and candidate texts encoded separately, each distinct text once,
    #: cached) or ``pair`` (the reference: a cross-encoder over every (candidate, gate) pair). See
    #: :mod:`memprm.models.scoring_policy`.
    scorer: Literal["two_tower", "pair"] = "two_tower"
    #: tokens per input: one text (two-tower) or one (candidate, gate) pair (pair scorer) of the scoring policy,
    #: or one prompt of the causal policy (completions are never cut). Longer inputs are cut and counted in
    #: ``policy.counts.truncated``: two-tower texts and the longer of candidate and gate lose their end, the
    #: causal prompt loses its start.
    max_length: int = 128
    #: causal policy: most tokens generated per gate (a completion without EOS by then is usually invalid).
    max_new_tokens: int = 128
    #: softmax temperature of sampling and of every log-probability (> 0).
    temperature: float = 1.0
    #: scoring policy: Merge candidates = the first m neighbours shown at the gate (fewer if fewer are shown).
    merge_candidates: int = 3
    #: causal policy: wrap the gate prompt in the tokenizer's chat template when it has one (Qwen3 chat
    #: models: with ``enable_thinking=False``); a tokenizer without a template gets the bare prompt.
    chat_template: bool = True
    #: weight dtype when the model is loaded from ``model`` (an injected model keeps its own).
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"

    def __post_init__(self) -> None:
        if self.kind not in _DEFAULT_TARGETS:
            raise ValueError(f"policy.kind must be 'scoring' or 'causal', got {self.kind!r}")
        if not self.model:
            raise ValueError("policy.model must name a model or a path")
        if self.kind == "causal" and self.model == "minilm":
            raise ValueError(
                "policy.model: the causal policy needs a causal LM (e.g. Qwen/Qwen3-8B), not minilm"
            )
        if self.scorer not in ("two_tower", "pair"):
            raise ValueError(f"policy.scorer must be 'two_tower' or 'pair', got {self.scorer!r}")
        if self.max_length < 8:
            raise ValueError(f"policy.max_length must be >= 8, got {self.max_length}")
        if self.max_new_tokens < 1:
            raise ValueError(f"policy.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"policy.temperature must be > 0, got {self.temperature}")
        if self.merge_candidates < 0:
            raise ValueError(f"policy.merge_candidates must be >= 0, got {self.merge_candidates}")
        if self.dtype not in DTYPES:
            raise ValueError(f"policy.dtype must be one of {DTYPES}, got {self.dtype!r}")

    @property
    def structural_head(self) -> bool:
        """Whether the head reads the 16 text-free features ``grpo.trainable=structural`` trains (two-tower)."""
        return self.kind == "scoring" and self.scorer == "two_tower"

    @property
    def lora_rank(self) -> int:
        """The LoRA rank, with the kind's default (scoring 0, causal 16) filled in."""
        if self.lora.rank >= 0:
            return self.lora.rank
        return 0 if self.kind == "scoring" else 16

    @property
    def target_modules(self) -> tuple[str, ...]:
        """The LoRA target modules, with the kind's default filled in."""
        return self.lora.target_modules or _DEFAULT_TARGETS[self.kind]
