"""The memory-utility critic: loss terms by hand, data module, tiny Qwen3 and MiniLM backbones end to end."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from lightning.pytorch import Trainer
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoModel, PreTrainedTokenizerFast, Qwen3Config

from memprm.eval.metrics import binary_auc, spearman
from memprm.memory.embedder import resolve_model_path
from memprm.models.backbone import BackboneConfig, encode_texts, pad_right, pool
from memprm.models.critic import CriticConfig, CriticModule, load_critic, save_critic
from memprm.models.critic_data import CriticDataModule, CriticExample, EpochShuffleSampler, split_by_dialogue
from memprm.models.critic_losses import critic_loss, margin_rank_loss

# (text, u, u_rr): decision-time renderings of operations with hand-set targets.
LABELED = [
    (
        "turn: Ana adopted a beagle named Biscuit | op: write event pet Ana adopted a beagle named Biscuit",
        1.0,
        1,
    ),
    ("turn: the weather is nice today | op: write event weather the weather is nice", 0.0, 0),
    ("turn: Ana moved to Lisbon in May | op: write profile home Ana lives in Lisbon", 0.75, 1),
    ("turn: lol ok | op: noop", 0.0, 0),
    ("turn: Ana started a job at the museum | op: noop", 0.0, 0),
    ("turn: Biscuit is three years old | op: merge pet Biscuit is three years old", 0.5, 1),
    ("turn: Ana adopted a beagle named Biscuit | op: write event pet Ana has a dog", 0.25, 1),
    ("turn: thanks see you soon | op: write event chat Ana said goodbye", 0.0, 0),
]


def _examples(dialogues: tuple[str, ...] = ("d1", "d2")) -> list[CriticExample]:
    return [
        CriticExample(
            text=t, u=u, u_rr=r, dialogue_id=dialogues[i % len(dialogues)], kind="teacher", op_id=f"op{i}"
        )
        for i, (t, u, r) in enumerate(LABELED)
    ]


@pytest.fixture(scope="module")
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = [t for t, _, _ in LABELED] + ["a b c d e"]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")


def _tiny_qwen(tokenizer: PreTrainedTokenizerFast, seed: int = 0):
    cfg = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    return AutoModel.from_config(cfg)


def _trainer(max_steps: int = 1, validate: bool = False) -> Trainer:
    return Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=1.0 if validate else 0,
    )


# ---------------------------------------------------------------- margin-rank term, by hand


def test_margin_rank_brief_example_all_margins_met():
    # u=[0, .5, 1], φ=[.2, .3, .9], m=.1, δ=.5. Pairs i<j, all with |Δu| >= .5 (0–1 and 1–2 exactly at δ):
    #   (0,1): -sign·Δφ = -(-1)(.2-.3) = .1 → max(0, .1-.1) = 0   (margin exactly met)
    #   (0,2): .7 → 0;   (1,2): .6 → 0.   Mean 0.
    loss = margin_rank_loss(
        torch.tensor([0.2, 0.3, 0.9]), torch.tensor([0.0, 0.5, 1.0]), margin=0.1, delta=0.5
    )
    assert float(loss) == pytest.approx(0.0, abs=1e-6)


def test_margin_rank_hand_computed_with_violations():
    # u=[0, .5, 1], φ=[.2, .3, .25], m=.1, δ=.5:
    #   (0,1): ordered gap .1 → 0 (exactly met); (0,2): gap .05 → .05; (1,2): gap -.05 → .15. Mean .2/3.
    phi, u = torch.tensor([0.2, 0.3, 0.25]), torch.tensor([0.0, 0.5, 1.0])
    assert float(margin_rank_loss(phi, u, margin=0.1, delta=0.5)) == pytest.approx(0.2 / 3, abs=1e-6)
    # δ=.6 leaves only (0,2): .05.
    assert float(margin_rank_loss(phi, u, margin=0.1, delta=0.6)) == pytest.approx(0.05, abs=1e-6)


def test_margin_rank_excludes_pairs_below_delta():
    # u=[0, .1, 1], φ=[.5, 0, .5], m=.1, δ=.5: (0,1) has |Δu|=.1 < δ and is excluded (its hinge would be .6);
    #   (0,2): Δφ=0 → .1; (1,2): ordered gap .5 → 0. Mean over the 2 valid pairs = .05 (not (.6+.1)/3).
    loss = margin_rank_loss(
        torch.tensor([0.5, 0.0, 0.5]), torch.tensor([0.0, 0.1, 1.0]), margin=0.1, delta=0.5
    )
    assert float(loss) == pytest.approx(0.05, abs=1e-6)


def test_margin_rank_tier_gap_exactly_delta_in_float32_counts():
    # 0.6f - 0.3f is not exactly 0.3f; the pair must still count. Δφ=0 → hinge = m.
    loss = margin_rank_loss(torch.tensor([0.4, 0.4]), torch.tensor([0.3, 0.6]), margin=0.1, delta=0.3)
    assert float(loss) == pytest.approx(0.1, abs=1e-6)


@pytest.mark.parametrize("u", [[0.5, 0.5, 0.5], [0.7]])
def test_margin_rank_no_pair_is_zero_with_gradient(u):
    phi = torch.full((len(u),), 0.3, requires_grad=True)
    loss = margin_rank_loss(phi, torch.tensor(u), margin=0.1, delta=0.2)
    loss.backward()
    assert float(loss.detach()) == 0.0
    assert phi.grad is not None and torch.all(phi.grad == 0)


def test_margin_rank_matches_ordered_pair_reference_and_is_permutation_invariant():
    gen = torch.Generator().manual_seed(3)
    u = torch.tensor([0.0, 0.25, 0.25, 0.5, 0.75, 1.0, 0.0, 1.0])
    phi = torch.rand(8, generator=gen)
    m, d = 0.2, 0.25
    terms = [
        max(0.0, m - math.copysign(1, float(u[i] - u[j])) * float(phi[i] - phi[j]))
        for i, j in itertools.permutations(range(8), 2)
        if abs(float(u[i] - u[j])) >= d
    ]
    expected = sum(terms) / len(terms)
    assert float(margin_rank_loss(phi, u, m, d)) == pytest.approx(expected, abs=1e-6)
    perm = torch.randperm(8, generator=gen)
    assert float(margin_rank_loss(phi[perm], u[perm], m, d)) == pytest.approx(expected, abs=1e-6)


def test_margin_rank_rejects_bad_arguments():
    with pytest.raises(ValueError, match="delta"):
        margin_rank_loss(torch.zeros(2), torch.zeros(2), margin=0.1, delta=0.0)
    with pytest.raises(ValueError, match="1-D"):
        margin_rank_loss(torch.zeros(2), torch.zeros(3), margin=0.1, delta=0.1)


def test_critic_loss_combines_the_three_terms():
    # logits 0 → φ = p = .5; u=[0, 1]: mse = .25, bce = ln 2; rank: one pair, Δφ=0 → m = .1.
    zeros = torch.zeros(2)
    t = critic_loss(zeros, zeros, torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]), 0.5, 2.0, 0.1, 0.5)
    assert float(t.mse) == pytest.approx(0.25)
    assert float(t.bce) == pytest.approx(math.log(2))
    assert float(t.rank) == pytest.approx(0.1)
    assert float(t.total) == pytest.approx(0.25 + 0.5 * math.log(2) + 2.0 * 0.1)


# ---------------------------------------------------------------- pooling and encoding


def test_pool_mean_and_last_with_right_and_left_padding():
    hidden = torch.tensor([[[1.0], [3.0], [100.0]], [[100.0], [2.0], [4.0]]])  # [2, 3, 1]
    mask = torch.tensor([[1, 1, 0], [0, 1, 1]])  # row 0 right-padded, row 1 left-padded
    assert pool(hidden, mask, "mean").squeeze(-1).tolist() == [2.0, 3.0]
    assert pool(hidden, mask, "last").squeeze(-1).tolist() == [3.0, 4.0]
    with pytest.raises(ValueError, match="all-zero"):
        pool(hidden, torch.tensor([[1, 0, 0], [0, 0, 0]]), "mean")


def test_encode_texts_truncates_from_the_chosen_side_and_counts(tiny_tokenizer):
    vocab = tiny_tokenizer.get_vocab()
    a, b, c, d, e = (vocab[w] for w in "abcde")
    left = encode_texts(tiny_tokenizer, ["a b c d e", "a b"], max_length=3, truncation_side="left")
    assert [x.tolist() for x in left.ids] == [[c, d, e], [a, b]] and left.n_truncated == 1
    right = encode_texts(tiny_tokenizer, ["a b c d e", "a b"], max_length=3, truncation_side="right")
    assert [x.tolist() for x in right.ids] == [[a, b, c], [a, b]] and right.n_truncated == 1
    assert tiny_tokenizer.truncation_side == "right"  # restored (the default)
    ids, mask = pad_right(list(left.ids), pad_id=0)
    assert ids.tolist() == [[c, d, e], [a, b, 0]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]


# ---------------------------------------------------------------- examples and data module


def test_critic_example_validation_names_the_record_and_field():
    with pytest.raises(ValueError, match=r"op_id='op7'.*'u'"):
        CriticExample(text="x", u=1.5, u_rr=1, dialogue_id="d1", kind="teacher", op_id="op7")
    with pytest.raises(ValueError, match=r"op_id='op8'.*'u_rr'"):
        CriticExample(text="x", u=0.5, u_rr=2, dialogue_id="d1", kind="teacher", op_id="op8")
    with pytest.raises(ValueError, match="'text'"):
        CriticExample(text=" ", u=0.5, u_rr=0, dialogue_id="d1", kind="teacher", op_id="op9")


def test_split_by_dialogue_keeps_order_and_rejects_unknown_dialogues():
    ex = _examples(("d1", "d2", "d3"))
    train, val = split_by_dialogue(ex, ["d2"])
    assert [e.op_id for e in val] == ["op1", "op4", "op7"]
    assert [e.op_id for e in train] == ["op0", "op2", "op3", "op5", "op6"]
    with pytest.raises(ValueError, match="d9"):
        split_by_dialogue(ex, ["d2", "d9"])


def test_data_module_refuses_a_dialogue_on_both_sides(tiny_tokenizer):
    ex = _examples()
    with pytest.raises(ValueError, match="d1"):
        CriticDataModule(ex[:4], ex[4:], tiny_tokenizer, max_length=32, batch_size=2, seed=0)


def _epoch_orders(dm: CriticDataModule, epochs: int) -> list[list[int]]:
    loader = dm.train_dataloader()
    orders = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        orders.append([i for batch in loader for i in batch.index.tolist()])
    return orders


def test_data_module_is_deterministic_and_tokenizes_once(tiny_tokenizer, monkeypatch):
    calls = []
    original = type(tiny_tokenizer).__call__

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(tiny_tokenizer), "__call__", counting)
    train, val = split_by_dialogue(_examples(("d1", "d2", "d3", "d4")), ["d4"])

    def make(seed: int) -> CriticDataModule:
        dm = CriticDataModule(train, val, tiny_tokenizer, max_length=64, batch_size=2, seed=seed)
        dm.setup("fit")
        dm.setup("validate")  # idempotent
        return dm

    a = make(0)
    orders = _epoch_orders(a, 2)
    val_batches = list(a.val_dataloader())
    assert len(calls) == 1  # one call for train + val together; collating never tokenizes
    assert [sorted(o) for o in orders] == [list(range(6))] * 2  # every example once per epoch
    assert orders[0] != orders[1]  # epochs reshuffle
    assert _epoch_orders(make(0), 2) == orders
    assert _epoch_orders(make(1), 2) != orders
    batch = val_batches[0]
    assert [a.val_split.examples[i].op_id for i in batch.index.tolist()] == ["op3", "op7"]
    assert batch.u.tolist() == [0.0, 0.0] and batch.u_rr.tolist() == [0.0, 0.0]
    assert batch.input_ids.shape == batch.attention_mask.shape
    assert batch.input_ids[batch.attention_mask == 0].eq(tiny_tokenizer.pad_token_id).all()
    assert torch.equal(batch.input_ids[0, : int(batch.attention_mask[0].sum())], a.val_split.input_ids[0])


def test_sampler_advances_without_set_epoch():
    s = EpochShuffleSampler(10, seed=5)
    first, second = list(s), list(s)
    assert first != second and sorted(first) == sorted(second) == list(range(10))
    s.set_epoch(0)
    assert list(s) == first


def test_sampler_repeats_each_index_as_often_as_asked_and_keeps_the_plain_order_without():
    s = EpochShuffleSampler(4, seed=3, repeats=[1, 3, 1, 2])
    order = list(s)
    assert len(s) == 7 and sorted(order) == [0, 1, 1, 1, 2, 3, 3]
    assert list(EpochShuffleSampler(5, seed=3, repeats=[1] * 5)) == list(EpochShuffleSampler(5, seed=3))
    with pytest.raises(ValueError, match="repeats"):
        EpochShuffleSampler(2, seed=0, repeats=[1, 0])


def test_datamodule_draws_miss_examples_miss_repeats_times(tiny_tokenizer):
    ex = _examples(("d1",))
    ex[1] = dataclasses.replace(ex[1], tier="miss", u=0.0)
    dm = CriticDataModule(ex, [], tiny_tokenizer, max_length=64, batch_size=64, seed=0, miss_repeats=4)
    dm.setup("fit")
    (batch,) = list(dm.train_dataloader())
    assert sorted(batch.index.tolist()) == sorted([*range(len(ex)), 1, 1, 1])
    with pytest.raises(ValueError, match="miss_repeats"):
        CriticDataModule(ex, [], tiny_tokenizer, max_length=64, batch_size=4, seed=0, miss_repeats=0)


# ---------------------------------------------------------------- end to end, tiny Qwen3 and MiniLM


def _fit_and_check(module: CriticModule, tmp_path: Path, steps: int = 20):
    """Train on one fixed batch (all 8 examples), then check loss, parameters, logging, scoring and saving."""
    dm = CriticDataModule(_examples(), [], module.tokenizer, module.cfg.max_length, batch_size=8, seed=0)
    dm.setup("fit")
    fixed = next(iter(dm.train_dataloader()))
    module.eval()
    with torch.no_grad():
        before = float(module.losses(fixed)[0].total)
    snapshot = {n: p.detach().clone() for n, p in module.net.named_parameters()}
    trainable = {n for n, p in module.net.named_parameters() if p.requires_grad}
    expected = {n for n in snapshot if "lora_" in n or n.startswith(("phi_head.", "p_head."))}
    assert trainable == expected and any("lora_" in n for n in expected)

    module.train()
    trainer = _trainer(steps)
    trainer.fit(module, datamodule=dm)
    assert trainer.global_step == steps
    assert set(trainer.callback_metrics) == {"train/loss", "train/mse", "train/bce", "train/rank"}
    module.eval()
    with torch.no_grad():
        after = float(module.losses(fixed)[0].total)
    assert after < 0.8 * before, (before, after)
    changed = {n for n, p in module.net.named_parameters() if not torch.equal(p.detach(), snapshot[n])}
    assert changed == expected

    train, val = split_by_dialogue(_examples(("d1", "d2", "d3", "d4")), ["d3", "d4"])  # val: both classes
    val_dm = CriticDataModule(train, val, module.tokenizer, module.cfg.max_length, batch_size=4, seed=0)
    (metrics,) = _trainer(validate=True).validate(module, datamodule=val_dm, verbose=False)
    for key in ("val/loss", "val/mse", "val/bce", "val/rank", "val/spearman", "val/auroc"):
        assert math.isfinite(metrics[key]), key
    frozen_now = module.to_frozen()
    phi_v, p_v = frozen_now.score([e.text for e in val])
    u_v, rr_v = np.array([e.u for e in val]), np.array([e.u_rr for e in val])
    expected_rho = spearman(phi_v, u_v).value  # the one implementation, on the same epoch's scores
    expected_auc = binary_auc(p_v[rr_v == 1], p_v[rr_v == 0]).value
    assert metrics["val/spearman"] == pytest.approx(expected_rho, abs=1e-5)
    assert metrics["val/auroc"] == pytest.approx(expected_auc, abs=1e-5)

    frozen = module.to_frozen()
    texts = [t for t, _, _ in LABELED]
    phi, p = frozen.score(texts)
    assert phi.shape == p.shape == (8,) and phi.dtype == np.float32
    assert ((phi >= 0) & (phi <= 1) & (p >= 0) & (p <= 1)).all()
    phi2, p2 = frozen.score(texts)
    assert np.array_equal(phi, phi2) and np.array_equal(p, p2)
    out = save_critic(module, tmp_path / "critic")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert size < 10 * 2**20, size
    return frozen, out, phi, p


def test_tiny_qwen3_critic_trains_saves_and_loads(tiny_tokenizer, tmp_path):
    cfg = CriticConfig(
        backbone=BackboneConfig(
            kind="causal", model="tiny-qwen3", lora_rank=4, lora_alpha=8.0, lora_dropout=0.0
        ),
        lr=2e-2,
        max_length=64,
        batch_size=8,
        score_batch_size=3,
    )
    module = CriticModule(cfg, model=_tiny_qwen(tiny_tokenizer, seed=0), tokenizer=tiny_tokenizer)
    assert all("q_proj" in n or "v_proj" in n for n, _ in module.net.named_parameters() if "lora_" in n)
    frozen, out, phi, p = _fit_and_check(module, tmp_path)

    loaded = load_critic(out, base_model=_tiny_qwen(tiny_tokenizer, seed=0))
    phi_l, p_l = loaded.score([t for t, _, _ in LABELED])
    np.testing.assert_allclose(phi_l, phi, atol=1e-6)
    np.testing.assert_allclose(p_l, p, atol=1e-6)
    # batching does not change scores (padding is masked out of the last-token pooling)
    big = load_critic(out, base_model=_tiny_qwen(tiny_tokenizer, seed=0))
    big.cfg = dataclasses.replace(cfg, score_batch_size=64)
    np.testing.assert_allclose(big.score([t for t, _, _ in LABELED])[0], phi, atol=1e-5)

    with pytest.raises(ValueError, match="base_checksum"):
        load_critic(out, base_model=_tiny_qwen(tiny_tokenizer, seed=1))
    with pytest.raises(ValueError, match="already carries LoRA"):
        load_critic(out, base_model=module.net.backbone.model.get_base_model())


def test_validation_metrics_are_nan_on_degenerate_epochs(tiny_tokenizer):
    cfg = CriticConfig(
        backbone=BackboneConfig(kind="causal", model="tiny-qwen3", lora_dropout=0.0), max_length=64
    )
    module = CriticModule(cfg, model=_tiny_qwen(tiny_tokenizer), tokenizer=tiny_tokenizer)
    same = [
        CriticExample(text=t, u=0.5, u_rr=1, dialogue_id="dv", kind="teacher", op_id=f"v{i}")
        for i, (t, _, _) in enumerate(LABELED[:4])
    ]
    dm = CriticDataModule(_examples(("d1",)), same, tiny_tokenizer, max_length=64, batch_size=4, seed=0)
    (metrics,) = _trainer(validate=True).validate(module, datamodule=dm, verbose=False)
    assert math.isnan(metrics["val/spearman"]) and math.isnan(metrics["val/auroc"])
    assert math.isfinite(metrics["val/loss"])


def test_minilm_critic_trains_saves_and_loads(tmp_path):
    cfg = CriticConfig(
        backbone=BackboneConfig(kind="encoder", model="minilm", lora_rank=8, lora_dropout=0.0),
        lr=5e-3,
        max_length=64,
        batch_size=8,
    )
    module = CriticModule(cfg)
    assert all("query" in n or "value" in n for n, _ in module.net.named_parameters() if "lora_" in n)
    frozen, out, phi, p = _fit_and_check(module, tmp_path)
    loaded = load_critic(out)  # base reloaded from the offline MiniLM path
    assert Path(resolve_model_path("minilm")).is_dir()
    phi_l, p_l = loaded.score([t for t, _, _ in LABELED])
    np.testing.assert_allclose(phi_l, phi, atol=1e-6)
    np.testing.assert_allclose(p_l, p, atol=1e-6)
