"""GRPOPolicyModule: the online GRPO stage of a memory-manager policy (both policy kinds).

A training step takes :class:`~memprm.rollout.batches.GroupBatch` es carrying *unweighted* measurements and
weighs them (:func:`memprm.models.grpo_batch.prepare_batch`: composite rewards at λ = :attr:`shaping_lambda`, group advantages,
groups without contrast skipped and counted), then runs ``cfg.ppo_epochs`` passes of
:func:`memprm.models.grpo_losses.policy_loss` (:meth:`GRPOPolicyModule.training_step`). Manual optimization,
because one batch makes several optimizer steps; ``global_step`` counts optimizer steps. The policy runs in
eval mode, so π_θ/π_old compares dropout-free log-probabilities as the rollouts computed them. The step
returns the batch's reward masses (``reward_masses``) for callbacks, so nothing recomputes the rewards.
What is logged: :meth:`PreparedBatch.metrics` and :meth:`GRPOPolicyModule.training_step`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from lightning.pytorch import LightningModule
from torch import nn

from memprm.credit import reward_masses
from memprm.env.policy import GateSample
from memprm.models.grpo_batch import PreparedBatch, mean_over_ranks, prepare_batch
from memprm.models.grpo_config import GRPOConfig
from memprm.models.grpo_losses import policy_loss
from memprm.models.trainable import load_trainable_state, trainable_state
from memprm.rollout.batches import GroupBatch


class GRPOPolicyModule(LightningModule):
    """GRPO on a :class:`~memprm.env.policy.GatePolicy` (an ``nn.Module``).

    λ(k) contract: :attr:`shaping_lambda` starts at ``cfg.lambda0``; the module never changes it. The
    ``LambdaAnnealing`` callback sets it each optimizer step from ``lambda_schedule(global_step, cfg.lambda0,
    cfg.lambda_inf, cfg.k_decay)``. A training step reads it once, when it weighs the batch's rewards (before
    its own PPO steps), and logs that value as ``grpo/lambda``.

    Dropout: the policy runs in eval mode (``policy.eval()`` on train start and again at the start of every
    training step, so no mode switch made by the trainer or a callback can leak in). The LightningModule
    itself may be in train mode; only the policy's mode matters.

    DDP caveat: every rank must take the same number of optimizer steps per training step (each one
    all-reduces gradients). With ``minibatch_size = 0`` that holds as long as no rank skips all its groups;
    with mini-batches, ranks also need the same number of kept samples.
    """

    def __init__(self, policy: nn.Module, cfg: GRPOConfig, reference: Mapping[str, torch.Tensor] | None = None):
        """``reference``: the KL penalty's reference policy as a trainable state of ``policy``
        (:func:`memprm.models.trainable.trainable_state`; the GRPO stage passes the policy it starts from).
        With it, each training step scores its gate samples under those weights (``GateSample.ref_logprob``);
        without it, samples must arrive with ``ref_logprob`` filled when ``cfg.beta_kl`` > 0. It is the
        stage's input, not trained state: a resumed run passes the same start policy again."""
        super().__init__()
        for name in ("log_probs", "act"):
            if not callable(getattr(policy, name, None)):
                raise ValueError(f"GRPOPolicyModule: the policy {type(policy).__name__} has no {name}()")
        self.policy = policy
        self.cfg = cfg
        self.reference = dict(reference) if reference is not None else None
        own = dict(policy.named_parameters())
        for name, value in (self.reference or {}).items():
            if name not in own or tuple(own[name].shape) != tuple(value.shape):
                raise ValueError(f"GRPOPolicyModule: reference tensor {name!r} is not a parameter of this shape")
        #: λ(k), the shaping weight used when the next batch's rewards are weighed (set by LambdaAnnealing).
        self.shaping_lambda: float = float(cfg.lambda0)
        self.automatic_optimization = False

    def on_train_start(self) -> None:
        self.policy.eval()

    def transfer_batch_to_device(self, batch: object, device: torch.device, dataloader_idx: int) -> object:
        """Batches stay on the host as they are: they hold text and numpy arrays only, and Lightning's default
        would deep-copy them and refuse the frozen dataclasses. Tensors are built on the module's device."""
        return batch

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = [p for p in self.parameters() if p.requires_grad]
        if not params:
            raise ValueError("GRPOPolicyModule: the policy has no trainable parameters")
        return torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)

    def training_step(
        self, batch: GroupBatch | Sequence[GroupBatch], batch_idx: int = 0
    ) -> dict[str, object]:
        """One GRPO step on ``batch``; returns ``loss`` (absent when no group was kept) and ``reward_masses``,
        the batch's Σ|component| per reward component (:func:`memprm.credit.reward_masses`, this rank's
        rollouts), which callbacks read as ``outputs`` instead of weighing the rewards again.

        Steps: (1) :func:`prepare_batch`; (2) ``cfg.ppo_epochs`` passes over the kept samples, each cut into
        shuffled mini-batches of ``cfg.minibatch_size`` (0 = one; the order from torch's global generator,
        which ``seed_everything`` seeds), one AdamW step per mini-batch on ``policy_loss``, gradients clipped
        to ``cfg.max_grad_norm``. When every group is skipped no optimizer step is taken (still logged).

        Logged per step (``batch_size`` = the number of groups): :meth:`PreparedBatch.metrics` plus
        ``grpo/loss``, ``grpo/clip_frac``, ``grpo/entropy`` and, when β > 0, ``grpo/kl`` (means over every
        mini-batch of every PPO epoch, weighted by size; absent on a step with no kept group). Under DDP each
        value is the mean over the ranks whose batch carries the key (:func:`mean_over_ranks`: one
        ``all_gather_object`` of the whole dict, since ranks can carry different keys and a per-key
        ``sync_dist`` reduce would then deadlock)."""
        groups = [batch] if isinstance(batch, GroupBatch) else list(batch)
        self.policy.eval()
        scored_here = self.reference is not None and self.cfg.beta_kl > 0
        prepared = prepare_batch(groups, self.shaping_lambda, self.cfg, check_reference=not scored_here)
        if scored_here:  # only the kept samples: a skipped group's never enter the loss
            prepared = dataclasses.replace(prepared, ref_logp=self._reference_logprobs(prepared.samples))
        metrics = prepared.metrics(self.shaping_lambda)
        out: dict[str, object] = {"reward_masses": reward_masses(prepared.breakdowns)}
        n_all = self._samples_on_all_ranks(len(prepared.samples))
        if prepared.samples:
            update = self._update(prepared)
            metrics.update(update)
            out["loss"] = torch.tensor(update["grpo/loss"])
        elif n_all:
            self._sync_only_update()
        for name, value in self._mean_over_ranks(metrics).items():
            self.log(name, float(value), on_step=True, on_epoch=False, batch_size=len(groups))
        return out

    @torch.no_grad()
    def _reference_logprobs(self, samples: Sequence[GateSample]) -> np.ndarray:
        """[N] float64: each sample's log-prob under :attr:`reference` (one batched pass; the current weights
        are put back after it)."""
        if not samples:
            return np.zeros(0)
        current = trainable_state(self.policy, list(self.reference))
        load_trainable_state(self.policy, self.reference)
        try:
            return self.policy.log_probs(list(samples))[0].detach().cpu().double().numpy()
        finally:
            load_trainable_state(self.policy, current)

    def _mean_over_ranks(self, metrics: dict[str, float]) -> dict[str, float]:
        trainer = self._trainer
        if trainer is None or trainer.world_size == 1 or not torch.distributed.is_initialized():
            return metrics
        gathered: list[dict[str, float] | None] = [None] * torch.distributed.get_world_size()
        torch.distributed.all_gather_object(gathered, metrics)
        return mean_over_ranks([g or {} for g in gathered])

    def _samples_on_all_ranks(self, n_local: int) -> int:
        """Kept gate samples summed over ranks (``n_local`` without DDP). Under DDP every rank must take the
        same optimizer steps, so mini-batching (rank-dependent step counts) is refused there."""
        trainer = self._trainer
        if trainer is None or trainer.world_size == 1:
            return n_local
        if self.cfg.minibatch_size != 0:
            raise ValueError("grpo.minibatch_size must be 0 under DDP: ranks must take equal optimizer steps")
        total = trainer.strategy.reduce(torch.tensor(float(n_local), device=self.device), reduce_op="sum")
        return int(total.item())

    def _sync_only_update(self) -> None:
        """A rank with no kept sample while others have some: zero-gradient backward passes, so the gradient
        all-reduce (the average over ranks) still happens and every rank applies the same update."""
        opt = self.optimizers()
        params = [p for p in self.policy.parameters() if p.requires_grad]
        for _ in range(self.cfg.ppo_epochs):
            opt.zero_grad(set_to_none=True)
            self.manual_backward(sum((p * 0.0).sum() for p in params))
            if self.cfg.max_grad_norm > 0:
                self.clip_gradients(
                    opt, gradient_clip_val=self.cfg.max_grad_norm, gradient_clip_algorithm="norm"
                )
            opt.step()

    def _update(self, prepared: PreparedBatch) -> dict[str, float]:
        """The PPO epochs over ``prepared``'s samples; returns the loss-side metrics (size-weighted means)."""
        cfg = self.cfg
        opt = self.optimizers()
        device = self.device
        n = len(prepared.samples)
        as_tensor = lambda a: torch.as_tensor(a, dtype=torch.float32, device=device)  # noqa: E731
        adv, old, ref = (
            as_tensor(prepared.advantages),
            as_tensor(prepared.old_logp),
            as_tensor(prepared.ref_logp),
        )
        size = n if cfg.minibatch_size == 0 else min(cfg.minibatch_size, n)
        sums = {"grpo/loss": 0.0, "grpo/clip_frac": 0.0, "grpo/entropy": 0.0, "grpo/kl": 0.0}
        seen = 0
        for _ in range(cfg.ppo_epochs):
            order = torch.arange(n) if size == n else torch.randperm(n)
            for start in range(0, n, size):
                idx = order[start : start + size]
                logp, entropy = self.policy.log_probs([prepared.samples[int(i)] for i in idx])  # [B], [B]
                idx = idx.to(device)
                terms = policy_loss(
                    logp,
                    old[idx],
                    ref[idx],
                    adv[idx],
                    eps_low=cfg.eps_low,
                    eps_high=cfg.eps_high,
                    beta=cfg.beta_kl,
                )
                opt.zero_grad(set_to_none=True)
                self.manual_backward(terms.loss)
                if cfg.max_grad_norm > 0:
                    self.clip_gradients(
                        opt, gradient_clip_val=cfg.max_grad_norm, gradient_clip_algorithm="norm"
                    )
                opt.step()
                b = len(idx)
                seen += b
                sums["grpo/loss"] += b * float(terms.loss.detach())
                sums["grpo/clip_frac"] += b * float(terms.clip_frac)
                sums["grpo/entropy"] += b * float(entropy.detach().mean())
                sums["grpo/kl"] += b * float(terms.kl.detach())
        out = {k: v / seen for k, v in sums.items()}
        if cfg.beta_kl == 0:
            del out["grpo/kl"]
        return out
