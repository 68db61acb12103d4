"""GRPO: the loss maths by hand, the config, batch preparation (rewards → advantages → flat samples), and the
LightningModule trained with a real Trainer on constructed groups (a scoring policy on a 2-layer BERT).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from lightning.pytorch import Callback, Trainer
from torch.utils.data import DataLoader
from transformers import AutoTokenizer, BertConfig

from memprm.configtools import ConfigError, build
from memprm.credit import RewardWeights, composite_rewards, group_advantages
from memprm.env.policy import GateSample
from memprm.memory.embedder import resolve_model_path
from memprm.models import grpo_module
from memprm.models.grpo_batch import EMPTY, mean_over_ranks, prepare_batch
from memprm.models.grpo_config import GRPOConfig
from memprm.models.grpo_losses import clipped_surrogate, kl_k3, policy_loss
from memprm.models.grpo_module import GRPOPolicyModule
from memprm.models.policies import build_policy
from memprm.models.policy_config import LoraSettings, PolicyConfig
from memprm.models.trainable import trainable_state
from memprm.rollout.batches import GroupBatch, RolloutSteps

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning"),
    pytest.mark.usefixtures("one_thread"),
]


# ----------------------------------------------------------------------------------------------------
# clipped surrogate and k3, by hand


def _t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def _surrogate(ratios, adv, eps_low=0.2, eps_high=0.2):
    logp = torch.log(_t(*ratios)).requires_grad_(True)
    loss, frac = clipped_surrogate(
        logp, torch.zeros(len(ratios), dtype=torch.float64), _t(*adv), eps_low, eps_high
    )
    loss.backward()
    return float(loss), float(frac), logp.grad.tolist()


def test_surrogate_inside_the_clip_range_is_the_plain_ratio_objective():
    # −(1.1·2 + 0.9·(−1)) / 2; d/dlogp_i = −r_i·A_i / N
    loss, frac, grad = _surrogate([1.1, 0.9], [2.0, -1.0])
    assert loss == pytest.approx(-0.65) and frac == 0.0
    assert grad == pytest.approx([-1.1, 0.45])


def test_surrogate_outside_the_range_clips_only_the_improving_side():
    # A > 0: r = 1.5 clipped to 1.2 (no gradient), r = 0.5 kept; A < 0: r = 1.5 kept, r = 0.5 clipped to 0.8
    loss, frac, grad = _surrogate([1.5, 0.5, 1.5, 0.5], [1.0, 1.0, -1.0, -1.0])
    assert loss == pytest.approx(-(1.2 + 0.5 - 1.5 - 0.8) / 4) and frac == 0.5
    assert grad == pytest.approx([0.0, -0.125, 0.375, 0.0])


def test_surrogate_asymmetric_eps():
    ratios, adv = [1.25, 1.35, 0.85, 0.95], [1.0, 1.0, -1.0, -1.0]
    loss, frac, _ = _surrogate(ratios, adv, eps_low=0.1, eps_high=0.3)
    assert loss == pytest.approx(-(1.25 + 1.3 - 0.9 - 0.95) / 4) and frac == 0.5  # 1.35 → 1.3, 0.85 → 0.9
    loss, frac, _ = _surrogate(ratios, adv)  # symmetric 0.2: 1.25 and 1.35 → 1.2, 0.85 and 0.95 kept
    assert loss == pytest.approx(-(1.2 + 1.2 - 0.85 - 0.95) / 4) and frac == 0.5


def test_surrogate_zero_advantage_has_no_loss_no_clip_no_gradient():
    loss, frac, grad = _surrogate([3.0, 0.1], [0.0, 0.0])
    assert loss == 0.0 and frac == 0.0 and grad == [0.0, 0.0]


def test_surrogate_rejects_bad_shapes_and_eps():
    with pytest.raises(ValueError, match="one shape"):
        clipped_surrogate(torch.zeros(2), torch.zeros(3), torch.zeros(2), 0.2, 0.2)
    with pytest.raises(ValueError, match="non-empty"):
        clipped_surrogate(torch.zeros(0), torch.zeros(0), torch.zeros(0), 0.2, 0.2)
    with pytest.raises(ValueError, match="eps_low"):
        clipped_surrogate(torch.zeros(1), torch.zeros(1), torch.zeros(1), 1.0, 0.2)


def test_kl_k3_is_zero_when_equal_and_matches_hand_values():
    logp = _t(-1.0, -2.0, -1.0).requires_grad_(True)
    k3 = kl_k3(logp, _t(-1.0, -1.0, -2.0))
    # d = ref − logp: 0 → 0; 1 → e − 2; −1 → e⁻¹ + 1 − 1
    assert k3.tolist() == pytest.approx([0.0, math.e - 2, math.exp(-1)])
    k3.sum().backward()
    assert logp.grad.tolist() == pytest.approx([0.0, 1 - math.e, 1 - math.exp(-1)])  # d k3/d logp = 1 − e^d
    x = torch.randn(50, dtype=torch.float64)
    assert bool((kl_k3(x, torch.randn(50, dtype=torch.float64)) >= 0).all())


def test_policy_loss_with_zero_advantage_has_the_kl_gradient():
    logp = _t(-0.5, -2.0, -1.2).requires_grad_(True)
    ref, zero = _t(-1.0, -0.3, -1.2), torch.zeros(3, dtype=torch.float64)
    terms = policy_loss(logp, logp.detach() + 0.1, ref, zero, eps_low=0.2, eps_high=0.2, beta=0.5)
    (grad,) = torch.autograd.grad(terms.loss, logp)
    (kl_grad,) = torch.autograd.grad(0.5 * kl_k3(logp, ref).mean(), logp)
    torch.testing.assert_close(grad, kl_grad)
    assert float(terms.surrogate) == 0.0 and float(terms.kl) == pytest.approx(float(kl_k3(logp, ref).mean()))
    # β = 0 never reads the reference (rollouts without one leave it at 0.0 or anything else)
    off = policy_loss(
        logp, logp.detach(), torch.full((3,), math.nan), _t(1, 1, 1), eps_low=0.2, eps_high=0.2, beta=0
    )
    assert float(off.kl) == 0.0 and math.isfinite(float(off.loss))


# ----------------------------------------------------------------------------------------------------
# config


def test_config_defaults_build_and_validation():
    cfg = GRPOConfig()
    assert (cfg.eps_low, cfg.eps_high, cfg.beta_kl, cfg.ppo_epochs, cfg.lambda_inf) == (0.2, 0.2, 0.0, 2, 0.2)
    assert cfg.advantage_mode == "process" and cfg.minibatch_size == 0 and cfg.weights == RewardWeights()
    assert cfg.trainable == "all"
    assert cfg.batch_budget == cfg.max_steps and GRPOConfig(max_steps=5, max_batches=9).batch_budget == 9
    built = build(GRPOConfig, {"eps_high": 0.28, "advantage_mode": "outcome", "weights": {"miss": 0.5}})
    assert built.eps_high == 0.28 and built.advantage_mode == "outcome" and built.weights.miss == 0.5
    with pytest.raises(ConfigError, match="advantage_mode"):
        build(GRPOConfig, {"advantage_mode": "token"}, prefix="grpo.")
    for bad, match in (
        ({"eps_low": 1.0}, "eps_low"),
        ({"ppo_epochs": 0}, "ppo_epochs"),
        ({"minibatch_size": -1}, "minibatch_size"),
        ({"max_batches": -1}, "max_batches"),
        ({"lambda0": 0.1}, "lambda0 >= grpo.lambda_inf"),
        ({"k_decay": 0}, "k_decay"),
        ({"lr": 0.0}, "lr"),
        ({"beta_kl": -1.0}, "beta_kl"),
        ({"max_grad_norm": math.inf}, "max_grad_norm"),
        ({"temperature": -1.0}, "temperature"),
        ({"trainable": "lora"}, r"one of \('all', 'structural', 'kinds', 'match'\), got 'lora'"),
        ({"trainable": "structural", "weight_decay": 0.01}, "structural needs grpo.weight_decay=0"),
    ):
        with pytest.raises(ValueError, match=match):
            GRPOConfig(**bad)


# ----------------------------------------------------------------------------------------------------
# batch preparation (pure; no trainer)

PROMPT = "layer: event | date: 2023-05-08 | turn: Alice: I adopted a puppy named Rex last week"
CANDIDATES = (
    "noop: keep nothing of this turn in the event layer",
    "write: this turn as a new event entry",
    "merge: this turn into shown entry 1: (2023-05-01) Alice has a cat",
)
NOOP, WRITE = 0, 1


def _rollout(samples, task, credit=None, miss=None, shaping=None, stats=None) -> RolloutSteps:
    t = len(samples)
    vec = lambda v: np.zeros(t) if v is None else np.asarray(v, dtype=float)  # noqa: E731
    return RolloutSteps(
        tuple(samples), np.zeros(t, bool), vec(credit), vec(miss), vec(shaping), task, stats or {}
    )


def _group(*rollouts: RolloutSteps, dialogue: str = "d1", window: int = 0) -> GroupBatch:
    return GroupBatch(dialogue, window, tuple(rollouts), quiz_size=4, write_back=0)


def _plain(choice: int, logprob: float = -1.0, ref: float = 0.0) -> GateSample:
    return GateSample(PROMPT, CANDIDATES, choice, logprob=logprob, ref_logprob=ref)


def _hand_group() -> GroupBatch:
    """Totals at λ = 0.5, w_miss = 0.5: rollout 0 [0.5 + 0.1, 0.2 + 1.0], rollout 1 [−0.5, 0.1]."""
    r0 = _rollout([_plain(WRITE, -0.7), _plain(NOOP, -1.1)], 1.0, credit=[0.5, 0.0], shaping=[0.2, 0.4],
                  stats={"entries": 4, "versions_per_entry": 1.5, "context_tokens": 100})  # fmt: skip
    r1 = _rollout([_plain(NOOP, -0.9), _plain(WRITE, -1.3)], 0.0, miss=[1, 0], shaping=[0.0, 0.2],
                  stats={"entries": 2})  # fmt: skip
    return _group(r0, r1)


HAND_CFG = dict(weights=RewardWeights(task=1.0, credit=1.0, miss=0.5))


def test_prepare_process_mode_advantages_by_hand():
    prep = prepare_batch([_hand_group()], 0.5, GRPOConfig(**HAND_CFG))
    # all step rewards [0.6, 1.2, −0.5, 0.1]: mean 0.35, std sqrt(0.3925); A_t = Σ_{s ≥ t} r̃_s
    z = np.array([0.25, 0.85, -0.85, -0.25]) / math.sqrt(0.3925)
    expected = [z[0] + z[1], z[1], z[2] + z[3], z[3]]
    np.testing.assert_allclose(prep.advantages, expected, rtol=1e-12)
    np.testing.assert_allclose(prep.advantages, [1.755791, 1.356748, -1.755791, -0.399043], atol=1e-6)
    np.testing.assert_array_equal(prep.old_logp, [-0.7, -1.1, -0.9, -1.3])
    assert [s.choice for s in prep.samples] == [WRITE, NOOP, NOOP, WRITE] and prep.statuses == ("ok",)


def test_prepare_outcome_mode_gives_the_normalized_outcome_to_every_step():
    prep = prepare_batch([_hand_group()], 0.5, GRPOConfig(advantage_mode="outcome", **HAND_CFG))
    np.testing.assert_array_equal(prep.advantages, [1.0, 1.0, -1.0, -1.0])


def test_prepare_gate_mode_standardizes_each_component_then_weighs_it_by_hand():
    """Per component: returns to go centred per gate over the group, over their std; then w_task, w_u, w_miss
    and λ weigh them. Two rollouts: each component's centred values are ± half the difference."""
    prep = prepare_batch([_hand_group()], 0.5, GRPOConfig(advantage_mode="gate", **HAND_CFG))
    r2 = math.sqrt(2)
    s0, s1 = 0.1 / math.sqrt(0.00625), 0.05 / math.sqrt(0.00625)  # shaping togo [0.3, 0.2] vs [0.1, 0.1]
    a0 = [1 + r2 + 0.5 * r2 + 0.5 * s0, 1 + 0.5 * s1]  # task ±1 both gates, credit ±√2 at gate 0, miss ±√2
    np.testing.assert_allclose(prep.advantages, [*a0, -a0[0], -a0[1]], rtol=1e-12)
    masses = np.array([4.0, 2 * r2, 0.5 * 2 * r2, 0.5 * 2 * (s0 + s1)])
    m = prep.metrics(0.5)
    for c, v in zip(("task", "credit", "miss", "shaping"), masses / masses.sum(), strict=True):
        assert m[f"advantage/{c}_share"] == pytest.approx(v)
    zero_w = GRPOConfig(advantage_mode="gate", weights=RewardWeights(task=1.0, credit=0.0, miss=0.0))
    only_task = prepare_batch([_hand_group()], 0.0, zero_w)  # weight 0 and λ = 0: R alone steers
    np.testing.assert_allclose(only_task.advantages, [1, 1, -1, -1])
    tied = _group(_rollout([_plain(NOOP)], 0.5, credit=[0.3]), _rollout([_plain(WRITE)], 0.5, credit=[0.3]))
    assert prepare_batch([tied], 0.0, zero_w).statuses == ("identical_rollouts",)


@pytest.mark.parametrize("mode", ["process", "outcome"])
def test_prepare_advantages_are_group_advantages_of_the_composite_rewards(mode):
    group = _hand_group()
    prep = prepare_batch([group], 0.5, GRPOConfig(advantage_mode=mode, **HAND_CFG))
    w = HAND_CFG["weights"]
    totals = [
        composite_rewards(r.task, r.credit, r.miss, r.shaping, lam=0.5, weights=w).total
        for r in group.rollouts
    ]
    ga = group_advantages(totals, mode, outcomes=[r.task for r in group.rollouts])
    np.testing.assert_array_equal(prep.advantages, np.concatenate(ga.advantages))
    for a, b in zip(prep.group_advantages[0], ga.advantages, strict=True):
        np.testing.assert_array_equal(a, b)


def test_prepare_metrics_by_hand():
    m = prepare_batch([_hand_group()], 0.5, GRPOConfig(**HAND_CFG)).metrics(0.5)
    assert m["task/accuracy"] == 0.5
    assert m["reward/credit"] == pytest.approx(0.5 / 4)
    assert m["reward/miss"] == pytest.approx(-0.5 / 4)
    assert m["reward/shaping"] == pytest.approx(0.5 * 0.8 / 4)
    assert m["reward/total"] == pytest.approx(1.4 / 4)
    assert m["reward/shaping_share"] == pytest.approx(0.4 / (1.0 + 0.5 + 0.5 + 0.4))
    assert (
        m["bank/entries"] == 3.0 and m["bank/versions_per_entry"] == 1.5 and m["bank/context_tokens"] == 100
    )
    assert (m["grpo/groups"], m["grpo/steps"], m["grpo/lambda"], m["grpo/skipped_frac"]) == (1, 4, 0.5, 0)


def test_prepare_skips_and_counts_groups_without_contrast():
    ok = _group(_rollout([_plain(WRITE)], 1.0), _rollout([_plain(NOOP)], 0.0), dialogue="ok")
    flat = _group(_rollout([_plain(WRITE)], 0.5), _rollout([_plain(NOOP)], 0.5), dialogue="flat")
    same = _group(
        *[_rollout([_plain(WRITE), _plain(NOOP)], 1.0)] * 2, dialogue="same"
    )  # rewards [0, 1] twice
    empty = _group(_rollout([], 1.0), _rollout([], 0.0), dialogue="empty")
    prep = prepare_batch([ok, flat, same, empty], 1.0, GRPOConfig())
    assert prep.statuses == ("ok", "zero_variance", "identical_rollouts", EMPTY)
    assert len(prep.samples) == 2 and prep.advantages.tolist() == [1.0, -1.0]
    assert all(not a.any() for a in prep.group_advantages[1] + prep.group_advantages[2])
    m = prep.metrics(1.0)
    assert (m["grpo/zero_variance_frac"], m["grpo/identical_frac"], m["grpo/empty_frac"]) == (
        0.25,
        0.25,
        0.25,
    )
    assert m["grpo/skipped_frac"] == 0.75 and m["grpo/steps"] == 2
    assert m["task/accuracy"] == pytest.approx((1 + 0 + 0.5 + 0.5 + 1 + 1 + 1 + 0) / 8)
    assert "bank/entries" not in m and not any(k.startswith("audit/") for k in m)


def test_group_audit_and_probe_stats_are_averaged_over_the_groups_carrying_them():
    a, b = _group(_rollout([_plain(WRITE)], 1.0), _rollout([_plain(NOOP)], 0.0)), _hand_group()
    a.stats.update({"audit/quiz_reader_calls": 8.0, "probe/gate1_pass": 0.5, "time/total": 3.0})
    b.stats.update({"audit/quiz_reader_calls": 4.0})
    m = prepare_batch([a, b], 0.5, GRPOConfig(**HAND_CFG)).metrics(0.5)
    assert m["audit/quiz_reader_calls"] == 6.0 and m["probe/gate1_pass"] == 0.5 and "time/total" not in m


def test_prepare_errors_name_group_rollout_and_field():
    bad_lp = _group(_rollout([_plain(WRITE)], 1.0), _rollout([_plain(NOOP, logprob=0.5)], 0.0), dialogue="dX")
    with pytest.raises(ValueError, match=r"'dX' window 0, rollout 1, step 0: GateSample.logprob = 0.5"):
        prepare_batch([bad_lp], 1.0, GRPOConfig())
    no_ref = _group(_rollout([_plain(WRITE)], 1.0), _rollout([_plain(NOOP)], 0.0))
    prepare_batch([no_ref], 1.0, GRPOConfig())  # fine without a KL penalty
    with pytest.raises(ValueError, match="ref_logprob = 0.0"):
        prepare_batch([no_ref], 1.0, GRPOConfig(beta_kl=0.1))
    mixed = _group(_rollout([_plain(WRITE)], 1.0), _rollout([], 0.0))
    with pytest.raises(ValueError, match=r"rollouts have \[1, 0\] gate steps"):
        prepare_batch([mixed], 1.0, GRPOConfig())
    bad_r = _group(_rollout([_plain(WRITE)], 1.0), _rollout([_plain(NOOP)], 1.5))
    with pytest.raises(ValueError, match="rollout 1: composite_rewards: task_reward"):
        prepare_batch([bad_r], 1.0, GRPOConfig())
    with pytest.raises(ValueError, match="no groups"):
        prepare_batch([], 1.0, GRPOConfig())


# ----------------------------------------------------------------------------------------------------
# the LightningModule with a real Trainer


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model_path("minilm"))


def _policy(tokenizer, seed: int = 0):
    """A 2-layer BERT (BERT's default dropout 0.1) on MiniLM's tokenizer, LoRA on query/value, random head; the pair
    scorer, since the samples here are built from prompt and candidate texts alone."""
    bert = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, max_position_embeddings=512,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        policy = build_policy(
            PolicyConfig(scorer="pair", max_length=128, lora=LoraSettings(rank=8)),
            model=bert,
            tokenizer=tokenizer,
        )
        torch.nn.init.normal_(policy.head.weight, std=2.0)
    return policy


def _probs(policy) -> torch.Tensor:
    """π over the three candidates at the test gate [3], dropout-free."""
    was = policy.training
    policy.eval()
    with torch.no_grad():
        logp = policy.log_probs([GateSample(PROMPT, CANDIDATES, j) for j in range(3)])[0]
    policy.train(was)
    return logp.exp()


def _sampled(policy, choice: int, ref: float = 0.0) -> GateSample:
    """The sample a rollout would have recorded: π_old = the current policy's log-prob."""
    return GateSample(PROMPT, CANDIDATES, choice).with_logprobs(float(_probs(policy)[choice].log()), ref)


def _fit(module: GRPOPolicyModule, batches: list, callbacks=()) -> Trainer:
    trainer = Trainer(
        max_epochs=1, limit_train_batches=len(batches), accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=list(callbacks),
    )  # fmt: skip
    trainer.fit(module, train_dataloaders=DataLoader(batches, batch_size=None, collate_fn=lambda x: x))
    return trainer


def _snapshot(module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters()}


def _unchanged(before, module) -> bool:
    return all(torch.equal(before[n], p.detach()) for n, p in module.named_parameters())


class _ModeProbe(Callback):
    """Records, before every optimizer step, whether any module of the policy was in train mode."""

    def __init__(self):
        self.training: list[bool] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.training.append(any(m.training for m in pl_module.policy.modules()))


@pytest.fixture
def spy(monkeypatch):
    """Records every policy_loss call the module makes: (logp, old_logp, ref_logp, adv), detached."""
    calls: list[tuple[torch.Tensor, ...]] = []
    real = grpo_module.policy_loss

    def recording(logp, old_logp, ref_logp, adv, **kw):
        calls.append(tuple(t.detach().clone() for t in (logp, old_logp, ref_logp, adv)))
        return real(logp, old_logp, ref_logp, adv, **kw)

    monkeypatch.setattr(grpo_module, "policy_loss", recording)
    return calls


def test_grpo_step_moves_the_policy_toward_the_higher_advantage_action(tokenizer, spy):
    policy = _policy(tokenizer)
    before = _probs(policy)
    # the same gate: rollout 0 wrote the turn and scored R = 1, rollout 1 skipped it and scored R = 0
    group = _group(_rollout([_sampled(policy, WRITE)], 1.0), _rollout([_sampled(policy, NOOP)], 0.0))
    policy.train()  # the module must switch dropout off itself
    module = GRPOPolicyModule(policy, GRPOConfig(lr=2e-2))
    probe = _ModeProbe()
    trainer = _fit(module, [[group]], [probe])
    after = _probs(policy)
    assert after[WRITE] > before[WRITE] + 0.05 and after[NOOP] < before[NOOP] - 0.05
    assert trainer.global_step == 2 and probe.training == [
        False,
        False,
    ]  # two PPO epochs, policy in eval mode
    # epoch 1 re-scores the samples exactly as sampled (ratio 1, dropout off), with advantages ±1
    torch.testing.assert_close(spy[0][0], spy[0][1], atol=1e-5, rtol=0)
    assert spy[0][3].tolist() == [1.0, -1.0] and len(spy) == 2
    m = trainer.callback_metrics
    assert float(m["grpo/steps"]) == 2 and float(m["grpo/groups"]) == 1 and float(m["task/accuracy"]) == 0.5
    assert float(m["grpo/zero_variance_frac"]) == 0.0 and float(m["grpo/lambda"]) == 1.0
    assert 0 < float(m["grpo/entropy"]) <= math.log(3) + 1e-6 and 0 <= float(m["grpo/clip_frac"]) <= 1
    assert "grpo/loss" in m and "grpo/kl" not in m  # β = 0: no KL is computed or logged


def test_zero_variance_group_is_skipped_without_an_optimizer_step(tokenizer, spy):
    policy = _policy(tokenizer)
    group = _group(_rollout([_sampled(policy, WRITE)], 0.5), _rollout([_sampled(policy, NOOP)], 0.5))
    module = GRPOPolicyModule(policy, GRPOConfig(lr=2e-2))
    before = _snapshot(module)
    trainer = _fit(module, [group])
    assert _unchanged(before, module) and trainer.global_step == 0 and spy == []
    m = trainer.callback_metrics
    assert float(m["grpo/zero_variance_frac"]) == 1.0 and float(m["grpo/skipped_frac"]) == 1.0
    assert float(m["grpo/steps"]) == 0 and float(m["task/accuracy"]) == 0.5 and "grpo/loss" not in m


def test_step_returns_the_reward_masses_the_shaping_monitor_logs(tokenizer):
    from memprm.callbacks.callback_config import ShapingMonitorConfig
    from memprm.callbacks.shaping_monitor import ShapingShareMonitor
    from memprm.credit import composite_rewards, reward_masses

    policy = _policy(tokenizer)
    write = _rollout([_sampled(policy, WRITE)], 1.0, credit=[0.5], shaping=[0.4])
    noop = _rollout([_sampled(policy, NOOP)], 0.0, miss=[1.0], shaping=[0.2])
    cfg = GRPOConfig(lr=2e-2, lambda0=0.5)
    module, monitor = GRPOPolicyModule(policy, cfg), ShapingShareMonitor(ShapingMonitorConfig(window=4))
    _fit(module, [[_group(write, noop)]], [monitor])
    w = cfg.weights
    parts = [composite_rewards(r.task, r.credit, r.miss, r.shaping, lam=0.5, weights=w) for r in (write, noop)]
    assert monitor.masses[-1] == pytest.approx(reward_masses(parts))  # the masses the step trained on
    by_hand = 0.5 * (0.4 + 0.2) / (w.task * 1.0 + w.credit * 0.5 + w.miss * 1.0 + 0.5 * (0.4 + 0.2))
    assert monitor.share == pytest.approx(by_hand)


@pytest.mark.parametrize("mode", ["process", "outcome"])
def test_module_advantages_reach_the_loss_as_group_advantages_computes_them(tokenizer, spy, mode):
    policy = _policy(tokenizer)
    steps = [_sampled(policy, c) for c in (WRITE, NOOP, NOOP, WRITE)]
    r0 = _rollout(steps[:2], 1.0, credit=[0.5, 0.0], shaping=[0.2, 0.4])
    r1 = _rollout(steps[2:], 0.0, miss=[1, 0], shaping=[0.0, 0.2])
    cfg = GRPOConfig(lr=1e-3, ppo_epochs=1, advantage_mode=mode, **HAND_CFG)
    module = GRPOPolicyModule(policy, cfg)
    module.shaping_lambda = 0.5  # what LambdaAnnealing would have set
    trainer = _fit(module, [_group(r0, r1)])
    totals = [composite_rewards(r.task, r.credit, r.miss, r.shaping, lam=0.5, weights=cfg.weights).total
              for r in (r0, r1)]  # fmt: skip
    expected = np.concatenate(group_advantages(totals, mode, outcomes=[1.0, 0.0]).advantages)
    assert len(spy) == 1
    np.testing.assert_allclose(spy[0][3].numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(spy[0][1].numpy(), [s.logprob for s in steps], rtol=1e-6)
    assert float(trainer.callback_metrics["grpo/lambda"]) == 0.5
    assert float(trainer.callback_metrics["reward/shaping"]) == pytest.approx(0.5 * 0.8 / 4)


def test_minibatches_split_each_ppo_epoch(tokenizer, spy):
    policy = _policy(tokenizer)
    group = _group(_rollout([_sampled(policy, WRITE)], 1.0), _rollout([_sampled(policy, NOOP)], 0.0))
    module = GRPOPolicyModule(policy, GRPOConfig(lr=1e-3, ppo_epochs=2, minibatch_size=1))
    trainer = _fit(module, [group])
    assert trainer.global_step == 4 and [len(c[3]) for c in spy] == [1, 1, 1, 1]
    for epoch in (spy[:2], spy[2:]):  # each pass visits both samples once
        assert sorted(float(c[3][0]) for c in epoch) == [-1.0, 1.0]


def _zero_advantages(monkeypatch):
    real = grpo_module.prepare_batch

    def zeroed(groups, lam, cfg, **kw):
        prep = real(groups, lam, cfg, **kw)
        return dataclasses.replace(prep, advantages=np.zeros_like(prep.advantages))

    monkeypatch.setattr(grpo_module, "prepare_batch", zeroed)


def test_kl_term_pulls_toward_the_reference_when_beta_is_positive(tokenizer, monkeypatch):
    _zero_advantages(monkeypatch)  # with A = 0 the surrogate has no gradient: only the KL term acts
    ref = {WRITE: math.log(0.9), NOOP: math.log(0.05)}

    def run(beta: float):
        policy = _policy(tokenizer)
        samples = [_sampled(policy, c, ref=ref[c]) for c in (WRITE, NOOP)]
        module = GRPOPolicyModule(policy, GRPOConfig(lr=2e-2, beta_kl=beta, ppo_epochs=3))
        before = _snapshot(module)
        trainer = _fit(module, [_group(_rollout(samples[:1], 1.0), _rollout(samples[1:], 0.0))])
        return policy, before, module, trainer

    policy, before, module, trainer = run(beta=1.0)
    start, end = _probs(_policy(tokenizer)), _probs(policy)
    assert end[WRITE] > start[WRITE] + 0.05 and end[NOOP] < start[NOOP]
    targets = torch.tensor([ref[WRITE], ref[NOOP]])
    kl = lambda p: float(kl_k3(p[[WRITE, NOOP]].log(), targets).mean())  # noqa: E731
    assert kl(end) < kl(start) and float(trainer.callback_metrics["grpo/kl"]) > 0
    policy, before, module, _ = run(beta=0.0)
    assert _unchanged(before, module)  # no advantage, no KL: exactly no update


def test_reference_state_scores_the_samples_for_the_kl_term(tokenizer, monkeypatch):
    """``fit`` passes the start policy's weights as the reference; the rollouts carry no ref log-probs."""
    policy = _policy(tokenizer)
    reference = trainable_state(policy)
    start = _probs(policy).log()
    with torch.no_grad():  # the policy has moved away from its start, as after some GRPO steps
        policy.head.weight.add_(0.3 * torch.randn_like(policy.head.weight, generator=torch.Generator().manual_seed(1)))
    moved = _snapshot(policy)
    samples = [_sampled(policy, c) for c in (WRITE, NOOP)]
    assert all(s.ref_logprob == 0.0 for s in samples)
    module = GRPOPolicyModule(policy, GRPOConfig(lr=2e-2, beta_kl=1.0, ppo_epochs=1), reference=reference)
    policy.eval()  # as training_step puts it: dropout-free log-probs
    got = module._reference_logprobs(samples).tolist()
    assert got == pytest.approx([float(start[WRITE]), float(start[NOOP])], abs=1e-5)
    assert all(torch.equal(moved[n], p.detach()) for n, p in policy.named_parameters())  # weights put back
    scored, refs = [], []
    real_score, real_loss = module._reference_logprobs, grpo_module.policy_loss
    monkeypatch.setattr(module, "_reference_logprobs", lambda s: scored.append(len(s)) or real_score(s))
    monkeypatch.setattr(grpo_module, "policy_loss", lambda lp, o, r, a, **k: refs.append(r) or real_loss(lp, o, r, a, **k))
    tied = _group(_rollout(samples[:1], 0.5), _rollout(samples[1:], 0.5))  # zero variance: skipped
    trainer = _fit(module, [[_group(_rollout(samples[:1], 1.0), _rollout(samples[1:], 0.0)), tied]])
    assert scored == [2]  # the skipped group's samples are never scored under the reference
    assert sorted(refs[0].tolist()) == pytest.approx(sorted(got), abs=1e-5)
    assert float(trainer.callback_metrics["grpo/kl"]) > 0
    with pytest.raises(ValueError, match="reference tensor 'head.weight' is not a parameter of this shape"):
        GRPOPolicyModule(policy, GRPOConfig(beta_kl=1.0), reference={"head.weight": torch.zeros(2)})


def test_module_rejects_a_non_policy():
    with pytest.raises(ValueError, match="has no log_probs"):
        GRPOPolicyModule(torch.nn.Linear(2, 2), GRPOConfig())


def test_mean_over_ranks_averages_each_key_over_the_ranks_that_carry_it():
    # rank 0 logged a loss and an llm counter, rank 1 (no kept group) only the batch-side metrics
    per_rank = [{"task/accuracy": 0.5, "grpo/loss": 2.0, "llm/failures": 1.0}, {"task/accuracy": 1.0}]
    assert mean_over_ranks(per_rank) == {"task/accuracy": 0.75, "grpo/loss": 2.0, "llm/failures": 1.0}
    assert mean_over_ranks([{}, {}]) == {}
