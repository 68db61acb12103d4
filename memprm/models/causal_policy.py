"""The causal-LM policy (the paper's manager, Qwen3 family): writes one strict-JSON operation per gate.

At a gate the model reads :func:`memprm.env.ops_format.gate_prompt` (in its chat template when it has one),
samples a completion token by token and the completion is parsed into the gate's operation (Noop when it is
invalid). Log-probabilities are taken under ``softmax(logits / temperature)``, the distribution sampled from,
and ``GateSample.logprob`` always describes the tokens :meth:`CausalPolicy.log_probs` will score, so the first
GRPO ratio is 1. Prompting, decoding and scoring details are on :meth:`CausalPolicy.render_prompt`,
:meth:`CausalPolicy.act` and :meth:`CausalPolicy.log_probs`.

``act`` runs in eval mode (restoring the previous mode); ``log_probs`` in the current mode (GRPO and SFT keep
the policy in eval mode). Requires a causal LM whose logits are ``output_embeddings(last hidden state)`` with
no post-processing (Qwen3, Llama; not logit soft-capping models). LoRA: :func:`build_causal_policy`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn
from transformers import (
    AutoModelForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from memprm.env.gates import Action, Observation
from memprm.env.ops_format import format_operation, gate_prompt, parse_operation, validate_operation
from memprm.env.policy import GateSample
from memprm.models.backbone import load_or_take, pad_right
from memprm.models.policy_config import PolicyConfig
from memprm.models.scoring_policy import eval_mode, pick


@dataclass
class CausalCounts:
    """Running counters of one policy instance (mutable on purpose; read them after rollouts or SFT prep)."""

    #: completions that parsed to no valid operation, applied as Noop.
    invalid: int = 0
    #: completions that reached ``max_new_tokens`` without EOS.
    unfinished: int = 0
    #: prompts cut to ``max_length`` when a sample was made (their start was dropped).
    truncated: int = 0
    #: sampled completions whose text re-encodes to other token ids (logprob rescored on the re-encoded ids).
    retokenized: int = 0


class CausalPolicy(nn.Module):
    """A (LoRA-adapted) causal LM; implements :class:`~memprm.env.policy.GatePolicy`."""

    def __init__(self, cfg: PolicyConfig, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase):
        super().__init__()
        if cfg.kind != "causal":
            raise ValueError(f"CausalPolicy needs policy.kind='causal', got {cfg.kind!r}")
        if tokenizer.eos_token_id is None:
            raise ValueError(
                "CausalPolicy: the tokenizer has no EOS token (completions must be able to stop)"
            )
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # padding only; the attention mask hides it
        self.cfg = cfg
        self.model = model
        self.tokenizer = tokenizer
        self.templated = bool(cfg.chat_template and getattr(tokenizer, "chat_template", None))
        self.stop_ids = frozenset([tokenizer.eos_token_id, *_generation_eos(self.causal_lm)])
        self._cache_kw = _cache_kwarg(self._body())
        self.counts = CausalCounts()

    @property
    def causal_lm(self) -> PreTrainedModel:
        """The (LoRA-injected) ``…ForCausalLM`` under the peft wrapper."""
        return self.model.get_base_model() if isinstance(self.model, PeftModel) else self.model

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def render_prompt(self, obs: Observation) -> str:
        """The final prompt text of a gate (what ``GateSample.prompt`` holds).

        :func:`memprm.env.ops_format.gate_prompt`, wrapped as one user message in the tokenizer's chat
        template when it has one and ``chat_template`` is on (Qwen3: ``enable_thinking=False``); otherwise the
        bare prompt with the tokenizer's own special tokens. Prompts longer than ``max_length`` tokens lose
        their start (the format instructions and the turn sit at the end), counted in ``counts.truncated``.
        """
        text = gate_prompt(obs)
        if not self.templated:
            return text
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=False,
        )

    def act(
        self, obs: Observation, *, greedy: bool = False, generator: torch.Generator | None = None
    ) -> tuple[Action, GateSample]:
        """Sample (or, ``greedy``, decode) one completion at ``obs`` → (action, sample).

        Decoding: a plain sampling loop with the KV cache (the model's decoder body, then its output embedding
        on the last hidden state), up to ``max_new_tokens``, stopping at EOS (the tokenizer's and the
        generation config's EOS ids). ``GateSample.completion`` is the decoded text *with* special tokens (so
        a generated EOS stays as its string and re-encodes to its id); the action is ``parse_operation`` of
        the text without special tokens, or Noop when that is invalid (counted in ``counts.invalid``).

        A sampled token sequence whose decoded text re-encodes to other ids (a non-canonical tokenization,
        rare for trained models) is counted in ``counts.retokenized`` and its ``logprob`` is recomputed by a
        full forward on the re-encoded ids: ``logprob`` always describes the tokens :meth:`log_probs` will
        score, so the first GRPO ratio is 1. Runs in eval mode (restoring the previous mode).
        """
        prompt = self.render_prompt(obs)
        prompt_ids, cut = self._prompt_ids(prompt)
        self.counts.truncated += cut
        with eval_mode(self), torch.no_grad():
            generated, token_logps = self._generate(prompt_ids, greedy, generator)
        if generated[-1] not in self.stop_ids:
            self.counts.unfinished += 1
        completion = self._decode(generated, keep_special=True)
        sample = GateSample(prompt=prompt, completion=completion, logprob=float(sum(token_logps)))
        if self._completion_ids(completion) != generated:
            self.counts.retokenized += 1
            with eval_mode(self), torch.no_grad():
                sample = sample.with_logprobs(float(self.log_probs([sample])[0][0]))
        action = parse_operation(self._decode(generated, keep_special=False), obs)
        if action is None:
            self.counts.invalid += 1
            action = Action.noop()
        return action, sample

    def sample_for(self, obs: Observation, action: Action) -> GateSample:
        """The sample whose completion is ``format_operation(action)`` + EOS; ``logprob`` stays 0.0 (SFT)."""
        text = format_operation(action)
        if validate_operation(json.loads(text), obs) is None:
            raise ValueError(
                f"sample_for at {obs.dialogue_id}/{obs.turn.id} ({obs.layer}): the action is invalid here: "
                f"{text}"
            )
        prompt = self.render_prompt(obs)
        self.counts.truncated += self._prompt_ids(prompt)[1]
        return GateSample(prompt=prompt, completion=text + self.tokenizer.eos_token)

    def log_probs(self, samples: Sequence[GateSample]) -> tuple[torch.Tensor, torch.Tensor]:
        """(Σ log π(completion tokens) [N], mean per-token entropy [N]) with gradients, one forward.

        Log-probabilities are under ``softmax(logits / temperature)`` — the distribution sampled from — summed
        over the completion's tokens, EOS included when generated; entropy is the mean per-token entropy of
        that distribution over the completion. Prompt and completion are re-encoded *separately* (no merge
        across their boundary) and scored with one right-padded full forward, in the module's current mode.
        """
        if not samples:
            raise ValueError("CausalPolicy.log_probs: no samples")
        seqs, rows, cols, targets, lengths = [], [], [], [], []
        for i, s in enumerate(samples):
            if s.candidates or not s.completion:
                raise ValueError(
                    f"CausalPolicy.log_probs: sample {i} has no completion (not a causal sample?)"
                )
            prompt_ids = self._prompt_ids(s.prompt)[0]
            completion_ids = self._completion_ids(s.completion)
            if not completion_ids:
                raise ValueError(f"CausalPolicy.log_probs: sample {i}'s completion encodes to no tokens")
            p, c = len(prompt_ids), len(completion_ids)
            seqs.append(torch.tensor(prompt_ids + completion_ids, dtype=torch.long))
            rows += [i] * c
            cols += range(p - 1, p + c - 1)  # the position whose output predicts each completion token
            targets += completion_ids
            lengths.append(c)
        input_ids, mask = pad_right(seqs, self.tokenizer.pad_token_id)  # [B, L]
        hidden = self._body()(
            input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), use_cache=False
        ).last_hidden_state  # [B, L, H]
        rows_t = torch.tensor(rows, device=self.device)  # [T]
        logp = self._token_logp(hidden[rows_t, torch.tensor(cols, device=self.device)])  # [T, V]
        token_logp = logp.gather(1, torch.tensor(targets, device=self.device)[:, None]).squeeze(1)  # [T]
        token_entropy = -(logp.exp() * logp).sum(dim=1)  # [T]
        n = len(samples)
        zeros = torch.zeros(n, device=self.device)
        total = zeros.index_add(0, rows_t, token_logp)  # [N]
        entropy = zeros.index_add(0, rows_t, token_entropy) / torch.tensor(lengths, device=self.device)  # [N]
        return total, entropy

    def _body(self) -> nn.Module:
        return self.causal_lm.get_decoder()

    def _token_logp(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden: [T, H] → log softmax(logits / temperature) [T, V] in float32."""
        logits = self.causal_lm.get_output_embeddings()(hidden).float()  # [T, V]
        return torch.log_softmax(logits / self.cfg.temperature, dim=-1)

    def _generate(
        self, prompt_ids: list[int], greedy: bool, generator: torch.Generator | None
    ) -> tuple[list[int], list[float]]:
        """Sample (or take the argmax) token by token with the KV cache → (token ids, their log-probs)."""
        body = self._body()
        out = body(input_ids=torch.tensor([prompt_ids], device=self.device), use_cache=True)
        tokens: list[int] = []
        logps: list[float] = []
        for step in range(self.cfg.max_new_tokens):
            logp = self._token_logp(out.last_hidden_state[:, -1])[0]  # [V]
            token = pick(logp, greedy, generator)
            tokens.append(token)
            logps.append(float(logp[token]))
            if token in self.stop_ids or step == self.cfg.max_new_tokens - 1:
                break
            step_input = torch.tensor([[token]], device=self.device)
            out = body(input_ids=step_input, use_cache=True, **{self._cache_kw: _cache_of(out)})
        return tokens, logps

    def _prompt_ids(self, prompt: str) -> tuple[list[int], bool]:
        """Token ids of the prompt (left-truncated to ``max_length``) and whether it was cut."""
        ids = self.tokenizer(prompt, add_special_tokens=not self.templated)["input_ids"]
        if not ids:
            raise ValueError("CausalPolicy: the prompt encodes to no tokens")
        if len(ids) > self.cfg.max_length:
            return ids[-self.cfg.max_length :], True
        return ids, False

    def _completion_ids(self, completion: str) -> list[int]:
        return self.tokenizer(completion, add_special_tokens=False)["input_ids"]

    def _decode(self, ids: list[int], keep_special: bool) -> str:
        return self.tokenizer.decode(
            ids, skip_special_tokens=not keep_special, clean_up_tokenization_spaces=False
        )


def _cache_kwarg(body: nn.Module) -> str:
    """The decoder's KV-cache argument: ``cache`` (transformers >= 5.2x) or ``past_key_values`` (older)."""
    return "cache" if "cache" in inspect.signature(body.forward).parameters else "past_key_values"


def _cache_of(out) -> object:
    return out["cache"] if "cache" in out else out["past_key_values"]


def _generation_eos(model: PreTrainedModel) -> list[int]:
    gen = getattr(model, "generation_config", None)
    eos = getattr(gen, "eos_token_id", None)
    if eos is None:
        return []
    return [int(e) for e in eos] if isinstance(eos, (list, tuple)) else [int(eos)]


def build_causal_policy(
    cfg: PolicyConfig,
    model: PreTrainedModel | PretrainedConfig | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> CausalPolicy:
    """Load (or take) the causal LM and tokenizer; inject LoRA (rank > 0) or train every weight (rank 0).

    LoRA via peft on ``q_proj`` / ``v_proj`` by default; ``get_peft_model`` modifies the passed model in
    place.
    """
    base, tok = load_or_take(
        AutoModelForCausalLM, cfg.model, cfg.dtype, model, tokenizer, "build_causal_policy"
    )
    if base.get_output_embeddings() is None:
        raise ValueError(f"build_causal_policy: {type(base).__name__} has no LM head (load a …ForCausalLM)")
    if isinstance(base, PeftModel) or any("lora_" in name for name, _ in base.named_parameters()):
        raise ValueError(
            "build_causal_policy: the model already carries LoRA layers (get_peft_model modifies its model "
            "in place); pass a fresh base model"
        )
    if cfg.lora_rank > 0:
        lora = LoraConfig(
            r=cfg.lora_rank,
            lora_alpha=cfg.lora.alpha,
            lora_dropout=cfg.lora.dropout,
            target_modules=list(cfg.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        return CausalPolicy(cfg, get_peft_model(base, lora), tok)
    base.requires_grad_(True)
    return CausalPolicy(cfg, base, tok)
