"""SFT through a Lightning Trainer (SFTModule, its batches, train_sft) against a plain AdamW loop by hand."""

from __future__ import annotations

import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy

from memprm.credit.tiers import Neighbour
from memprm.data.records import Turn
from memprm.env.gates import Action, Observation
from memprm.models.policy_config import LoraSettings
from memprm.models.sft import SFTBatches, SFTModule, balance_weights, sft_dataloader, sft_loss
from memprm.models.two_tower import kind_rank_dim, structural_dim
from memprm.stages.sft_config import SFTConfig
from memprm.stages.sft_stage import train_sft

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ("I adopted a puppy named Rex", "My job at the bakery starts Monday", "We moved to Lisbon in May")


def _obs(k: int, text: str) -> Observation:
    neighbours = tuple(Neighbour(f"e{i + 1}", "event", f"fact number {i + 1} about Alice") for i in range(k))
    return Observation(
        "d1", 2, Turn("D2:3", "Alice", text, 2), "2023-05-08T10:00:00", "event", ("Bob: hi",), neighbours
    )


def _samples(policy) -> tuple[list, list[str]]:
    """7 samples of all three kinds (a Noop majority), and their kinds."""
    gates = [(_obs(k, t), Action.noop()) for k, t in zip((0, 1, 2, 2), TEXTS + TEXTS[:1], strict=True)]
    gates += [(_obs(1, TEXTS[1]), Action("write", "Alice works at a bakery", "job"))]
    gates += [(_obs(2, t), Action("merge", "Alice has a dog", entry_id="e2")) for t in TEXTS[1:]]
    return [policy.sample_for(o, a) for o, a in gates], [a.kind for _, a in gates]


def _trainable(policy) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.named_parameters() if p.requires_grad}


def _reference(policy, samples, steps, lr, batch_size, seed, *, weights, weight_decay):
    """The SFT maths by hand: AdamW, shuffled passes cut into batches (the last one smaller), eval mode."""
    optimizer = torch.optim.AdamW(
        [p for p in policy.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay
    )
    generator, order, losses = torch.Generator().manual_seed(seed), [], []
    policy.eval()
    for _ in range(steps):
        if not order:
            order = torch.randperm(len(samples), generator=generator).tolist()
        batch, order = order[:batch_size], order[batch_size:]
        loss = sft_loss(policy, [samples[i] for i in batch], None if weights is None else weights[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


def _passes(n: int, seed: int, k: int) -> list[list[int]]:
    """k permutations of range(n) drawn one after another from one generator seeded with ``seed``."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=g).tolist() for _ in range(k)]


def test_batches_are_shuffled_passes_cut_into_chunks_for_exactly_steps_steps():
    batches = list(SFTBatches(5, batch_size=2, steps=7, seed=4))
    assert [len(b) for b in batches] == [2, 2, 1, 2, 2, 1, 2]  # each pass: 2 + 2 + 1; the third stops early
    assert sorted(sum(batches[:3], [])) == sorted(sum(batches[3:6], [])) == list(range(5))
    passes = _passes(5, seed=4, k=3)
    assert sum(batches, []) == passes[0] + passes[1] + passes[2][:2]
    assert batches[:3] != batches[3:6]  # a fresh permutation each pass
    assert list(SFTBatches(5, 2, 7, 4)) == batches and len(SFTBatches(5, 2, 7, 4)) == 7  # iterating restarts
    assert list(SFTBatches(3, batch_size=8, steps=2, seed=0)) == _passes(3, seed=0, k=2)  # one batch a pass
    with pytest.raises(ValueError, match="batch_size"):
        SFTBatches(3, 0, 1, 0)


def test_dataloader_collates_samples_and_their_weights():
    samples = [f"s{i}" for i in range(5)]  # collation only indexes
    weights = torch.arange(5.0)  # [5]
    got = list(sft_dataloader(samples, batch_size=2, steps=4, seed=1, weights=weights))
    for (batch, w), idx in zip(got, SFTBatches(5, 2, 4, 1), strict=True):
        assert batch == [samples[i] for i in idx] and torch.equal(w, weights[idx])
    assert all(w is None for _, w in sft_dataloader(samples, 2, 3, 1))
    with pytest.raises(ValueError, match="no samples"):
        sft_dataloader([], 1, 1, 0)
    with pytest.raises(ValueError, match="weights of shape"):
        sft_dataloader(samples, 1, 1, 0, torch.ones(3))
    with pytest.raises(ValueError, match="steps"):
        sft_dataloader(samples, 1, 0, 0)


@pytest.mark.parametrize("balanced", [True, False])
def test_trainer_sft_equals_a_plain_adamw_loop(balanced, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = []
    for trainer in (True, False):
        policy = tiny_scoring_policy(seed=1, head_std=0.5)  # LoRA r=8 + head; BERT dropout 0.1
        policy.train()
        samples, kinds = _samples(policy)
        weights = balance_weights(kinds, 0.5) if balanced else None
        args = (policy, samples, 9, 2e-2, 3, 5)  # 7 samples in batches of 3: 3 + 3 + 1 per pass
        rng = torch.get_rng_state()
        losses = train_sft(*args, weights=weights, weight_decay=0.01, progress=False) if trainer else \
            _reference(*args, weights=weights, weight_decay=0.01)  # fmt: skip
        assert torch.equal(torch.get_rng_state(), rng)  # the global generator is left alone, as by hand
        runs.append((losses, _trainable(policy)))
    (losses, state), (ref_losses, ref_state) = runs
    assert len(losses) == 9 and losses == ref_losses
    assert state.keys() == ref_state.keys() and all(torch.equal(state[k], ref_state[k]) for k in state)
    untrained = _trainable(tiny_scoring_policy(seed=1, head_std=0.5))
    assert not any(torch.equal(state[k], untrained[k]) for k in ("head.weight", "head.bias"))
    assert not list(tmp_path.iterdir())  # no logger: nothing written


def test_the_policy_trains_in_eval_mode_and_gets_its_mode_back():
    for start in (True, False):
        policy = tiny_scoring_policy(seed=2, lora=LoraSettings(rank=0))
        samples, _ = _samples(policy)
        policy.train(start)
        seen = []
        log_probs = policy.log_probs

        def recording(batch, log_probs=log_probs, policy=policy, seen=seen):
            seen.append(any(m.training for m in policy.modules()))
            return log_probs(batch)

        policy.log_probs = recording
        train_sft(policy, samples, 3, 1e-2, 4, 0, progress=False)
        assert seen == [False] * 3 and policy.training is start
        assert all(m.training is start for m in policy.modules())


def test_module_logs_the_loss_and_refuses_a_bad_setup():
    policy = tiny_scoring_policy(seed=3, lora=LoraSettings(rank=0))
    samples, _ = _samples(policy)
    module = SFTModule(policy, lr=1e-2, weight_decay=0.1)
    logged = []
    module.log = lambda name, value, **kw: logged.append((name, value, kw["batch_size"]))
    loss = module.training_step((samples[:2], torch.tensor([1.0, 3.0])), 0)
    assert logged == [("sft/loss", module.losses[0], 2)] and module.losses == [float(loss.detach())]
    opt = module.configure_optimizers()
    assert isinstance(opt, torch.optim.AdamW) and opt.defaults["weight_decay"] == 0.1
    assert [p for g in opt.param_groups for p in g["params"]] == [policy.head.weight, policy.head.bias]
    with pytest.raises(ValueError, match="lr"):
        SFTModule(policy, lr=0.0)
    for p in policy.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        SFTModule(policy, lr=1e-2)


def test_label_smoothing_loss_by_hand_and_it_keeps_entropy():
    policy = tiny_scoring_policy(seed=3, lora=LoraSettings(rank=0))
    samples, kinds = _samples(policy)
    table, mask = policy.candidate_log_probs(samples)  # [N, C]
    eps, w = 0.2, balance_weights(kinds, 0.5)
    per = []
    for i, s in enumerate(samples):
        row = table[i][mask[i]]
        per.append(-(1 - eps) * row[s.choice] - eps * row.mean())
    expected = (w * torch.stack(per)).sum() / w.sum()
    assert float(sft_loss(policy, samples, w, label_smoothing=eps)) == pytest.approx(float(expected), rel=1e-5)
    assert float(sft_loss(policy, samples, w, 0.0)) == pytest.approx(float(sft_loss(policy, samples, w)))

    def entropy_after(smoothing: float) -> float:
        p = tiny_scoring_policy(seed=3, lora=LoraSettings(rank=0))
        train_sft(p, samples, 300, 0.1, 7, 0, weights=w, progress=False, label_smoothing=smoothing)
        return float(p.log_probs(samples)[1].mean())

    plain, smoothed = entropy_after(0.0), entropy_after(0.2)
    assert smoothed > plain + 0.1  # ε keeps mass on the other candidates; imitation alone sharpens
    with pytest.raises(ValueError, match="label_smoothing"):
        SFTModule(policy, 0.1, label_smoothing=1.0)


@pytest.mark.parametrize("which", ["structural", "kinds"])
def test_sft_on_a_subset_moves_only_those_head_weights(which, tmp_path, monkeypatch):
    """``sft.trainable``: the text-vector weights (and, for ``kinds``, the cosines) keep their values."""
    monkeypatch.chdir(tmp_path)
    policy = tiny_scoring_policy(seed=3, lora=LoraSettings(rank=0))  # random head: "kept" is not "zero"
    samples, kinds = _samples(policy)
    before = _trainable(policy)
    losses = train_sft(policy, samples, 20, 0.1, 7, 0, weights=balance_weights(kinds, 0.5), progress=False,
                       trainable=which)  # fmt: skip
    after, k = _trainable(policy), structural_dim() if which == "structural" else kind_rank_dim()
    assert not torch.equal(after["head.weight"][:, :k], before["head.weight"][:, :k])
    assert torch.equal(after["head.weight"][:, k:], before["head.weight"][:, k:])
    assert torch.equal(after["head.bias"], before["head.bias"]) and losses[-1] < losses[0]
    with pytest.raises(ValueError, match="trainable=structural needs weight_decay 0"):
        train_sft(policy, samples, 1, 0.1, 7, 0, weight_decay=0.01, progress=False, trainable="structural")


def test_sft_config_names_a_bad_trainable():
    assert SFTConfig().trainable == "structural"  # the embedded default (two-tower scorer)
    with pytest.raises(ValueError, match="sft.trainable must be one of .'all', 'structural', 'kinds', 'match'., got 'text'"):
        SFTConfig(trainable="text")
