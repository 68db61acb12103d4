"""The lightweight scoring policy: a shared encoder scores a small candidate set per gate (CPU-friendly).

At a gate the candidates are those of :func:`memprm.env.candidates.gate_candidates`: Noop, Write of the turn,
Write of each note on offer, Merge (of the first note, else the turn) into each of the first ``merge_candidates``
neighbours shown.

Each candidate is scored as a cross-encoder pair ``(candidate text, gate text)``: the encoder (MiniLM by
default, LoRA on query/value, frozen base) reads both, the non-pad tokens are mean-pooled
(:func:`memprm.models.backbone.pool`) and a linear head gives one logit per candidate; the policy is
``softmax(logits / temperature)`` over the gate's candidates. The head starts at zero, so an untrained policy
is uniform over its candidates (greedy ties go to the lowest index, Noop). Pairs longer than ``max_length``
lose tokens from the end of the longer text (``longest_first``). The gate text lists layer, date and turn
first, then the preceding turns latest first, then the shown entries, so a cut drops the shown entries first
(each Merge candidate carries its own entry) and then the oldest context. Cuts are counted in
``counts.truncated`` when a sample is made (``act``, ``sample_for``), not when it is re-scored.

Teacher actions (``sample_for``): Noop → 0; a Write whose content is a note on offer → that note's candidate;
a Write of the turn → 1; any other Write → the first note's candidate (1 when there is no note), counted in
``counts.write_content_replaced``; Merge into the j-th shown neighbour → its merge candidate for j < m. A
Merge into a shown neighbour beyond the first m maps to the first Write of a note (else of the turn), counted
in ``counts.merge_beyond_m_as_write``: the teacher judged the turn worth keeping, and writing it is the
closest candidate that keeps it (Noop would drop it). An action that is invalid at the gate (a Merge into an
entry not shown, an empty Write) is an error.

``act`` runs in eval mode (restoring the previous mode); ``log_probs`` in the current mode: GRPO and SFT keep
the policy in eval mode, so MiniLM's own dropout never makes a recomputed log-probability differ from the
sampled one.

Frozen encoder (``lora.rank`` 0, the CPU default): only the head trains, so a pair's pooled features never
change; they are computed once in eval mode, without gradients, and cached by (candidate, gate) text
(``feature_cache_size`` pairs at most; the cache is emptied when full). SFT and GRPO then cost a linear layer
per re-scored candidate. With LoRA the encoder runs, with gradients, on every call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from peft import get_peft_model
from torch import nn
from transformers import PreTrainedTokenizerBase

from memprm.env.candidates import Candidate, gate_candidates
from memprm.env.gates import Action, Observation
from memprm.env.ops_format import format_operation, validate_operation
from memprm.models.backbone import load_base, pool
from memprm.models.backbone_config import BackboneConfig
from memprm.models.policy_api import GateSample
from memprm.models.policy_config import PolicyConfig

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
    """Encoder + linear head over per-gate candidates (a :class:`~memprm.models.policy_api.GatePolicy`)."""

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
        self.head = nn.Linear(int(hidden), 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.counts = ScoringCounts()
        self._features: dict[tuple[str, str], torch.Tensor] = {}  # frozen encoder only (module docstring)
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
        prompt = gate_text(obs)
        texts = tuple(c.text for c in cands)
        self.counts.truncated += self._count_truncated(texts, [prompt] * len(texts))
        with eval_mode(self), torch.no_grad():
            logp = torch.log_softmax(self._logits(texts, [prompt] * len(texts)), dim=0)  # [C]
        choice = pick(logp, greedy, generator)
        sample = GateSample(prompt=prompt, candidates=texts, choice=choice, logprob=float(logp[choice]))
        return cands[choice].action, sample

    def sample_for(self, obs: Observation, action: Action) -> GateSample:
        """The sample choosing the candidate that stands for ``action`` (mapping in the module docstring).

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
        prompt = gate_text(obs)
        texts = tuple(c.text for c in self.candidates(obs))
        self.counts.truncated += self._count_truncated(texts, [prompt] * len(texts))
        return GateSample(prompt=prompt, candidates=texts, choice=choice)

    def log_probs(self, samples: Sequence[GateSample]) -> tuple[torch.Tensor, torch.Tensor]:
        """(log π(choice) [N], entropy [N]) with gradients; all candidates of all samples in one batch."""
        if not samples:
            raise ValueError("ScoringPolicy.log_probs: no samples")
        for i, s in enumerate(samples):
            if not s.candidates or not 0 <= s.choice < len(s.candidates):
                raise ValueError(
                    f"ScoringPolicy.log_probs: sample {i} has {len(s.candidates)} candidates and choice "
                    f"{s.choice} (not a scoring-policy sample?)"
                )
        counts = torch.tensor([len(s.candidates) for s in samples], device=self.device)  # [N]
        texts = [c for s in samples for c in s.candidates]
        gates = [s.prompt for s in samples for _ in s.candidates]
        logits = self._logits(texts, gates)  # [T], T = Σ counts
        n, width = len(samples), int(counts.max())
        rows = torch.repeat_interleave(torch.arange(n, device=self.device), counts)  # [T]
        cols = torch.cat([torch.arange(int(c), device=self.device) for c in counts])  # [T]
        table = torch.full((n, width), float("-inf"), device=self.device).index_put(
            (rows, cols), logits
        )  # [N, C]
        mask = torch.zeros((n, width), dtype=torch.bool, device=self.device).index_put(
            (rows, cols), torch.ones_like(rows, dtype=torch.bool)
        )  # [N, C]
        logp = torch.log_softmax(table, dim=1)  # [N, C], -inf at padding
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
        if any(p.requires_grad for p in self.encoder.parameters()):
            pooled = self._pool(texts, gates)  # [T, H], with gradients through LoRA
        else:
            pooled = self._cached_pool(texts, gates)  # [T, H], constant features
        return self.head(pooled).squeeze(-1) / self.cfg.temperature  # [T]

    def _pool(self, texts: Sequence[str], gates: Sequence[str]) -> torch.Tensor:
        enc = self._encode(texts, gates, truncation=True)
        inputs = {
            k: enc[k].to(self.device) for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc
        }
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
