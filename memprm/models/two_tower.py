"""Two-tower features for the scoring policy: every distinct text is encoded once, the head scores the pair.

A gate's query (:func:`memprm.env.candidates.gate_query`) and each candidate's content and Merge target are
encoded *separately* (mean-pooled, L2-normalized) and cached by text, so a gate costs one encoder pass for a
query never seen before (the forks of a group and both layers of a turn share it) plus one per new content;
the pair encoder instead reads every (candidate, gate) pair, ≈ 128 tokens each. Each text is encoded without
padding (texts are batched only with texts of the same token length), so its vector never depends on what it
was batched with and a cached vector is bit-identical to a recomputed one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from memprm.env.candidates import CANDIDATE_KINDS, GateView
from memprm.memory.bank import MANAGED_LAYERS

RANKS = 3  # rank one-hot: 0, 1, 2 or more


def structural_dim() -> int:
    """The leading features that do not depend on the texts' vectors: kind × layer, rank, two cosines and
    whether a Merge's note has its target's key (16).

    >>> structural_dim()
    16
    """
    return len(CANDIDATE_KINDS) * len(MANAGED_LAYERS) + RANKS + 3


def structural_names() -> list[str]:
    """Names of the :func:`structural_dim` features, in order (kind-major × layer, rank, cosines, same key).

    >>> structural_names()[:2], structural_names()[-3:]
    (['noop/event', 'noop/profile'], ['cos(c,q)', 'cos(c,t)', 'same key'])
    """
    names = [f"{k}/{layer}" for k in CANDIDATE_KINDS for layer in MANAGED_LAYERS]
    names += [f"rank {r}" if r < RANKS - 1 else f"rank {r}+" for r in range(RANKS)]
    return names + ["cos(c,q)", "cos(c,t)", "same key"]


def kind_rank_dim() -> int:
    """The leading structural features without the cosines and the key match: kind × layer and rank (13).

    >>> kind_rank_dim()
    13
    """
    return len(CANDIDATE_KINDS) * len(MANAGED_LAYERS) + RANKS


def feature_dim(hidden: int) -> int:
    """[kind × layer one-hot | rank one-hot | cos(c, q), cos(c, t) | same key | c·√H | (c ⊙ q)·H | (c ⊙ t)·H]."""
    return structural_dim() + 3 * hidden


class TextVectors:
    """Encoder vectors of texts, ``[U, H]``; cached (frozen encoder) or with gradients (LoRA).

    Tokens run through the encoder are added to ``counts.encoded_tokens`` (the policy's counters); token ids and
    vectors are cached by text (``cache_size`` texts at most; emptied when full).
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        max_length: int,
        counts,
        cache_size: int = 200_000,
    ):
        self.encoder, self.tokenizer, self.max_length, self.cache_size = (
            encoder,
            tokenizer,
            max_length,
            cache_size,
        )
        self.counts = counts
        self.hidden = int(encoder.config.hidden_size)
        self._ids: dict[str, list[int]] = {}  # untruncated token ids by text
        self._vectors: dict[str, torch.Tensor] = {}  # frozen encoder only

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._ids]
        if len(self._ids) + len(missing) > self.cache_size:
            self._ids.clear()
            missing = list(dict.fromkeys(texts))
        if missing:
            self._ids.update(
                zip(missing, self.tokenizer(missing, truncation=False)["input_ids"], strict=True)
            )
        return [self._ids[t] for t in texts]

    def count_truncated(self, texts: Sequence[str]) -> int:
        return sum(len(ids) > self.max_length for ids in self._token_ids([t for t in texts if t]))

    def _cut(self, ids: list[int]) -> list[int]:
        return ids if len(ids) <= self.max_length else ids[: self.max_length - 1] + ids[-1:]  # keep [SEP]

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """Distinct non-empty texts → normalized vectors [U, H], in order, through the encoder's current mode."""
        device = next(self.encoder.parameters()).device
        ids = [self._cut(i) for i in self._token_ids(texts)]
        out: list[torch.Tensor | None] = [None] * len(texts)
        by_length: dict[int, list[int]] = {}
        for k, seq in enumerate(ids):
            by_length.setdefault(len(seq), []).append(k)
        for length, members in by_length.items():
            for start in range(0, len(members), 64):
                chunk = members[start : start + 64]
                batch = torch.tensor([ids[k] for k in chunk], device=device)  # [B, L], no padding
                hidden = self.encoder(
                    input_ids=batch, attention_mask=torch.ones_like(batch)
                ).last_hidden_state
                vecs = nn.functional.normalize(hidden.float().mean(dim=1), dim=-1)  # [B, H]
                self.counts.encoded_tokens += length * len(chunk)
                for k, v in zip(chunk, vecs, strict=True):
                    out[k] = v
        return torch.stack(out) if out else torch.zeros((0, self.hidden), device=device)  # type: ignore[arg-type]

    def lookup(self, texts: Sequence[str], *, cached: bool) -> torch.Tensor:
        """Distinct non-empty texts → [U, H]: from the cache (no gradients, eval mode) or encoded now."""
        if not cached:
            return self.encode(texts)
        missing = [t for t in texts if t not in self._vectors]
        if len(self._vectors) + len(missing) > self.cache_size:
            self._vectors.clear()
            missing = list(texts)
        if missing:
            was_training = self.encoder.training
            self.encoder.eval()
            try:
                with torch.no_grad():
                    self._vectors.update(zip(missing, self.encode(missing), strict=True))
            finally:
                self.encoder.train(was_training)
        return torch.stack([self._vectors[t] for t in texts]) if texts else self.encode([])


def view_features(views: Sequence[GateView], vectors: TextVectors, *, cached: bool) -> torch.Tensor:
    """The candidates of ``views``, gate after gate → features [T, feature_dim(H)] (T = Σ candidates)."""
    texts = list(dict.fromkeys(t for v in views for t in _texts(v) if t))
    table = vectors.lookup(texts, cached=cached)  # [U, H]
    table = torch.cat([table, table.new_zeros((1, vectors.hidden))])  # row U: the empty text
    index = {t: i for i, t in enumerate(texts)} | {"": len(texts)}
    n_kinds, n_layers = len(CANDIDATE_KINDS), len(MANAGED_LAYERS)
    kind_layer, rank, same_key, c_idx, q_idx, t_idx = [], [], [], [], [], []
    for v in views:
        if v.layer not in MANAGED_LAYERS:
            raise ValueError(
                f"two-tower scorer: unknown layer {v.layer!r} (expected one of {MANAGED_LAYERS})"
            )
        for c in v.candidates:
            kind_layer.append(CANDIDATE_KINDS.index(c.kind) * n_layers + MANAGED_LAYERS.index(v.layer))
            rank.append(min(c.rank, RANKS - 1))
            same_key.append(float(c.same_key))
            c_idx.append(index[c.content])
            q_idx.append(index[v.query])
            t_idx.append(index[c.target])
    dev = table.device
    ec, eq, et = (
        table[torch.tensor(i, device=dev, dtype=torch.long)] for i in (c_idx, q_idx, t_idx)
    )  # [T, H]
    h = float(vectors.hidden)
    onehot_kl = nn.functional.one_hot(torch.tensor(kind_layer, device=dev), n_kinds * n_layers).float()
    onehot_rank = nn.functional.one_hot(torch.tensor(rank, device=dev), RANKS).float()
    cos = torch.stack([(ec * eq).sum(-1), (ec * et).sum(-1)], dim=-1)  # [T, 2]
    key = torch.tensor(same_key, device=dev).unsqueeze(-1)  # [T, 1]
    return torch.cat([onehot_kl, onehot_rank, cos, key, ec * h**0.5, ec * eq * h, ec * et * h], dim=-1)


def _texts(view: GateView) -> list[str]:
    return [view.query] + [t for c in view.candidates for t in (c.content, c.target)]
