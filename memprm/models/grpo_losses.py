"""GRPO's loss maths as pure torch functions (one value per gate sample; no Lightning).

- :func:`clipped_surrogate`: PPO's clipped objective (Schulman et al., 2017) with a possibly asymmetric clip
  range, ``loss = −mean_i min(r_i·A_i, clip(r_i, 1 − ε_low, 1 + ε_high)·A_i)``, ``r_i = exp(logp_i − old_i)``.
  The mean is over gate samples: a sample is one operation, whatever the number of tokens it took.
  ``clip_frac`` is the fraction of samples whose gradient the clip removes, i.e. where the clipped term is
  the strictly smaller one: ``A > 0`` and ``r > 1 + ε_high``, or ``A < 0`` and ``r < 1 − ε_low``.
- :func:`kl_k3`: Schulman's k3 estimator of KL(π_θ ‖ π_ref) from samples of π_θ,
  ``exp(ref − logp) − (ref − logp) − 1``: unbiased, never negative, and 0 exactly where the log-probs agree.
- :func:`policy_loss`: the surrogate plus ``β·mean(k3)``, with its parts for logging.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _check(fn: str, **tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    first = next(iter(shapes.values()))
    if len(first) != 1 or first[0] == 0 or any(s != first for s in shapes.values()):
        raise ValueError(f"{fn}: needs non-empty 1-D tensors of one shape [N], got {shapes}")


def clipped_surrogate(
    logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, eps_low: float, eps_high: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """logp [N] (with grad), old_logp [N], adv [N] → (loss scalar, clip_frac scalar, no grad).

    >>> loss, frac = clipped_surrogate(torch.log(torch.tensor([1.5, 0.5])), torch.zeros(2),
    ...                                torch.tensor([1.0, -1.0]), 0.2, 0.2)
    >>> round(float(loss), 6), float(frac)   # −(min(1.5, 1.2) + min(−0.5, −0.8)) / 2
    (-0.2, 1.0)
    """
    _check("clipped_surrogate", logp=logp, old_logp=old_logp, adv=adv)
    if not (0 < eps_low < 1 and eps_high > 0):
        raise ValueError(
            f"clipped_surrogate: needs 0 < eps_low < 1 and eps_high > 0, got {eps_low}, {eps_high}"
        )
    old_logp, adv = old_logp.detach(), adv.detach()
    ratio = torch.exp(logp - old_logp)  # [N]
    unclipped = ratio * adv  # [N]
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv  # [N]
    loss = -torch.minimum(unclipped, clipped).mean()
    clip_frac = (clipped < unclipped).float().mean().detach()
    return loss, clip_frac


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """logp [N] (with grad), ref_logp [N] → k3 [N] ≥ 0.

    >>> [round(v, 6) for v in kl_k3(torch.tensor([-1.0, -2.0]), torch.tensor([-1.0, -1.0])).tolist()]
    [0.0, 0.718282]
    """
    _check("kl_k3", logp=logp, ref_logp=ref_logp)
    d = ref_logp.detach() - logp  # [N] log(π_ref / π_θ)
    return torch.exp(d) - d - 1.0


@dataclass(frozen=True)
class PolicyLoss:
    #: the minimized scalar: ``surrogate + β·kl``.
    loss: torch.Tensor
    #: the clipped surrogate (scalar).
    surrogate: torch.Tensor
    #: mean k3 over the samples (scalar; computed only when β > 0, else 0 without gradient).
    kl: torch.Tensor
    #: fraction of samples clipped (scalar, no grad).
    clip_frac: torch.Tensor


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    adv: torch.Tensor,
    *,
    eps_low: float,
    eps_high: float,
    beta: float,
) -> PolicyLoss:
    """logp [N] (with grad), old_logp [N], ref_logp [N], adv [N] → the GRPO objective and its parts.

    With β = 0 ``ref_logp`` is not read (rollouts without a reference policy leave it at 0.0).
    """
    if not beta >= 0:
        raise ValueError(f"policy_loss: beta must be >= 0, got {beta}")
    surrogate, clip_frac = clipped_surrogate(logp, old_logp, adv, eps_low, eps_high)
    if beta > 0:
        kl = kl_k3(logp, ref_logp).mean()
        loss = surrogate + beta * kl
    else:
        kl = torch.zeros((), device=logp.device)
        loss = surrogate
    return PolicyLoss(loss=loss, surrogate=surrogate, kl=kl, clip_frac=clip_frac)
