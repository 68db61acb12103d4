"""Anchored retraining of the frozen critic on online-labeled operations, and the handle rollouts score with.

- :class:`CriticHandle`: a mutable holder of the critic the rollouts use. The rollout runner is given
  ``handle.score``, so replacing ``handle.critic`` changes what every later rollout is scored with.
- :func:`refresh_critic`: a few epochs of Eq. (5) (:func:`memprm.models.critic_losses.critic_loss`, with the
  critic's own λ_aux, λ_rank, margin and δ) on a replay buffer, plus ``λ_anchor · MSE(φ(anchor),
  φ_offline(anchor))`` that keeps the scores of a fixed anchor set close to the offline snapshot's. It trains
  a deep copy: the given critic is untouched, so rolling back is keeping the old object.

Choices, documented once:

- What trains is what trained offline: the LoRA weights (parameter names containing ``lora_``) and the two
  heads; the base weights stay frozen. :func:`trainable_state` / :func:`with_trainable_state` move exactly
  those tensors (a few MB), so a refreshed critic can be stored in a training checkpoint.
- Each optimizer step takes one replay batch (a seeded permutation per epoch) and the next
  ``min(batch_size, A)`` anchor texts of a seeded permutation of the A anchor texts, cycling. The net is in
  train mode (dropout on), as in offline training; the dropout draws come from torch's RNG seeded with
  ``cfg.seed`` inside a fork, so the run is deterministic and the global RNG is left as it was.
- Texts are encoded as the critic scores them (``critic.cfg.max_length``, ``truncation_side``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from memprm.models.critic_config import CriticRefreshConfig
from memprm.models.critic_data import CriticExample
from memprm.models.backbone import encode_texts, pad_right
from memprm.models.critic import CriticNet, FrozenCritic
from memprm.models.critic_losses import critic_loss

__all__ = ["CriticHandle", "CriticRefreshConfig", "refresh_critic", "trainable_state", "with_trainable_state"]
_HEADS = ("phi_head.", "p_head.")


class CriticHandle:
    """The critic the rollouts currently use; ``score(texts)`` is its φ ``[N]`` (float32, in [0, 1])."""

    def __init__(self, critic: FrozenCritic):
        self.critic = critic

    def score(self, texts: list[str]) -> np.ndarray:
        return self.critic.score(list(texts))[0]


def _trainable_names(net: CriticNet) -> list[str]:
    names = [n for n, _ in net.named_parameters() if "lora_" in n or n.startswith(_HEADS)]
    if not any("lora_" in n for n in names):
        raise ValueError(
            "critic refresh: the critic net has no LoRA parameters (not built by build_backbone?)"
        )
    return names


def trainable_state(critic: FrozenCritic) -> dict[str, torch.Tensor]:
    """The LoRA and head tensors of ``critic`` (CPU copies), by parameter name."""
    params = dict(critic.net.named_parameters())
    return {n: params[n].detach().cpu().clone() for n in _trainable_names(critic.net)}


def with_trainable_state(critic: FrozenCritic, state: dict[str, torch.Tensor]) -> FrozenCritic:
    """A new critic: a deep copy of ``critic`` with its LoRA and head tensors replaced by ``state``."""
    net = copy.deepcopy(critic.net)
    params = dict(net.named_parameters())
    expected = set(_trainable_names(net))
    if set(state) != expected:
        extra, missing = sorted(set(state) - expected), sorted(expected - set(state))
        raise ValueError(
            f"critic refresh state: unexpected tensors {extra[:3]}, missing tensors {missing[:3]}"
        )
    with torch.no_grad():
        for name, value in state.items():
            if params[name].shape != value.shape:
                raise ValueError(
                    f"critic refresh state: tensor {name!r} has shape {tuple(value.shape)}, the critic's is "
                    f"{tuple(params[name].shape)}"
                )
            params[name].copy_(value)
    return FrozenCritic(critic.cfg, net)


def refresh_critic(
    critic: FrozenCritic,
    replay: Sequence[CriticExample],
    anchor_texts: Sequence[str],
    anchor_scores: np.ndarray,
    cfg: CriticRefreshConfig,
) -> FrozenCritic:
    """A new critic retrained on ``replay`` with the anchoring term (module doc); ``critic`` is untouched.

    ``anchor_scores`` ``[A]`` is the offline snapshot's φ on ``anchor_texts``; with ``cfg.lambda_anchor > 0``
    the anchor set must not be empty.
    """
    if not replay:
        raise ValueError("refresh_critic: the replay buffer is empty")
    target = np.asarray(anchor_scores, dtype=np.float64)
    if target.shape != (len(anchor_texts),):
        raise ValueError(
            f"refresh_critic: anchor_scores has shape {target.shape}, expected ({len(anchor_texts)},) "
            "(one offline score per anchor text)"
        )
    if not (np.all(np.isfinite(target)) and np.all((target >= 0) & (target <= 1))):
        raise ValueError("refresh_critic: anchor_scores must be finite scores in [0, 1]")
    if cfg.lambda_anchor > 0 and not anchor_texts:
        raise ValueError("refresh_critic: lambda_anchor > 0 but the anchor set is empty")
    c = critic.cfg
    net = copy.deepcopy(critic.net)
    params = dict(net.named_parameters())
    trainable = [params[n] for n in _trainable_names(net)]
    for p in trainable:
        p.requires_grad_(True)
    device = critic.device
    tok = critic.tokenizer
    enc = encode_texts(tok, [e.text for e in replay], c.max_length, c.truncation_side).ids
    anchors = encode_texts(tok, list(anchor_texts), c.max_length, c.truncation_side).ids
    u = torch.tensor([e.u for e in replay], dtype=torch.float32)  # [N]
    u_rr = torch.tensor([float(e.u_rr) for e in replay], dtype=torch.float32)  # [N]
    phi_anchor = torch.tensor(target, dtype=torch.float32)  # [A]
    rng = np.random.default_rng(cfg.seed)
    anchor_order = rng.permutation(len(anchors)) if anchors else np.zeros(0, dtype=np.int64)
    anchor_pos = 0
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=c.weight_decay)
    cuda = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(cfg.seed)
        net.train()
        for _ in range(cfg.epochs):
            order = rng.permutation(len(replay))
            for start in range(0, len(replay), cfg.batch_size):
                idx = torch.as_tensor(order[start : start + cfg.batch_size])
                ids, mask = pad_right([enc[int(i)] for i in idx], tok.pad_token_id)  # [B, L]
                phi_logit, p_logit = net(ids.to(device), mask.to(device))  # [B], [B]
                loss = critic_loss(
                    phi_logit, p_logit, u[idx].to(device), u_rr[idx].to(device),
                    c.lambda_aux, c.lambda_rank, c.margin, c.delta,
                ).total  # fmt: skip
                if cfg.lambda_anchor > 0:
                    n_take = min(cfg.batch_size, len(anchors))
                    take = [int(anchor_order[(anchor_pos + j) % len(anchors)]) for j in range(n_take)]
                    anchor_pos = (anchor_pos + n_take) % len(anchors)
                    a_ids, a_mask = pad_right([anchors[i] for i in take], tok.pad_token_id)  # [A_b, L]
                    a_logit, _ = net(a_ids.to(device), a_mask.to(device))  # [A_b]
                    anchored = F.mse_loss(torch.sigmoid(a_logit), phi_anchor[take].to(device))
                    loss = loss + cfg.lambda_anchor * anchored
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
    return FrozenCritic(c, net)
