"""Critic backbones: a Hugging Face encoder or causal LM, LoRA-adapted with peft, pooled to one vector per text.

Two kinds, chosen by config:

- ``encoder`` (default: the offline all-MiniLM-L6-v2, ``model: minilm``): mean pooling over the attention mask,
  as sentence-transformers does for that model. Default LoRA targets ``query`` and ``value`` (BERT naming).
- ``causal`` (the Qwen3 family; the paper's critic is Qwen3-1.7B): the hidden state at the last non-pad
  position. The position is found from the attention mask, so right and left padding both work. Default LoRA
  targets ``q_proj`` and ``v_proj``.

Both kinds load with ``transformers.AutoModel``, i.e. the bare transformer without a language-model head: the
critic only needs hidden states, and a causal checkpoint loads into its base model unchanged. Building and
injecting a ready model: :func:`build_backbone`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from peft import PeftModel, get_peft_model
from torch import nn
from transformers import AutoModel, AutoTokenizer, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from memprm.memory.embedder import resolve_model_path
from memprm.models.backbone_config import BackboneConfig

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Backbone(nn.Module):
    """A LoRA-wrapped transformer and its tokenizer; ``forward`` returns one pooled vector per row."""

    def __init__(self, model: PeftModel, tokenizer: PreTrainedTokenizerBase, pooling: str):
        super().__init__()
        if pooling not in ("mean", "last"):
            raise ValueError(f"pooling must be 'mean' or 'last', got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.hidden_size = int(model.get_base_model().config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids, attention_mask: [B, L] → pooled [B, H] in float32."""
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # [B, L, H]
        return pool(hidden.float(), attention_mask, self.pooling)


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """hidden: [B, L, H]; attention_mask: [B, L] (1 = token, 0 = pad) → [B, H].

    ``mean``: average of the non-pad positions. ``last``: the last position whose mask is 1 (right or left
    padding). A row with no token at all is an error, not a silent zero vector.
    """
    mask = attention_mask.to(hidden.dtype)  # [B, L]
    counts = mask.sum(dim=1)  # [B]
    if bool((counts == 0).any()):
        raise ValueError("pool: a row has an all-zero attention mask (empty input)")
    if pooling == "mean":
        return (hidden * mask[:, :, None]).sum(dim=1) / counts[:, None]  # [B, H]
    if pooling == "last":
        positions = torch.arange(hidden.shape[1], device=hidden.device)  # [L]
        last = (attention_mask.long() * positions[None, :]).argmax(dim=1)  # [B]  index of the last 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]  # [B, H]
    raise ValueError(f"pool: unknown pooling {pooling!r}")


def load_or_take(auto_cls, path: str, dtype: str, model, tokenizer, who: str):
    """(model, tokenizer): loaded from ``path`` with ``auto_cls`` (``AutoModel``, ``AutoModelForCausalLM``…),
    or the given ``model`` — a ready ``PreTrainedModel``, or a ``PretrainedConfig`` built with random
    weights — with its required ``tokenizer``. ``who`` names the caller in errors."""
    if model is None:
        base = auto_cls.from_pretrained(path, dtype=_DTYPES[dtype])
        return base, tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(path)
    if tokenizer is None:
        raise ValueError(f"{who}: a tokenizer must be passed together with a model or model config")
    if isinstance(model, PretrainedConfig):
        return auto_cls.from_config(model), tokenizer
    if isinstance(model, PreTrainedModel):
        return model, tokenizer
    raise TypeError(f"{who}: model must be a PreTrainedModel or PretrainedConfig, got {type(model)}")


def build_backbone(
    cfg: BackboneConfig,
    model: PreTrainedModel | PretrainedConfig | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> Backbone:
    """Load (or take) the base model and tokenizer, inject fresh LoRA layers, and wrap them with pooling.

    Injection for tests and for callers that already hold a model: ``build_backbone(cfg, model=...,
    tokenizer=...)`` accepts a ready ``PreTrainedModel`` or a ``PretrainedConfig`` (random weights) together
    with a tokenizer, so nothing is downloaded. ``get_peft_model`` injects the LoRA layers into the passed
    model *in place*: a model object passed here must not be reused as a plain base model afterwards.

    After building, only the LoRA parameters of the backbone require gradients (peft freezes the rest).
    """
    base, tok = load_base(cfg, model, tokenizer)
    peft_model = get_peft_model(base, cfg.lora_config())
    return Backbone(peft_model, tok, cfg.resolved_pooling)


def load_base(
    cfg: BackboneConfig,
    model: PreTrainedModel | PretrainedConfig | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The plain (not yet LoRA-wrapped) base model and a tokenizer with a pad token.

    ``model=None`` loads ``cfg.model`` (and its tokenizer, unless one is passed). A model object or config needs
    an explicit tokenizer. A tokenizer without a pad token gets its EOS token as pad (the usual choice for
    decoder-only models; pooling reads the attention mask, so the pad id's value never matters).
    """
    base, tok = load_or_take(
        AutoModel, resolve_model_path(cfg.model), cfg.dtype, model, tokenizer, "build_backbone"
    )
    if isinstance(base, PeftModel) or any("lora_" in name for name, _ in base.named_parameters()):
        raise ValueError(
            "build_backbone: the base model already carries LoRA layers (get_peft_model modifies its model in "
            "place); pass a fresh base model"
        )
    if tok.pad_token_id is None:
        if tok.eos_token is None:
            raise ValueError(
                f"tokenizer of {cfg.model!r} has neither a pad token nor an EOS token to pad with"
            )
        tok.pad_token = tok.eos_token
    return base, tok


@dataclass(frozen=True)
class Encoded:
    """Token ids of a list of texts, one 1-D tensor per text, and how many texts were cut to ``max_length``."""

    ids: tuple[torch.Tensor, ...]  # each [L_i] int64, 1 <= L_i <= max_length
    n_truncated: int


def encode_texts(
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    max_length: int,
    truncation_side: Literal["left", "right"] = "left",
) -> Encoded:
    """Tokenize ``texts`` in one tokenizer call, with the model's special tokens, cut to ``max_length``.

    ``truncation_side="left"`` drops the *start* of an over-long text and keeps its end, where the decision-time
    rendering puts the operation under judgement. Truncation is counted (via the tokenizer's overflow rows:
    the first row of each text is the kept part), never silent. No padding here: see :func:`pad_right`.
    """
    if max_length < 2:
        raise ValueError(f"encode_texts: max_length must be >= 2, got {max_length}")
    if truncation_side not in ("left", "right"):
        raise ValueError(f"encode_texts: truncation_side must be 'left' or 'right', got {truncation_side!r}")
    if not texts:
        return Encoded(ids=(), n_truncated=0)
    previous = tokenizer.truncation_side
    tokenizer.truncation_side = truncation_side
    try:
        enc = tokenizer(
            list(texts), truncation=True, max_length=max_length, return_overflowing_tokens=True, padding=False
        )
    finally:
        tokenizer.truncation_side = previous
    rows = enc["input_ids"]
    owner = enc.get("overflow_to_sample_mapping")
    if owner is None:
        raise TypeError(
            f"encode_texts: {type(tokenizer).__name__} returns no overflow mapping; use a fast tokenizer"
        )
    first: dict[int, list[int]] = {}
    pieces = [0] * len(texts)
    for row, sample in zip(rows, owner, strict=True):
        pieces[sample] += 1
        first.setdefault(sample, row)
    ids = []
    for i in range(len(texts)):
        if not first.get(i):
            raise ValueError(f"encode_texts: text {i} ({texts[i][:40]!r}) encodes to no tokens")
        ids.append(torch.tensor(first[i], dtype=torch.long))
    return Encoded(ids=tuple(ids), n_truncated=sum(n > 1 for n in pieces))


def pad_right(
    seqs: list[torch.Tensor] | tuple[torch.Tensor, ...], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """seqs: B tensors [L_i] → input_ids [B, max L_i] (right-padded with ``pad_id``), attention_mask [B, max L_i]."""
    if not seqs:
        raise ValueError("pad_right: no sequences")
    width = max(int(s.numel()) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)  # [B, L]
    mask = torch.zeros((len(seqs), width), dtype=torch.long)  # [B, L]
    for row, s in enumerate(seqs):
        input_ids[row, : s.numel()] = s
        mask[row, : s.numel()] = 1
    return input_ids, mask
