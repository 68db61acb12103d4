"""The lightweight scoring policy: an encoder scores a small candidate set per gate (CPU-friendly).

At a gate the candidates are those of :func:`memprm.env.candidates.gate_candidates`: Noop, Write of the turn,
Write of each note on offer, Merge (of the first note, else the turn) into each of the first
``merge_candidates`` neighbours shown. The policy is ``softmax(logits / temperature)`` over them; a
zero-initialized linear head gives one logit per candidate, so an untrained policy is uniform (greedy ties go
to the lowest index, Noop). The encoder is MiniLM by default, frozen (``lora.rank`` 0: only the head trains)
or with LoRA on query/value. What the head reads (``policy.scorer``) is on :class:`ScoringPolicy`; how a
teacher's action maps to a candidate is on :meth:`ScoringPolicy.sample_for`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
from peft import get_peft_model
from torch import nn
from transformers import PreTrainedTokenizerBase

from memprm.env.candidates import Candidate, GateView, gate_candidates, gate_view
from memprm.env.gates import Action, Observation
from memprm.env.ops_format import format_operation, validate_operation
from memprm.env.policy import GateSample
from memprm.models.backbone import load_base, pool
from memprm.models.backbone_config import BackboneConfig
from memprm.models.policy_config import PolicyConfig
from memprm.models.two_tower import TextVectors, feature_dim, view_features

NOOP, WRITE = 0, 1  # candidate indices; note Writes follow at 2.., then the Merges (gate_candidates)
__all__ = ["Candidate", "ScoringPolicy", "build_scoring_policy", "gate_candidates", "gate_text"]


@dataclass
class ScoringCounts:
    """Running counters of one policy instance (mutable on purpose; read them after rollouts or SFT prep)."""

    #: (candidate, gate) pairs cut to ``max_length`` when a sample was made.
    truncated: int = 0
    #: teacher Writes whose content is neither the turn nor a note on offer, mapped to the first note's Write.
    write_content_replaced: int = 0
    #: teacher Merges into a shown neighbour beyond the first m, mapped to a Write candidate.
    merge_beyond_m_as_write: int = 0
    #: tokens run through the encoder (padding included), samples and re-scoring alike.
    encoded_tokens: int = 0


def gate_text(obs: Observation) -> str:
    """The gate as the encoder reads it: layer, date, turn, preceding turns (latest first), shown entries."""
    parts = [f"layer: {obs.layer}", f"date: {(obs.timestamp or 'unknown')[:10]}", f"turn: {obs.turn.render}"]
    if obs.context:
        parts.append("recent turns, latest first: " + " / ".join(reversed(obs.context)))
    if obs.neighbours:
        parts.append("shown entries: " + " || ".join(n.text for n in obs.neighbours))
    return " | ".join(parts)


@contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """Run a block in eval mode and restore the module's previous mode afterwards."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


def pick(logp: torch.Tensor, greedy: bool, generator: torch.Generator | None) -> int:
    """logp: [K] log-probs → the argmax (lowest index on ties), or a sample drawn with ``generator``."""
    if greedy:
        return int(torch.argmax(logp).item())
    probs = logp.detach().float().exp()
    if generator is not None and probs.device != generator.device:
        probs = probs.to(generator.device)
    return int(torch.multinomial(probs, 1, generator=generator).item())


class ScoringPolicy(nn.Module):
    """Encoder + linear head over per-gate candidates (a :class:`~memprm.env.policy.GatePolicy`).

    ``policy.scorer`` chooses what the head reads:

    - ``two_tower`` (default, :mod:`memprm.models.two_tower`): the gate's query and each candidate's content
      and Merge target encoded separately and cached by text; one encoder pass per text never seen before.
    - ``pair`` (the reference): a cross-encoder over each ``(candidate text, gate text)`` pair, mean-pooled;
      pairs longer than ``max_length`` lose tokens from the end of the longer text. The gate text
      (:func:`gate_text`) lists layer, date and turn, then the preceding turns latest first, then the shown
      entries. With a frozen encoder the pooled features are cached by pair (``feature_cache_size``).

    Cuts to ``max_length`` are counted in ``counts.truncated`` when a sample is made (``act``,
    ``sample_for``). ``act`` computes without dropout; ``log_probs`` in the current mode: GRPO and SFT keep
    the policy in eval mode, so MiniLM's own dropout never makes a recomputed log-probability differ from the
    sampled one.
    """

    def __init__(self, cfg: PolicyConfig, encoder: nn.Module, tokenizer: PreTrainedTokenizerBase):
        super().__init__()
        if cfg.kind != "scoring":
            raise ValueError(f"ScoringPolicy needs policy.kind='scoring', got {cfg.kind!r}")
        hidden = getattr(encoder.config, "hidden_size", None)
        positions = getattr(encoder.config, "max_position_embeddings", None)
        if hidden is None:
            raise ValueError(
                f"ScoringPolicy: the encoder config {type(encoder.config).__name__} has no hidden_size"
            )
        if positions is not None and cfg.max_length > positions:
            raise ValueError(
                f"policy.max_length={cfg.max_length} exceeds the encoder's "
                f"max_position_embeddings={positions}"
            )
        self.cfg = cfg
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.two_tower = cfg.scorer == "two_tower"
        self.head = nn.Linear(feature_dim(int(hidden)) if self.two_tower else int(hidden), 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.counts = ScoringCounts()
        self.vectors = TextVectors(encoder, tokenizer, cfg.max_length, self.counts) if self.two_tower else None
        self._features: dict[tuple[str, str], torch.Tensor] = {}  # frozen encoder only (class docstring)
        self.feature_cache_size = 200_000

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    def candidates(self, obs: Observation) -> tuple[Candidate, ...]:
        return gate_candidates(obs, self.cfg.merge_candidates)

    def act(
        self, obs: Observation, *, greedy: bool = False, generator: torch.Generator | None = None
    ) -> tuple[Action, GateSample]:
        cands = self.candidates(obs)
        sample = self._sample(obs, cands, -1)
        if self.two_tower and not self._encoder_trains():  # cached vectors: no dropout, no mode to switch
            with torch.no_grad():
                logits = self._view_logits([sample.view])  # type: ignore[list-item]
        else:
            with eval_mode(self), torch.no_grad():
                logits = self._sample_logits([sample])
        logp = torch.log_softmax(logits, dim=0)  # [C]
        choice = pick(logp, greedy, generator)
        return cands[choice].action, replace(sample, choice=choice, logprob=float(logp[choice]))

    def sample_for(self, obs: Observation, action: Action) -> GateSample:
        """The sample choosing the candidate that stands for ``action``.

        Noop → 0; a Write whose content is a note on offer → that note's candidate; a Write of the turn → 1;
        any other Write → the first note's candidate (1 when there is no note), counted in
        ``counts.write_content_replaced``; Merge into the j-th shown neighbour → its merge candidate for
        j < m. A Merge beyond the first m maps to the first Write of a note (else of the turn), counted in
        ``counts.merge_beyond_m_as_write``: writing it is the closest candidate that keeps the turn. An action
        that is invalid at the gate (a Merge into an entry not shown, an empty Write) is an error.

        ``logprob`` stays 0.0: teacher samples feed SFT, which recomputes log-probabilities with gradients.
        """
        where = f"sample_for at {obs.dialogue_id}/{obs.turn.id} ({obs.layer})"
        if action.kind not in ("noop", "write", "merge"):
            raise ValueError(f"{where}: unknown action kind {action.kind!r}")
        if validate_operation(json.loads(format_operation(action)), obs) is None:
            raise ValueError(f"{where}: the action is invalid at this gate: {format_operation(action)}")
        notes = [n.text for n in obs.notes]
        first_write = WRITE + 1 if notes else WRITE  # the first note's Write, else the turn's
        if action.kind == "noop":
            choice = NOOP
        elif action.kind == "write":
            if action.content in notes:
                choice = WRITE + 1 + notes.index(action.content)
            elif action.content == obs.turn.render:
                choice = WRITE
            else:
                choice = first_write
                self.counts.write_content_replaced += 1
        else:
            j = [n.entry_id for n in obs.neighbours].index(action.entry_id)
            if j < self.cfg.merge_candidates:
                choice = WRITE + 1 + len(notes) + j
            else:
                choice = first_write
                self.counts.merge_beyond_m_as_write += 1
        return self._sample(obs, self.candidates(obs), choice)

    def _sample(self, obs: Observation, cands: tuple[Candidate, ...], choice: int) -> GateSample:
        """The gate's sample (counting cuts to ``max_length``), ``choice`` filled in by the caller."""
        prompt, texts = gate_text(obs), tuple(c.text for c in cands)
        view = gate_view(obs, cands)
        if self.two_tower:
            self.counts.truncated += self.vectors.count_truncated(  # type: ignore[union-attr]
                list(dict.fromkeys([view.query] + [t for c in view.candidates for t in (c.content, c.target)]))
            )
        else:
            self.counts.truncated += self._count_truncated(texts, [prompt] * len(texts))
        return GateSample(prompt=prompt, candidates=texts, choice=choice, view=view)

    def _encoder_trains(self) -> bool:
        return any(p.requires_grad for p in self.encoder.parameters())

    def _sample_logits(self, samples: Sequence[GateSample]) -> torch.Tensor:
        """All candidates of all samples, sample after sample → logits [T]."""
        if self.two_tower:
            missing = [i for i, s in enumerate(samples) if s.view is None]
            if missing:
                raise ValueError(
                    f"ScoringPolicy.log_probs: sample {missing[0]} has no view (made by a pair-scorer policy?); "
                    "the two-tower scorer needs GateSample.view"
                )
            return self._view_logits([s.view for s in samples])  # type: ignore[misc]
        texts = [c for s in samples for c in s.candidates]
        return self._logits(texts, [s.prompt for s in samples for _ in s.candidates])

    def _view_logits(self, views: Sequence[GateView]) -> torch.Tensor:
        feats = view_features(views, self.vectors, cached=not self._encoder_trains())  # [T, F]
        return self.head(feats).squeeze(-1) / self.cfg.temperature  # [T]

    def candidate_log_probs(self, samples: Sequence[GateSample]) -> tuple[torch.Tensor, torch.Tensor]:
        """(log π(candidate | gate) [N, C], mask [N, C]) over every candidate of every sample, C the most
        candidates of any sample; ``-inf`` at padding (mask False). One batch, with gradients, in the current
        mode; ``choice`` is not read (the drift monitor compares whole distributions)."""
        if not samples:
            raise ValueError("ScoringPolicy: no samples to score")
        empty = [i for i, s in enumerate(samples) if not s.candidates]
        if empty:
            raise ValueError(
                f"ScoringPolicy: sample {empty[0]} has no candidates (not a scoring-policy sample?)"
            )
        counts = torch.tensor([len(s.candidates) for s in samples], device=self.device)  # [N]
        logits = self._sample_logits(samples)  # [T], T = Σ counts
        n, width = len(samples), int(counts.max())
        rows = torch.repeat_interleave(torch.arange(n, device=self.device), counts)  # [T]
        cols = torch.cat([torch.arange(int(c), device=self.device) for c in counts])  # [T]
        table = torch.full((n, width), float("-inf"), device=self.device).index_put(
            (rows, cols), logits
        )  # [N, C]
        mask = torch.zeros((n, width), dtype=torch.bool, device=self.device).index_put(
            (rows, cols), torch.ones_like(rows, dtype=torch.bool)
        )  # [N, C]
        return torch.log_softmax(table, dim=1), mask  # [N, C], -inf at padding

    def log_probs(self, samples: Sequence[GateSample]) -> tuple[torch.Tensor, torch.Tensor]:
        """(log π(choice) [N], entropy [N]) with gradients; all candidates of all samples in one batch."""
        for i, s in enumerate(samples):
            if not s.candidates or not 0 <= s.choice < len(s.candidates):
                raise ValueError(
                    f"ScoringPolicy.log_probs: sample {i} has {len(s.candidates)} candidates and choice "
                    f"{s.choice} (not a scoring-policy sample?)"
                )
        logp, mask = self.candidate_log_probs(samples)  # [N, C], [N, C]
        n = len(samples)
        choices = torch.tensor([s.choice for s in samples], device=self.device)  # [N]
        chosen = logp[torch.arange(n, device=self.device), choices]  # [N]
        safe = torch.where(mask, logp, torch.zeros_like(logp))  # no 0·(-inf) in value or gradient
        entropy = -(safe.exp() * safe * mask).sum(dim=1)  # [N]
        return chosen, entropy

    def _encode(
        self, texts: Sequence[str], gates: Sequence[str], truncation: bool
    ) -> dict[str, torch.Tensor]:
        previous = self.tokenizer.truncation_side
        self.tokenizer.truncation_side = "right"
        try:
            return self.tokenizer(
                list(texts),
                list(gates),
                truncation="longest_first" if truncation else False,
                max_length=self.cfg.max_length if truncation else None,
                padding=truncation,
                return_tensors="pt" if truncation else None,
            )
        finally:
            self.tokenizer.truncation_side = previous

    def _count_truncated(self, texts: Sequence[str], gates: Sequence[str]) -> int:
        lengths = [len(ids) for ids in self._encode(texts, gates, truncation=False)["input_ids"]]
        return sum(n > self.cfg.max_length for n in lengths)

    def _logits(self, texts: Sequence[str], gates: Sequence[str]) -> torch.Tensor:
        """T (candidate, gate) pairs → temperature-scaled logits [T] (float32)."""
        if self._encoder_trains():
            pooled = self._pool(texts, gates)  # [T, H], with gradients through LoRA
        else:
            pooled = self._cached_pool(texts, gates)  # [T, H], constant features
        return self.head(pooled).squeeze(-1) / self.cfg.temperature  # [T]

    def _pool(self, texts: Sequence[str], gates: Sequence[str]) -> torch.Tensor:
        enc = self._encode(texts, gates, truncation=True)
        inputs = {
            k: enc[k].to(self.device) for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc
        }
        self.counts.encoded_tokens += int(inputs["input_ids"].numel())
        hidden = self.encoder(**inputs).last_hidden_state  # [T, L, H]
        return pool(hidden.float(), inputs["attention_mask"], "mean")  # [T, H]

    def _cached_pool(self, texts: Sequence[str], gates: Sequence[str]) -> torch.Tensor:
        keys = list(zip(texts, gates, strict=True))
        missing = [k for k in dict.fromkeys(keys) if k not in self._features]
        if len(self._features) + len(missing) > self.feature_cache_size:
            self._features.clear()
            missing = list(dict.fromkeys(keys))
        if missing:
            with torch.no_grad(), eval_mode(self.encoder):
                for i in range(0, len(missing), 64):
                    chunk = missing[i : i + 64]
                    feats = self._pool([k[0] for k in chunk], [k[1] for k in chunk])  # [B, H]
                    self._features.update(zip(chunk, feats, strict=True))
        return torch.stack([self._features[k] for k in keys])  # [T, H]


def build_scoring_policy(cfg: PolicyConfig, model=None, tokenizer=None) -> ScoringPolicy:
    """Load (or take) the encoder and tokenizer, inject LoRA (rank > 0) or freeze the encoder (rank 0)."""
    # load_base ignores the LoRA fields; rank is clamped only because BackboneConfig requires rank >= 1.
    bcfg = BackboneConfig(
        kind="encoder",
        model=cfg.model,
        pooling="mean",
        lora_rank=max(cfg.lora_rank, 1),
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.target_modules,
        dtype=cfg.dtype,
    )
    base, tok = load_base(bcfg, model, tokenizer)
    if cfg.lora_rank > 0:
        encoder = get_peft_model(base, bcfg.lora_config())
    else:
        base.requires_grad_(False)
        encoder = base
    return ScoringPolicy(cfg, encoder, tok)
