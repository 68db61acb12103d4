"""Supervised initialization of a policy on teacher operations (both policy kinds).

Teacher actions become samples with ``policy.sample_for(obs, action)``; SFT minimizes the weighted mean
negative log-probability of those samples under the policy (:func:`sft_loss`). The weights come from
:func:`balance_weights`: a heuristic teacher Noops most gates (about 85% on the embedded default), and an
unweighted mean teaches a frozen-encoder policy to Noop everywhere; weighting each sample by the inverse
frequency of its teacher action kind (noop / write / merge) to a power β gives the rare kinds their share. :func:`sft_train` is a plain loop:
AdamW over the trainable parameters (LoRA and head; every weight at causal rank 0), shuffled passes over
the samples cut into mini-batches (the last batch of a pass may be smaller), one seed for the order, and a
tqdm progress bar; the Lightning wiring lives elsewhere. It runs the policy in eval mode (dropout off), as
GRPO does, so both stages optimize the same dropout-free function, and restores the previous mode afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
from torch import nn

from memprm.logs import progress as progress_bar
from memprm.models.policy_api import GateSample
from memprm.models.scoring_policy import eval_mode


def balance_weights(kinds: Sequence[str], power: float) -> torch.Tensor:
    """Per-sample weights [N] ∝ count(kind)^(−power), normalized to mean 1.

    ``power`` 0 gives all ones (the plain mean); 1 gives every kind present the same total weight.
    """
    if not kinds:
        raise ValueError("balance_weights: no samples")
    if not 0.0 <= power <= 1.0:
        raise ValueError(f"balance_weights: power must be in [0, 1], got {power}")
    counts = Counter(kinds)
    w = torch.tensor([float(counts[k]) ** -power for k in kinds], dtype=torch.float64)  # [N]
    return (w * (len(kinds) / w.sum())).float()


def sft_loss(
    policy: nn.Module, samples: Sequence[GateSample], weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Σ w·(−log π(teacher action)) / Σ w over ``samples`` (weights [N], default all ones); a scalar."""
    logp, _ = policy.log_probs(samples)  # [N]
    if weights is None:
        return -logp.mean()
    w = weights.to(logp.device, logp.dtype)  # [N]
    return -(w * logp).sum() / w.sum()


def sft_train(
    policy: nn.Module,
    samples: Sequence[GateSample],
    steps: int,
    lr: float,
    batch_size: int,
    seed: int,
    *,
    weights: torch.Tensor | None = None,
    weight_decay: float = 0.0,
    progress: bool = True,
) -> list[float]:
    """``steps`` AdamW steps of :func:`sft_loss` on mini-batches of ``samples`` (with their ``weights`` [N]
    when given); returns each step's loss."""
    if not samples:
        raise ValueError("sft_train: no samples")
    if weights is not None and tuple(weights.shape) != (len(samples),):
        raise ValueError(f"sft_train: weights of shape {tuple(weights.shape)} for {len(samples)} samples")
    if steps < 1 or batch_size < 1 or not lr > 0:
        raise ValueError(
            f"sft_train: need steps >= 1, batch_size >= 1, lr > 0; got {steps}, {batch_size}, {lr}"
        )
    params = [p for p in policy.parameters() if p.requires_grad]
    if not params:
        raise ValueError("sft_train: the policy has no trainable parameters")
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    generator = torch.Generator().manual_seed(seed)
    order: list[int] = []
    losses: list[float] = []
    with eval_mode(policy):
        bar = progress_bar(range(steps), desc="sft", enabled=progress)
        for _ in bar:
            if not order:  # a new pass; its last batch may be smaller
                order = torch.randperm(len(samples), generator=generator).tolist()
            batch, order = order[:batch_size], order[batch_size:]
            loss = sft_loss(policy, [samples[i] for i in batch], None if weights is None else weights[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
    return losses
