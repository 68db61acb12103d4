"""The critic refresh as a Lightning fit: the module's anchoring term by hand, the global RNG left alone, and
a refresh run inside another trainer's callback (as :class:`memprm.callbacks.CriticRefresh` runs it).

The critic is a random 2-layer BERT (hidden 32) on MiniLM's tokenizer, with dropout on (LoRA's and BERT's).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from helpers.tiny_models import tiny_bert_config, tiny_frozen_critic
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader

from memprm.models.backbone import encode_texts, pad_right
from memprm.models.critic import AnchorSet, CriticModule, FrozenCritic
from memprm.models.critic_config import CriticRefreshConfig
from memprm.models.critic_data import CriticBatch, CriticExample
from memprm.models.critic_retrain import refresh_critic

pytestmark = pytest.mark.usefixtures("one_thread")

ANCHORS = [
    "turn: Biscuit is three | op: merge pet Biscuit is three",
    "turn: hi | op: noop",
    "turn: Ana works at the museum | op: write job museum",
    "turn: bye | op: write chat bye",
]
REPLAY = [
    CriticExample(
        f"turn: note {i} | op: write fact {'x ' * i}", float(i % 2), i % 2, "d1", "online", f"op{i}"
    )
    for i in range(7)
]
CFG = CriticRefreshConfig(lr=1e-2, epochs=2, batch_size=3, lambda_anchor=1.0, seed=4)


@pytest.fixture(scope="module")
def critic() -> FrozenCritic:
    return tiny_frozen_critic(lora_dropout=0.1)


def _weights(critic: FrozenCritic) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in critic.net.named_parameters()}


def _anchored_module(critic: FrozenCritic) -> CriticModule:
    """φ = sigmoid(0) = 0.5 on every text (zero φ head); targets 1.0, 0.75, 0.0, 0.5 by anchor."""
    ids = encode_texts(critic.tokenizer, ANCHORS, 32, "left").ids
    targets = torch.tensor([0.0, 0.75, 0.5, 1.0])
    anchor = AnchorSet(ids, targets, weight=2.0, per_step=3, order=(3, 1, 0, 2))
    module = CriticModule(critic.cfg, net=copy.deepcopy(critic.net), anchor=anchor)
    with torch.no_grad():
        module.net.phi_head.weight.zero_()
        module.net.phi_head.bias.zero_()
    return module


def test_anchor_term_by_hand(critic):
    module = _anchored_module(critic)
    # step 0 takes positions 0-2 of the order: anchors 3, 1, 0 (targets 1.0, 0.75, 0.0); squared errors
    # 0.25, 0.0625, 0.25. Step 1 takes positions 3, 0, 1: anchors 2, 3, 1 (0, 0.25, 0.0625). Step 2: 0, 2, 3.
    assert [module.anchor.take(k) for k in range(3)] == [[3, 1, 0], [2, 3, 1], [0, 2, 3]]
    expected = [(0.25 + 0.0625 + 0.25) / 3, (0.0 + 0.25 + 0.0625) / 3, (0.25 + 0.0 + 0.25) / 3]
    got = [float(module.anchor_loss(k).detach()) for k in range(3)]
    assert got == pytest.approx(expected, abs=1e-7)
    # The net trains exactly what trained offline; the critic it was copied from stays frozen.
    trains = {n for n, p in module.net.named_parameters() if p.requires_grad}
    assert trains == set(critic.net.trainable_names()) and module.net.training
    assert not any(p.requires_grad for p in critic.net.parameters()) and not critic.net.training


def test_training_step_adds_the_weighted_anchor_term_and_logs_it(critic):
    module = _anchored_module(critic).eval()  # eval: no dropout, so the two computations agree exactly
    ids, mask = pad_right(
        encode_texts(critic.tokenizer, ANCHORS[:2], 32, "left").ids, critic.tokenizer.pad_token_id
    )
    batch = CriticBatch(ids, mask, torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]), torch.arange(2))
    with pytest.warns(UserWarning, match="self.log"):  # no trainer attached: logging is skipped
        loss = module.training_step(batch, 0)
    assert torch.allclose(loss, module.losses(batch)[0].total + 2.0 * module.anchor_loss(0))
    trainer = Trainer(max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(_anchored_module(critic), DataLoader([batch], batch_size=None))
    assert {"train/loss", "train/anchor"} <= set(trainer.callback_metrics)


def test_anchor_set_rejects_inconsistent_fields(critic):
    ids = encode_texts(critic.tokenizer, ANCHORS, 32, "left").ids
    with pytest.raises(ValueError, match="permutation of range"):
        AnchorSet(ids, torch.zeros(4), 1.0, 2, (0, 1, 1, 2))
    with pytest.raises(ValueError, match="phi of shape"):
        AnchorSet(ids, torch.zeros(3), 1.0, 2, (0, 1, 2, 3))
    with pytest.raises(ValueError, match="per_step <= 4"):
        AnchorSet(ids, torch.zeros(4), 1.0, 5, (0, 1, 2, 3))
    with pytest.raises(ValueError, match="not both"):
        CriticModule(critic.cfg, model=tiny_bert_config(critic.tokenizer), net=copy.deepcopy(critic.net))


def test_refresh_leaves_the_global_rng_and_the_critic_as_they_were(critic):
    before = _weights(critic)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    new = refresh_critic(critic, REPLAY, ANCHORS, critic.score(ANCHORS)[0], CFG)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(p, before[n]) for n, p in critic.net.named_parameters())
    assert new.device == critic.device and new.cfg == critic.cfg  # the critic's own lr, not the refresh's
    moved = [n for n, p in new.net.named_parameters() if not torch.equal(p, before[n])]
    assert set(moved) == set(critic.net.trainable_names())  # LoRA and heads trained, the base did not


class _Outer(LightningModule):
    """A linear model trained by the outer trainer; records its train mode at each step."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.modes: list[bool] = []

    def training_step(self, batch, batch_idx):
        self.modes.append(self.training)
        return (self.lin(batch) ** 2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class _RefreshEveryBatch(Callback):
    def __init__(self, critic: FrozenCritic):
        self.critic, self.refreshed = critic, []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        offline = self.critic.score(ANCHORS)[0]
        device = trainer.strategy.root_device
        self.refreshed.append(refresh_critic(self.critic, REPLAY, ANCHORS, offline, CFG, device=device))


def test_refresh_inside_another_trainers_callback(critic):
    outer, callback = _Outer(), _RefreshEveryBatch(critic)
    start = outer.lin.weight.detach().clone()
    trainer = Trainer(max_steps=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(0)
        data = list(torch.randn(3, 4, 2))
    trainer.fit(outer, DataLoader(data, batch_size=None))
    assert trainer.global_step == 3 and outer.modes == [True] * 3  # the outer fit went on, in train mode
    assert not torch.equal(outer.lin.weight, start) and trainer.lightning_module is outer
    alone = _weights(refresh_critic(critic, REPLAY, ANCHORS, critic.score(ANCHORS)[0], CFG))
    assert len(callback.refreshed) == 3
    for new in callback.refreshed:  # nesting changes nothing: the same weights as a refresh on its own
        assert all(torch.equal(p, alone[n]) for n, p in new.net.named_parameters())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_refresh_on_cuda_returns_a_critic_where_the_given_one_lives(critic):
    offline = critic.score(ANCHORS)[0]
    cuda_state = torch.cuda.get_rng_state()
    first = refresh_critic(critic, REPLAY, ANCHORS, offline, CFG, device="cuda")
    again = refresh_critic(critic, REPLAY, ANCHORS, offline, CFG, device="cuda")
    assert torch.equal(torch.cuda.get_rng_state(), cuda_state)
    assert first.device == critic.device
    assert all(torch.equal(p, q) for p, q in zip(first.net.parameters(), again.net.parameters(), strict=True))
    assert np.all(np.isfinite(first.score(ANCHORS)[0]))
