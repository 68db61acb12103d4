"""SFTModule: supervised initialization of a policy on teacher operations (both policy kinds).

Teacher actions become samples with ``policy.sample_for(obs, action)``; SFT minimizes the weighted mean
negative log-probability of those samples under the policy (:func:`sft_loss`). The weights come from
:func:`balance_weights`: a heuristic teacher Noops most gates (about 85% on the embedded default), and an
unweighted mean teaches a frozen-encoder policy to Noop everywhere; weighting each sample by the inverse
frequency of its teacher action kind (noop / write / merge) to a power β gives the rare kinds their share.

:class:`SFTModule` takes one AdamW step (trainable parameters only: LoRA and head; every weight at causal
rank 0) per batch of :func:`sft_dataloader`, whose batches are shuffled passes over the samples cut into
mini-batches (the last batch of a pass may be smaller), one seed for the order, exactly ``steps`` batches.
It logs ``sft/loss`` per step and keeps the losses in :attr:`SFTModule.losses`. The policy runs in eval
mode (dropout off), as GRPO does, so both stages optimize the same dropout-free function; its previous mode
is restored when training ends. The Trainer is built in :mod:`memprm.stages.sft_stage`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import torch
from lightning import LightningModule
from torch import nn
from torch.utils.data import DataLoader, Sampler

from memprm.env.policy import GateSample


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
    policy: nn.Module,
    samples: Sequence[GateSample],
    weights: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Σ w·ℓ / Σ w over ``samples`` (weights [N], default all ones); a scalar.

    ℓ = −log π(teacher action), or with ``label_smoothing`` ε > 0 the cross-entropy against the teacher's
    one-hot mixed with ε of the uniform over the gate's candidates: ℓ = −(1 − ε)·log π(a*) − ε·mean_c log π(c).
    Its minimum keeps ≈ ε of the mass off the teacher's action, so the SFT policy still explores under GRPO
    (a scoring policy's candidate set is needed: :meth:`ScoringPolicy.candidate_log_probs`).
    """
    if label_smoothing > 0:
        if not hasattr(policy, "candidate_log_probs"):
            raise ValueError(
                f"sft.label_smoothing needs a policy with a candidate set (policy.kind=scoring), got "
                f"{type(policy).__name__}"
            )
        table, mask = policy.candidate_log_probs(samples)  # [N, C], [N, C]
        choices = torch.tensor([s.choice for s in samples], device=table.device)  # [N]
        chosen = table[torch.arange(len(samples), device=table.device), choices]  # [N]
        uniform = torch.where(mask, table, torch.zeros_like(table)).sum(1) / mask.sum(1)  # [N] mean_c log π(c)
        per_sample = -(1.0 - label_smoothing) * chosen - label_smoothing * uniform  # [N]
    else:
        logp, _ = policy.log_probs(samples)  # [N]
        per_sample = -logp
    if weights is None:
        return per_sample.mean()
    w = weights.to(per_sample.device, per_sample.dtype)  # [N]
    return (w * per_sample).sum() / w.sum()


class SFTBatches(Sampler[list[int]]):
    """Exactly ``steps`` batches of indices into ``n`` samples: passes, each a fresh
    ``torch.randperm(n)`` from one generator seeded with ``seed``, cut into consecutive chunks of
    ``batch_size`` (a pass's last chunk may be smaller); the last pass stops after the ``steps``-th batch.
    Every iteration starts over from the seed, so the order does not depend on how often it is iterated.

    >>> list(SFTBatches(3, batch_size=2, steps=3, seed=0))  # two passes: 2 + 1, then 2
    [[2, 0], [1], [2, 1]]
    """

    def __init__(self, n: int, batch_size: int, steps: int, seed: int):
        if n < 1 or batch_size < 1 or steps < 1:
            raise ValueError(f"SFTBatches: need n, batch_size, steps >= 1; got {n}, {batch_size}, {steps}")
        self.n, self.batch_size, self.steps, self.seed = n, batch_size, steps, seed

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed)
        order: list[int] = []
        for _ in range(self.steps):
            if not order:  # a new pass; its last batch may be smaller
                order = torch.randperm(self.n, generator=generator).tolist()
            batch, order = order[: self.batch_size], order[self.batch_size :]
            yield batch


def sft_dataloader(
    samples: Sequence[GateSample], batch_size: int, steps: int, seed: int, weights: torch.Tensor | None = None
) -> DataLoader:
    """Batches ``(samples of the batch, their weights [B] or None)`` in the order of :class:`SFTBatches`."""
    if not samples:
        raise ValueError("SFT: no samples")
    if weights is not None and tuple(weights.shape) != (len(samples),):
        raise ValueError(f"SFT: weights of shape {tuple(weights.shape)} for {len(samples)} samples")
    samples = list(samples)

    def collate(batch: list[int]) -> tuple[list[GateSample], torch.Tensor | None]:
        return [samples[i] for i in batch], None if weights is None else weights[batch]  # weights [B]

    batches = SFTBatches(len(samples), batch_size, steps, seed)
    # a generator of its own: the loader's base seed is then not drawn from torch's global generator
    return DataLoader(
        range(len(samples)), batch_sampler=batches, collate_fn=collate, generator=torch.Generator()
    )


class SFTModule(LightningModule):
    """SFT of a :class:`~memprm.env.policy.GatePolicy` (an ``nn.Module``); see the module doc."""

    def __init__(
        self, policy: nn.Module, lr: float, weight_decay: float = 0.0, label_smoothing: float = 0.0
    ):
        super().__init__()
        if not lr > 0:
            raise ValueError(f"SFT: need lr > 0; got {lr}")
        if not any(p.requires_grad for p in policy.parameters()):
            raise ValueError("SFT: the policy has no trainable parameters")
        self.policy = policy
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"SFT: label_smoothing must be in [0, 1), got {label_smoothing}")
        self.lr, self.weight_decay, self.label_smoothing = lr, weight_decay, label_smoothing
        #: each training step's loss, in order.
        self.losses: list[float] = []
        self._policy_was_training: bool | None = None

    def on_train_start(self) -> None:
        self._policy_was_training = self.policy.training
        self.policy.eval()

    def on_train_batch_start(self, batch: object, batch_idx: int) -> None:
        self.policy.eval()  # no mode switch made around the step by the trainer or a callback leaks in

    def on_train_end(self) -> None:
        if self._policy_was_training is not None:
            self.policy.train(self._policy_was_training)
            self._policy_was_training = None

    def transfer_batch_to_device(self, batch: object, device: torch.device, dataloader_idx: int) -> object:
        """Batches stay as they are: Lightning's default would deep-copy the frozen ``GateSample`` s and refuse
        them; the policy builds its tensors on its own device and :func:`sft_loss` moves the weights."""
        return batch

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = [p for p in self.policy.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)

    def training_step(
        self, batch: tuple[Sequence[GateSample], torch.Tensor | None], batch_idx: int = 0
    ) -> torch.Tensor:
        samples, weights = batch  # weights [B] or None
        loss = sft_loss(self.policy, samples, weights, self.label_smoothing)
        self.losses.append(float(loss.detach()))
        self.log(
            "sft/loss", self.losses[-1], on_step=True, on_epoch=False, prog_bar=True, batch_size=len(samples)
        )
        return loss
