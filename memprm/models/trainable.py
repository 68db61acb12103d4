"""The trainable part of a model as a plain ``{name: tensor}`` dict: snapshots, weight files, rollback.

Fit, dev selection, SFT and the critic refresh keep and restore only what trains (LoRA and heads; every
weight of a model trained in full): a few MB instead of the frozen base.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from torch import nn

from memprm.atomic import atomic_torch_save


def trainable_state(module: nn.Module, names: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """CPU copies of ``module``'s parameters that require grad, by name (or of exactly ``names``).

    >>> m = nn.Linear(2, 1); m.bias.requires_grad_(False)  # doctest: +ELLIPSIS
    Parameter...
    >>> sorted(trainable_state(m))
    ['weight']
    """
    params = dict(module.named_parameters())
    if names is None:
        names = [n for n, p in params.items() if p.requires_grad]
    unknown = sorted(set(names) - set(params))
    if unknown:
        raise ValueError(f"trainable_state: {type(module).__name__} has no parameters {unknown[:3]}")
    return {n: params[n].detach().cpu().clone() for n in names}


def load_trainable_state(module: nn.Module, state: Mapping[str, torch.Tensor], *, where: str = "") -> None:
    """Copy ``state`` into ``module``'s parameters of the same names, in place (no grad).

    Every name must be a parameter of ``module`` with the same shape; the error names ``where`` (a file).

    >>> a, b = nn.Linear(2, 1), nn.Linear(2, 1)
    >>> load_trainable_state(b, trainable_state(a)); bool(torch.equal(a.weight, b.weight))
    True
    """
    own = dict(module.named_parameters())
    prefix = f"{where}: " if where else ""
    unknown = sorted(set(state) - set(own))
    if unknown:
        raise ValueError(
            f"{prefix}parameters {unknown[:3]} are not in this {type(module).__name__} (another model?)"
        )
    for name, value in state.items():
        if tuple(own[name].shape) != tuple(value.shape):
            raise ValueError(
                f"{prefix}tensor {name!r} has shape {tuple(value.shape)}, the model's is {tuple(own[name].shape)}"
            )
    with torch.no_grad():
        for name, value in state.items():
            own[name].copy_(value)


def save_trainable(module: nn.Module, path: Path) -> Path:
    """``module``'s :func:`trainable_state` written to ``path`` (atomically): small, and enough to restore it."""
    return atomic_torch_save(trainable_state(module), path)


def load_trainable(module: nn.Module, path: Path) -> None:
    """Load a file of :func:`save_trainable` into ``module`` (in place); errors name the file."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    load_trainable_state(module, state, where=str(path))


#: a fit run's policy files: SFT's, dev selection's pick, and where GRPO ended.
RUN_POLICY_FILES = {"sft": "policy_sft.pt", "selected": "policy_grpo.pt", "last": "grpo/last_policy.pt"}
#: where GRPO ended for runs from before ``last_policy.pt`` existed: the newest resume checkpoint (at the final
#: step when ``grpo.checkpoint_every`` divides it)
LEGACY_LAST = "grpo/checkpoints/last.ckpt"


def run_policy_state(run: Path, which: str) -> dict[str, torch.Tensor]:
    """The trainable state of run folder ``run``'s ``which`` policy (:data:`RUN_POLICY_FILES`); for ``last``
    without ``last_policy.pt``, the ``policy.`` entries of :data:`LEGACY_LAST` (prefix removed). A missing
    file or policy raises ``FileNotFoundError`` / ``ValueError`` naming the file."""
    if which not in RUN_POLICY_FILES:
        raise ValueError(f"run_policy_state: which must be one of {sorted(RUN_POLICY_FILES)}, got {which!r}")
    path = Path(run) / RUN_POLICY_FILES[which]
    if which == "last" and not path.is_file() and (Path(run) / LEGACY_LAST).is_file():
        path = Path(run) / LEGACY_LAST
        state = torch.load(path, map_location="cpu", weights_only=False).get("state_dict", {})
        out = {k[len("policy.") :]: v for k, v in state.items() if k.startswith("policy.")}
        if not out:
            raise ValueError(f"{path} holds no 'policy.' weights (not a GRPO checkpoint?)")
        return out
    if not path.is_file():
        stage = "SFT" if which == "sft" else "GRPO"
        raise FileNotFoundError(f"{path} does not exist (did the run finish its {stage} stage?)")
    return torch.load(path, map_location="cpu", weights_only=True)
