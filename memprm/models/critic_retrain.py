"""Anchored retraining of the frozen critic on online-labeled operations, and the handle rollouts score with.

- :class:`CriticHandle`: a mutable holder of the critic the rollouts use. The rollout runner is given
  ``handle.score``, so replacing ``handle.critic`` changes what every later rollout is scored with.
- :func:`refresh_critic`: a :class:`~memprm.models.critic.CriticModule` fitted by a Lightning ``Trainer`` on a
  replay buffer, with Eq. (5) plus an anchoring term that keeps the φ of a fixed anchor set close to the
  offline snapshot's. It trains a deep copy: the given critic is untouched, so rolling back is keeping the
  old object.
- :func:`with_trainable_state`: a critic with given LoRA and head tensors (a refreshed critic stored in a
  training checkpoint as :func:`memprm.models.trainable.trainable_state` of its ``net.trainable_names()``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import torch
from lightning.pytorch import Trainer
from torch.utils.data import DataLoader, Sampler

from memprm.models.backbone import encode_texts
from memprm.models.critic import AnchorSet, CriticModule, FrozenCritic
from memprm.models.critic_config import CriticRefreshConfig
from memprm.models.critic_data import CriticExample, PadCollate, TokenizedSplit
from memprm.models.trainable import load_trainable_state

__all__ = ["CriticHandle", "CriticRefreshConfig", "refresh_critic", "with_trainable_state"]


class CriticHandle:
    """The critic the rollouts currently use; ``score(texts)`` is its φ ``[N]`` (float32, in [0, 1])."""

    def __init__(self, critic: FrozenCritic):
        self.critic = critic

    def score(self, texts: list[str]) -> np.ndarray:
        return self.critic.score(list(texts))[0]


def with_trainable_state(critic: FrozenCritic, state: dict[str, torch.Tensor]) -> FrozenCritic:
    """A new critic: a deep copy of ``critic`` with its LoRA and head tensors replaced by ``state``, which must
    hold exactly the tensors of ``critic.net.trainable_names()``."""
    net = copy.deepcopy(critic.net)
    expected = set(net.trainable_names())
    if set(state) != expected:
        extra, missing = sorted(set(state) - expected), sorted(expected - set(state))
        raise ValueError(
            f"critic refresh state: unexpected tensors {extra[:3]}, missing tensors {missing[:3]}"
        )
    load_trainable_state(net, state, where="critic refresh state")
    return FrozenCritic(critic.cfg, net)


def refresh_critic(
    critic: FrozenCritic,
    replay: Sequence[CriticExample],
    anchor_texts: Sequence[str],
    anchor_scores: np.ndarray,
    cfg: CriticRefreshConfig,
    device: torch.device | str | None = None,
) -> FrozenCritic:
    """A new critic retrained on ``replay`` with the anchoring term; ``critic`` is untouched.

    ``anchor_scores`` ``[A]`` is the offline snapshot's φ on ``anchor_texts``; with ``cfg.lambda_anchor > 0``
    the anchor set must not be empty. A single-device ``Trainer`` (on ``device``, the outer trainer's; by
    default the critic's own) fits a :class:`CriticModule` around a deep copy of ``critic.net``, for
    ``cfg.epochs`` epochs; the new critic lives on the critic's device.

    - What trains is what trained offline (``net.trainable_names()``: LoRA and heads), with AdamW at ``cfg.lr``
      and the critic's own weight decay, λ_aux, λ_rank, margin and δ (``critic.cfg``).
    - ``np.random.default_rng(cfg.seed)`` draws a permutation of the A anchors, then one of the replay per
      epoch. Each optimizer step takes the next ``batch_size`` replay examples and the next
      ``min(batch_size, A)`` anchors, cycling (:class:`AnchorSet`); λ_anchor = 0 runs no anchor forward.
    - The net is in train mode (dropout on), as offline; the dropout draws come from torch's generator of
      ``device`` seeded with ``cfg.seed`` inside a fork, so the run is deterministic and the global RNG is
      left as it was (``torch.manual_seed`` would also seed every CUDA device, lazily: after the fork).
    - Texts are encoded as the critic scores them (``critic.cfg.max_length``, ``truncation_side``).
    """
    target = _check_inputs(replay, anchor_texts, anchor_scores, cfg)  # [A]
    c = critic.cfg
    rng = np.random.default_rng(cfg.seed)
    anchor_order = rng.permutation(len(anchor_texts)) if anchor_texts else np.zeros(0, dtype=np.int64)
    epoch_orders = [rng.permutation(len(replay)) for _ in range(cfg.epochs)]
    anchor = None
    if cfg.lambda_anchor > 0:
        ids = encode_texts(critic.tokenizer, list(anchor_texts), c.max_length, c.truncation_side).ids
        phi = torch.tensor(target, dtype=torch.float32)
        per_step = min(cfg.batch_size, len(ids))
        anchor = AnchorSet(ids, phi, cfg.lambda_anchor, per_step, tuple(anchor_order.tolist()))
    loader = _replay_loader(critic, replay, epoch_orders, cfg.batch_size)
    device = critic.device if device is None else torch.device(device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []), _quiet_lightning():
        module = CriticModule(replace(c, lr=cfg.lr), net=copy.deepcopy(critic.net), anchor=anchor)
        trainer = Trainer(
            accelerator=device.type,
            devices=1 if device.index is None else [device.index],
            max_epochs=cfg.epochs,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
        )
        torch.default_generator.manual_seed(cfg.seed)  # seed only the generator the dropout draws from
        if device.type == "cuda":
            with torch.cuda.device(device):
                torch.cuda.manual_seed(cfg.seed)
        trainer.fit(module, train_dataloaders=loader)
    return FrozenCritic(c, module.net).to(critic.device)  # the trainer's teardown left the net on the CPU


def _check_inputs(
    replay: Sequence[CriticExample],
    anchor_texts: Sequence[str],
    anchor_scores: np.ndarray,
    cfg: CriticRefreshConfig,
) -> np.ndarray:
    """``anchor_scores`` as float64 ``[A]``, after checking the inputs of :func:`refresh_critic`."""
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
    return target


class _EpochOrders(Sampler[int]):
    """Epoch e yields ``orders[e]``. Lightning calls ``set_epoch`` before each epoch; without it each pass
    over the sampler moves to the next epoch."""

    def __init__(self, orders: list[np.ndarray]):
        self.orders = [o.tolist() for o in orders]
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        order = self.orders[self.epoch]
        self.epoch += 1
        return iter(order)

    def __len__(self) -> int:
        return len(self.orders[0])


def _replay_loader(
    critic: FrozenCritic, replay: Sequence[CriticExample], orders: list[np.ndarray], batch_size: int
) -> DataLoader:
    """Padded :class:`CriticBatch` es of ``replay``: epoch e cut into consecutive ``batch_size`` chunks of
    ``orders[e]``. The loader has its own generator: starting an epoch draws a base seed from it, which
    would otherwise come from the global RNG and shift the dropout draws."""
    c = critic.cfg
    ids = encode_texts(critic.tokenizer, [e.text for e in replay], c.max_length, c.truncation_side).ids
    split = TokenizedSplit(
        examples=tuple(replay),
        input_ids=ids,
        u=torch.tensor([e.u for e in replay], dtype=torch.float32),
        u_rr=torch.tensor([float(e.u_rr) for e in replay], dtype=torch.float32),
    )
    return DataLoader(
        range(len(replay)),
        batch_size=batch_size,
        sampler=_EpochOrders(orders),
        collate_fn=PadCollate(split, critic.tokenizer.pad_token_id),
        generator=torch.Generator(),
    )


@contextlib.contextmanager
def _quiet_lightning() -> Iterator[None]:
    """Silence the inner fit's start-up lines and its warnings about a set-up that is meant (one process, no
    loader workers, no validation). A refresh runs every N steps of the outer training, whose output they
    would clutter; and leaving ``catch_warnings`` resets Python's shown-once memory, so a warning let
    through here would be printed again at every refresh."""
    lightning_log = logging.getLogger("lightning.pytorch")
    level = lightning_log.level
    lightning_log.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*does not have many workers")
            warnings.filterwarnings("ignore", message=r".*`validation_step` but have no `val_dataloader`")
            warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)` is deprecated")
            yield
    finally:
        lightning_log.setLevel(level)
