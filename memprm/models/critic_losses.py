"""The three terms of the critic loss, Eq. (5) of the paper, as pure torch functions.

    L = MSE(φ, u) + λ_aux · BCE(p, u^RR) + λ_rank · L_rank

``φ`` and ``p`` are produced as logits by the critic's heads; the MSE term takes ``φ = sigmoid(logit)`` and the
BCE term works on the logit directly (``binary_cross_entropy_with_logits``, numerically stable). Each term is a
batch mean. The margin-rank term and its choices are on :func:`margin_rank_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

_ROUNDING = 1e-6  # slack in |u_i − u_j| ≥ δ for float rounding of the targets


@dataclass(frozen=True)
class LossTerms:
    """The total loss and its three unweighted terms (all scalars)."""

    total: torch.Tensor
    mse: torch.Tensor
    bce: torch.Tensor
    rank: torch.Tensor


def critic_loss(
    phi_logit: torch.Tensor,
    p_logit: torch.Tensor,
    u: torch.Tensor,
    u_rr: torch.Tensor,
    lambda_aux: float,
    lambda_rank: float,
    margin: float,
    delta: float,
) -> LossTerms:
    """Eq. (5): total = mse + lambda_aux · bce + lambda_rank · rank, with φ = sigmoid(phi_logit).

    phi_logit, p_logit: [B] head logits; u: [B] targets in [0, 1]; u_rr: [B] in {0, 1}.
    """
    phi = torch.sigmoid(phi_logit)  # [B]
    mse = mse_term(phi, u)
    bce = bce_term(p_logit, u_rr)
    rank = margin_rank_loss(phi, u, margin, delta)
    return LossTerms(total=mse + lambda_aux * bce + lambda_rank * rank, mse=mse, bce=bce, rank=rank)


def mse_term(phi: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Mean squared error between scores and utility targets.

    phi: [B] in [0, 1]; u: [B] in [0, 1] → scalar.
    """
    _check_same_1d(phi, u, "phi", "u")
    return F.mse_loss(phi, u.to(phi.dtype))


def bce_term(p_logit: torch.Tensor, u_rr: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the retrieval head against the retrieved indicator, from logits.

    p_logit: [B] (real); u_rr: [B] in {0, 1} → scalar.
    """
    _check_same_1d(p_logit, u_rr, "p_logit", "u_rr")
    return F.binary_cross_entropy_with_logits(p_logit, u_rr.to(p_logit.dtype))


def margin_rank_loss(phi: torch.Tensor, u: torch.Tensor, margin: float, delta: float) -> torch.Tensor:
    """Mean hinge over the unordered in-batch pairs whose targets differ by at least ``delta``.

    phi: [B] scores; u: [B] targets → scalar. 0 (with gradient) when no pair qualifies.

    Margin-rank term (appendix "Critic loss (Eq. (5))")::

        L_rank = 1/|P| · Σ_{(i,j) ∈ P} max(0, m − sign(u_i − u_j) · (φ_i − φ_j)),
        P = {(i, j) : |u_i − u_j| ≥ δ}

    Choice: P holds *unordered* pairs ``i < j``. The hinge is symmetric under swapping i and j (both the sign
    and the difference flip), so summing over ordered pairs counts every term twice and divides by twice the
    count: the mean is identical, and the unordered form is half the work. ``δ`` must be > 0, so tied targets
    never qualify (their sign is 0 and the hinge would be a constant ``m``). A pair exactly at ``δ`` counts;
    the comparison allows ``1e-6`` of float rounding, so tier targets such as 0.3 and 0.6 with ``δ = 0.3``
    qualify in float32. When no pair qualifies the term is an exact 0 that still carries a (zero) gradient,
    never NaN.
    """
    _check_same_1d(phi, u, "phi", "u")
    if delta <= 0:
        raise ValueError(f"margin_rank_loss: delta must be > 0, got {delta}")
    if margin < 0:
        raise ValueError(f"margin_rank_loss: margin must be >= 0, got {margin}")
    u = u.to(phi.dtype)
    du = u[:, None] - u[None, :]  # [B, B]  u_i − u_j
    dphi = phi[:, None] - phi[None, :]  # [B, B]  φ_i − φ_j
    upper = torch.ones_like(du, dtype=torch.bool).triu(diagonal=1)  # [B, B]  i < j
    valid = upper & (du.abs() >= delta - _ROUNDING)  # [B, B]  (i, j) ∈ P
    hinge = torch.clamp(margin - torch.sign(du) * dphi, min=0.0)  # [B, B]
    n_pairs = valid.sum()
    total = (hinge * valid).sum()
    return total / n_pairs.clamp(min=1)


def _check_same_1d(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    if a.dim() != 1 or a.shape != b.shape:
        raise ValueError(
            f"{name_a} and {name_b} must both be 1-D of equal length, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
