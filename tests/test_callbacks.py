"""The GRPO stage's callbacks: λ annealing, critic refresh and rollback, dev-checkpoint selection, shaping,
policy drift (with :mod:`memprm.eval.drift`'s maths by hand).

Scripted cases call the hooks with fake trainer / module objects; the integration cases run a real
``lightning.Trainer`` on a tiny module (a linear "policy" and a ``shaping_lambda`` attribute) fed lists of
:class:`GroupBatch` es, save a checkpoint and resume from it. The critic is a random 2-layer BERT (hidden 32)
on MiniLM's tokenizer; audits are scripted reports from :func:`memprm.eval.compute_validity`.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers.tiny_models import tiny_frozen_critic, tiny_scoring_policy
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader

from memprm.callbacks import (
    CriticRefresh,
    CriticRefreshConfig,
    DevCheckpointSelection,
    DevSelectionConfig,
    DriftMonitorConfig,
    LambdaAnnealing,
    PolicyDriftMonitor,
    ShapingMonitorConfig,
    ShapingShareMonitor,
)
from memprm.callbacks.critic_refresh import KEPT, ROLLED_BACK, SKIPPED
from memprm.callbacks.policy_drift import record_gates
from memprm.config import load_config
from memprm.credit import CreditError, RewardWeights, composite_rewards, reward_masses, shaping_share
from memprm.data.records import Dialogue
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.evaluate import evaluate_manager, greedy_manager
from memprm.env.gates import Action
from memprm.env.policy import GateSample
from memprm.env.stack import build_stack
from memprm.eval import EvalInputError, compute_validity
from memprm.eval.drift import changed_share, entropy, even_indices, greedy_choices, kl_divergence
from memprm.models.critic_data import CriticExample
from memprm.models.critic_retrain import CriticHandle, refresh_critic, with_trainable_state
from memprm.models.policy_config import LoraSettings
from memprm.models.trainable import load_trainable, trainable_state
from memprm.rollout.batches import GroupBatch, RolloutSteps

pytestmark = pytest.mark.usefixtures("one_thread")

# ---------------------------------------------------------------- doubles and builders


class FakeLogger:
    def __init__(self):
        self.rows: list[tuple[int, dict]] = []

    def log_metrics(self, metrics, step):
        self.rows.append((step, dict(metrics)))

    def values(self, name):
        return [(s, m[name]) for s, m in self.rows if name in m]


class FakeTrainer:
    def __init__(self, world_size: int = 1):
        self.global_step, self.world_size, self.is_global_zero = 0, world_size, True
        self.loggers = [FakeLogger()]
        self.strategy = SimpleNamespace(root_device=torch.device("cpu"))  # where a critic refresh trains


class FakeModule:
    def __init__(self, policy=None, weights=None):
        self.policy, self.shaping_lambda = policy, 1.0
        self.cfg = SimpleNamespace(weights=weights or RewardWeights())
        self.logged: list[tuple[str, float]] = []

    def log(self, name, value, **kwargs):
        self.logged.append((name, float(value)))


class WritePolicy(nn.Module):
    """A gate policy that acts by its weights: Write the turn when the bias is > 0, else Noop."""

    def __init__(self, bias: float = 1.0):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        nn.init.constant_(self.lin.bias, bias)

    def act(self, obs, *, greedy=False, generator=None):
        if float(self.lin.bias.detach()) > 0:
            return Action("write", obs.turn.text, "note"), GateSample(prompt=obs.turn.text)
        return Action.noop(), GateSample(prompt=obs.turn.text)


class TinyModule(LightningModule):
    """Records (global_step, shaping_lambda) at every training step; ``manual`` takes two optimizer steps."""

    def __init__(self, manual: bool = False):
        super().__init__()
        self.policy = WritePolicy()
        self.shaping_lambda = -1.0
        self.cfg = SimpleNamespace(weights=RewardWeights())
        self.automatic_optimization = not manual
        self.seen: list[tuple[int, float]] = []

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch

    def training_step(self, batch, batch_idx):
        self.seen.append((self.global_step, self.shaping_lambda))
        lam = max(self.shaping_lambda, 0.0)  # -1 until LambdaAnnealing (when present) sets it
        out = step_outputs(batch if isinstance(batch, list) else [batch], lam)
        loss = (self.policy.lin(torch.randn(8, 2)) ** 2).mean()
        if self.automatic_optimization:
            return {"loss": loss, **out}
        opt = self.optimizers()
        for _ in range(2):
            opt.zero_grad()
            self.manual_backward((self.policy.lin(torch.randn(8, 2)) ** 2).mean())
            opt.step()
        return out

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def rollout(
    texts, u=None, rr=None, task=0.5, shaping=None, credit=None, miss=None, labeled=True
) -> RolloutSteps:
    t = len(texts)
    u = np.linspace(0.0, 1.0, t) if u is None else np.asarray(u, dtype=float)
    rr = (u > 0.5).astype(int) if rr is None else np.asarray(rr)
    return RolloutSteps(
        samples=tuple(GateSample(prompt=x) for x in texts), noop=np.zeros(t, dtype=bool),
        credit=np.zeros(t) if credit is None else np.asarray(credit, dtype=float),
        miss=np.zeros(t) if miss is None else np.asarray(miss, dtype=float),
        shaping=np.full(t, 0.5) if shaping is None else np.asarray(shaping, dtype=float), task=task,
        critic_inputs=tuple(texts) if labeled else (), critic_u=u if labeled else None,
        critic_rr=rr if labeled else None,
    )  # fmt: skip


def group(*rollouts, dialogue="d1", window=1) -> GroupBatch:
    return GroupBatch(dialogue, window, tuple(rollouts), quiz_size=3, write_back=0)


def texts_at(step: int, n: int = 3) -> list[str]:
    return [f"turn {step}.{i}: Ana adopted a beagle named Biscuit | op: write pet fact {i}" for i in range(n)]


def fit(module, callbacks, max_steps, batches, ckpt_path=None) -> Trainer:
    trainer = Trainer(
        max_steps=max_steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=list(callbacks),
    )  # fmt: skip
    loader = DataLoader(batches, batch_size=None, collate_fn=lambda b: b)
    trainer.fit(module, train_dataloaders=loader, ckpt_path=ckpt_path)
    return trainer


TARGETS = [0.0, 0.25, 0.5, 1.0]
RHO = {
    0.8: [0.2, 0.1, 0.3, 0.4],
    1.0: [0.1, 0.2, 0.3, 0.4],
    -1.0: [0.4, 0.3, 0.2, 0.1],
}  # Spearman vs TARGETS


def scripted_audit(rhos):
    """An audit returning reports with the given Spearman values in turn; records the critics it was shown."""
    queue, shown = list(rhos), []

    def audit(critic):
        shown.append(critic)
        return compute_validity(ranking=(RHO[queue.pop(0)], TARGETS))

    return audit, shown


@pytest.fixture(scope="module")
def critic():
    return tiny_frozen_critic(score_batch_size=16)


REFRESH = CriticRefreshConfig(every_n_steps=2, lr=5e-3, epochs=2, batch_size=8, min_replay=4, anchor_size=4,
                              tolerance=0.25)  # fmt: skip


# ---------------------------------------------------------------- λ annealing


@pytest.mark.parametrize(("manual", "expected"), [
    (False, [(0, 1.0), (1, 0.8), (2, 0.6), (3, 0.4), (4, 0.2), (5, 0.2)]),  # one optimizer step per batch
    (True, [(0, 1.0), (2, 0.6), (4, 0.2)]),  # two per batch: a batch uses λ of its first step
])  # fmt: skip
def test_lambda_follows_the_schedule_at_the_optimizer_step(manual, expected):
    # λ(k) = 0.8·max(1 − k/4, 0) + 0.2
    module, cb = TinyModule(manual=manual), LambdaAnnealing(1.0, 0.2, 4)
    trainer = fit(module, [cb], 6, [[group(rollout(["a"]))]] * 6)
    assert [(k, round(lam, 6)) for k, lam in module.seen] == expected
    assert float(trainer.callback_metrics["anneal/lambda"]) == pytest.approx(expected[-1][1])
    assert cb.last_k == expected[-1][0]


def test_lambda_state_round_trip_and_bad_schedules():
    cb, trainer, module = LambdaAnnealing(1.0, 0.2, 4), FakeTrainer(), FakeModule()
    trainer.global_step = 3
    cb.on_train_batch_start(trainer, module, [], 0)
    assert (
        module.shaping_lambda == pytest.approx(0.4) and ("anneal/lambda", pytest.approx(0.4)) in module.logged
    )
    resumed = LambdaAnnealing(1.0, 0.2, 4)
    resumed.load_state_dict(cb.state_dict())
    assert (resumed.last_k, resumed.last_lambda) == (3, pytest.approx(0.4))
    with pytest.raises(ValueError, match="different schedule"):
        LambdaAnnealing(1.0, 0.2, 8).load_state_dict(cb.state_dict())
    with pytest.raises(CreditError, match="lambda0 >= lambda_inf"):
        LambdaAnnealing(0.1, 0.2, 4)
    with pytest.raises(ValueError, match="shaping_lambda"):
        cb.on_train_start(trainer, SimpleNamespace())


# ---------------------------------------------------------------- shaping share


def step_outputs(groups, lam: float, weights: RewardWeights | None = None) -> dict:
    """What GRPOPolicyModule.training_step returns for the monitor: the masses of the rewards at ``lam``."""
    parts = [
        composite_rewards(r.task, r.credit, r.miss, r.shaping, lam=lam, weights=weights or RewardWeights())
        for g in groups
        for r in g.rollouts
        if r.n_steps
    ]
    return {"reward_masses": reward_masses(parts)}


def test_shaping_share_over_a_window_by_hand():
    # One rollout, T = 2: R = 1 at the last step, u = [0.5, 0], miss = [0, 1], s̃ = [0.5, 0.5].
    # Masses at λ: task 1.0, credit 0.5, miss 1.0, shaping λ·1.0.
    r = rollout(["a", "b"], task=1.0, credit=[0.5, 0.0], miss=[0.0, 1.0], shaping=[0.5, 0.5])
    empty = rollout([], labeled=False)  # no gate steps: no reward, adds nothing
    cb, trainer, module = ShapingShareMonitor(ShapingMonitorConfig(window=2)), FakeTrainer(), FakeModule()
    assert cb.share == 0.0
    shares = []
    for lam in (1.0, 0.2, 0.2):
        batch = [group(r, r), group(empty)]
        cb.on_train_batch_end(trainer, module, step_outputs(batch, lam), batch, 0)
        shares.append(cb.share)
    assert shares == pytest.approx(
        [1.0 / 3.5, (1.0 + 0.2) / (3.5 + 2.7), 0.4 / 5.4]
    )  # the window drops batch 1
    same = composite_rewards(1.0, [0.5, 0.0], [0.0, 1.0], [0.5, 0.5], lam=1.0)
    assert shares[0] == pytest.approx(shaping_share([same, same]))
    assert module.logged[-1] == ("reward/shaping_share_window", pytest.approx(0.4 / 5.4))
    resumed = ShapingShareMonitor(ShapingMonitorConfig(window=2))
    resumed.load_state_dict(cb.state_dict())
    assert resumed.share == pytest.approx(cb.share)
    smaller = ShapingShareMonitor(ShapingMonitorConfig(window=1))
    smaller.load_state_dict(cb.state_dict())
    assert smaller.share == pytest.approx(0.2 / 2.7)  # keeps the most recent batch


def test_shaping_monitor_reads_the_step_outputs_and_rejects_others():
    r = rollout(["a"], task=1.0, shaping=[1.0])
    cb = ShapingShareMonitor(ShapingMonitorConfig(window=4))
    weights = RewardWeights(task=3.0)
    cb.on_train_batch_end(FakeTrainer(), FakeModule(), step_outputs([group(r)], 1.0, weights), [group(r)], 0)
    assert cb.share == pytest.approx(1.0 / 4.0)  # λ·1 / (3·1 + λ·1), λ = 1: the module's weights count
    for outputs in (None, {"loss": torch.tensor(0.0)}, {"reward_masses": (1.0, 2.0)}):
        with pytest.raises(ValueError, match="reward_masses"):
            cb.on_train_batch_end(FakeTrainer(), FakeModule(), outputs, [group(r)], 0)
    with pytest.raises(ValueError, match="field 'masses' has a row of 2 values"):
        cb.load_state_dict({"masses": [[1.0, 2.0]]})
    with pytest.raises(ValueError, match="window"):
        ShapingMonitorConfig(window=0)


# ---------------------------------------------------------------- dev-checkpoint selection

DEV = (Dialogue("dev-sel", ("a", "b"), ()),)


def test_dev_selection_keeps_the_best_and_loads_it_at_the_end(tmp_path):
    policy = nn.Linear(2, 1)
    scores = {0: 0.3, 2: 0.5, 4: 0.4, 6: 0.5}  # a tie at step 6 keeps step 2
    trainer, module = FakeTrainer(), FakeModule(policy=policy)
    calls = []

    def evaluate(p):
        calls.append((trainer.global_step, p.training, torch.is_grad_enabled()))
        return scores[trainer.global_step]

    cb = DevCheckpointSelection(evaluate, DevSelectionConfig(every_n_steps=2), tmp_path, DEV, {"test-1"})
    trainer.datamodule = SimpleNamespace(rollouts_played=0)  # a rollout datamodule: 5 rollouts per step
    cb.on_train_start(trainer, module)
    for step in range(1, 7):
        trainer.global_step = step
        trainer.datamodule.rollouts_played = 5 * step
        with torch.no_grad():
            policy.weight.fill_(float(step))  # weights that name the step they were trained to
        cb.on_train_batch_end(trainer, module, None, [], step - 1)
    cb.on_train_end(trainer, module)  # step 6 was evaluated: no extra evaluation
    assert [c[0] for c in calls] == [0, 2, 4, 6] and not any(c[1] or c[2] for c in calls)  # eval, no grad
    assert (cb.best_step, cb.best_score) == (2, 0.5)
    assert torch.all(policy.weight == 2.0)  # the best weights are loaded into the policy
    fresh = nn.Linear(2, 1)
    load_trainable(fresh, cb.best_path)
    assert torch.all(fresh.weight == 2.0)
    load_trainable(fresh, cb.last_path)  # where training ended, written before the best were loaded
    assert torch.all(fresh.weight == 6.0)
    doc = json.loads((tmp_path / "dev_selection.json").read_text())
    assert doc["best_step"] == 2 and [h["step"] for h in doc["history"]] == [0, 2, 4, 6]
    assert [h["rollouts"] for h in doc["history"]] == [0, 10, 20, 30]
    assert doc["dialogues"] == ["dev-sel"]
    log = trainer.loggers[0]
    assert log.values("dev/accuracy") == [(0, 0.3), (2, 0.5), (4, 0.4), (6, 0.5)]
    assert log.values("dev/best_accuracy") == [(6, 0.5)] and log.values("dev/best_step") == [(6, 2.0)]
    resumed = DevCheckpointSelection(evaluate, DevSelectionConfig(every_n_steps=2), tmp_path, DEV, set())
    resumed.load_state_dict(torch.load(_saved(cb.state_dict(), tmp_path), weights_only=True))
    assert (resumed.best_step, resumed.best_score, resumed.history) == (2, 0.5, cb.history)
    assert resumed.rollouts == cb.rollouts == [0, 10, 20, 30]
    other = nn.Linear(2, 1)
    resumed.on_train_end(trainer, FakeModule(policy=other))
    assert torch.all(other.weight == 2.0) and len(calls) == 4  # restored best, no new evaluation
    with pytest.raises(ValueError, match="not comparable"):
        DevCheckpointSelection(evaluate, DevSelectionConfig(), tmp_path, DEV * 2, set()).load_state_dict(
            cb.state_dict()
        )


def _saved(state, tmp_path):
    path = tmp_path / "state.pt"
    torch.save(state, path)
    return path


def test_dev_selection_step_jumps_final_evaluation_and_bad_scores(tmp_path):
    values = iter([0.2, 0.1, 0.1, 0.9])
    trainer, module = FakeTrainer(), FakeModule(policy=nn.Linear(2, 1))
    cb = DevCheckpointSelection(lambda p: next(values), DevSelectionConfig(every_n_steps=2, at_start=False),
                                tmp_path, DEV, set())  # fmt: skip
    for step in (3, 6, 7):  # manual optimization: 3 optimizer steps per batch
        trainer.global_step = step
        cb.on_train_batch_end(trainer, module, None, [], 0)
    trainer.global_step = 9
    cb.on_train_end(trainer, module)
    assert cb.history == [(3, 0.2), (6, 0.1), (9, 0.1)]  # one evaluation per crossing batch, none at 7
    cb2 = DevCheckpointSelection(lambda p: math.nan, DevSelectionConfig(), tmp_path, DEV, set())
    with pytest.raises(ValueError, match="not an accuracy"):
        cb2.on_train_start(trainer, module)


def test_dev_selection_refuses_test_dialogues(tmp_path):
    dialogues = (Dialogue("syn-003", ("a",), ()), Dialogue("syn-004", ("a",), ()))
    with pytest.raises(ValueError, match=r"\['syn-004'\] are test dialogues"):
        DevCheckpointSelection(
            lambda p: 0.0, DevSelectionConfig(), tmp_path, dialogues, {"syn-004", "syn-005"}
        )
    with pytest.raises(ValueError, match="no dialogues"):
        DevCheckpointSelection(lambda p: 0.0, DevSelectionConfig(), tmp_path, (), set())


def test_dev_selection_examines_only_dev_selection_questions(tmp_path):
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2,
                                              turns_per_session=8))  # fmt: skip
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=64"]))
    env, examined, played = stack.env, [], []
    answer, play = env.reader.answer, env.play_window
    env.reader.answer = lambda q, retrieval: examined.append(q.id) or answer(q, retrieval)
    env.play_window = lambda d, *a: played.append(d.id) or play(d, *a)
    test_ids = {d.id for d in data["test"]}
    selection = data["dev_selection"]

    def dev_accuracy(p):
        return evaluate_manager(env, selection, greedy_manager(p), progress=False).accuracy

    cb = DevCheckpointSelection(
        dev_accuracy, DevSelectionConfig(every_n_steps=2), tmp_path, selection, test_ids
    )
    fit(TinyModule(), [cb], 4, [[group(rollout(["a"]))]] * 4)
    assert [s for s, _ in cb.history] == [0, 2, 4]
    sel_q = {q.id for d in selection for q in d.questions}
    others = {q.id for k in ("dev_calibration", "test", "train") for d in data[k] for q in d.questions}
    assert examined and set(examined) <= sel_q and not set(examined) & others
    assert set(played) == {d.id for d in selection} and not set(played) & test_ids


# ---------------------------------------------------------------- critic refresh: the retraining


def _replay(n: int = 8) -> list[CriticExample]:
    good = "turn: Ana moved to Lisbon in May | op: write profile home Ana lives in Lisbon"
    bad = "turn: lol ok thanks | op: write event chat they said ok"
    return [CriticExample(f"{good if i % 2 else bad} #{i}", float(i % 2), i % 2, "d1", "online", f"op{i}")
            for i in range(n)]  # fmt: skip


ANCHORS = [
    "turn: Biscuit is three | op: merge pet Biscuit is three",
    "turn: hi | op: noop",
    "turn: Ana works at the museum | op: write job museum",
    "turn: bye | op: write chat bye",
]


def test_refresh_critic_trains_a_copy_deterministically(critic):
    replay = _replay()
    texts, u = [e.text for e in replay], np.array([e.u for e in replay])
    before = critic.score(texts)[0]
    weights = {n: p.clone() for n, p in critic.net.named_parameters()}
    cfg = CriticRefreshConfig(lr=1e-2, epochs=10, batch_size=8, lambda_anchor=0.0)
    new = refresh_critic(critic, replay, [], np.zeros(0), cfg)
    after = new.score(texts)[0]
    assert np.mean((after - u) ** 2) < np.mean((before - u) ** 2) - 0.05  # φ moved to the labels
    assert np.array_equal(critic.score(texts)[0], before)  # the original is untouched
    assert all(torch.equal(p, weights[n]) for n, p in critic.net.named_parameters())
    again = refresh_critic(critic, replay, [], np.zeros(0), cfg)
    assert np.array_equal(again.score(texts)[0], after)  # same seed, same critic
    restored = with_trainable_state(critic, trainable_state(new.net, new.net.trainable_names()))
    assert np.allclose(restored.score(texts)[0], after, atol=1e-6)
    assert not any(p.requires_grad for p in new.net.parameters()) and not new.net.training


def test_refresh_critic_anchoring_keeps_anchor_scores(critic):
    replay, offline = _replay(), critic.score(ANCHORS)[0]
    drift = {}
    for lam in (0.0, 20.0):
        cfg = CriticRefreshConfig(lr=1e-2, epochs=10, batch_size=8, lambda_anchor=lam)
        anchored = refresh_critic(critic, replay, ANCHORS, offline, cfg).score(ANCHORS)[0]
        drift[lam] = float(np.mean(np.abs(anchored - offline)))
    assert drift[20.0] < 0.5 * drift[0.0]


def test_refresh_critic_rejects_bad_inputs(critic):
    with pytest.raises(ValueError, match="replay buffer is empty"):
        refresh_critic(critic, [], ANCHORS, np.zeros(4), REFRESH)
    with pytest.raises(ValueError, match=r"shape \(3,\), expected \(4,\)"):
        refresh_critic(critic, _replay(), ANCHORS, np.zeros(3), REFRESH)
    with pytest.raises(ValueError, match="anchor set is empty"):
        refresh_critic(critic, _replay(), [], np.zeros(0), REFRESH)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        refresh_critic(critic, _replay(), ANCHORS, np.full(4, 1.5), REFRESH)


def test_critic_handle_delegates_to_the_current_critic(critic):
    handle = CriticHandle(critic)
    assert np.array_equal(handle.score(ANCHORS), critic.score(ANCHORS)[0])
    handle.critic = refresh_critic(
        critic, _replay(), [], np.zeros(0), CriticRefreshConfig(lr=1e-2, lambda_anchor=0)
    )
    assert not np.allclose(handle.score(ANCHORS), critic.score(ANCHORS)[0])


# ---------------------------------------------------------------- critic refresh: the callback


def _drive(cb, trainer, steps):
    for step in steps:
        trainer.global_step = step
        cb.on_train_batch_end(
            trainer, None, None, [group(rollout(texts_at(step)), rollout(texts_at(step, 1)))], 0
        )


def test_refresh_kept_rolled_back_and_kept_within_tolerance(critic):
    # The current critic audits at ρ = 0.8; refresh 1 reaches 1.0 (kept), refresh 2 −1.0 (rolled back),
    # refresh 3 0.8, which is within the tolerance 0.25 of the kept 1.0 (kept).
    handle, (audit, shown) = CriticHandle(critic), scripted_audit([0.8, 1.0, -1.0, 0.8])
    cb, trainer = CriticRefresh(handle, REFRESH, audit), FakeTrainer()
    _drive(cb, trainer, [1, 2])
    first = handle.critic
    assert shown[0] is critic and first is shown[1] and first is not critic
    _drive(cb, trainer, [3, 4])
    assert handle.critic is first and shown[2] is not first  # rolled back to the previous weights
    _drive(cb, trainer, [5, 6])
    assert handle.critic is shown[3] and len(shown) == 4  # the kept refresh's report served as baseline
    assert [(r.step, r.status, r.replay_size) for r in cb.history] == [
        (2, KEPT, 8), (4, ROLLED_BACK, 16), (6, KEPT, 24)]  # fmt: skip
    assert (cb.history[1].before["spearman"], cb.history[1].after["spearman"]) == (1.0, -1.0)
    log = trainer.loggers[0]
    assert log.values("critic_refresh/kept") == [(2, 1.0), (4, 0.0), (6, 1.0)]
    assert log.values("critic_refresh/after_spearman") == [(2, 1.0), (4, -1.0), (6, 0.8)]
    assert len(cb.anchor_texts) == 4 and set(cb.anchor_texts) <= {e.text for e in cb.replay}
    assert np.allclose(cb.anchor_scores, critic.score(list(cb.anchor_texts))[0])  # the offline snapshot's φ


def test_refresh_skips_small_buffers_unlabeled_rollouts_and_checks_labels(critic):
    handle, (audit, shown) = CriticHandle(critic), scripted_audit([])
    cfg = CriticRefreshConfig(every_n_steps=1, min_replay=10)
    cb, trainer = CriticRefresh(handle, cfg, audit), FakeTrainer()
    trainer.global_step = 1
    cb.on_train_batch_end(
        trainer, None, None, [group(rollout(texts_at(1)), rollout(["x"], labeled=False))], 0
    )
    assert [(r.status, r.replay_size) for r in cb.history] == [(SKIPPED, 3)] and shown == []
    assert cb.unlabeled == 1 and handle.critic is critic
    assert trainer.loggers[0].values("critic_refresh/skipped") == [(1, 1.0)]
    bad = rollout(["a", "b"], u=[0.0, 1.0], rr=[0])
    with pytest.raises(
        ValueError, match=r"group 'd1' window 1, rollout 0: 2 critic_inputs but 2 critic_u and 1"
    ):
        cb.collect([group(bad)], 2)


def test_refresh_off_needs_no_audit_and_on_needs_one(critic):
    handle = CriticHandle(critic)
    off, trainer = CriticRefresh(handle, CriticRefreshConfig(), audit=None), FakeTrainer()
    _drive(off, trainer, [200, 400])
    assert len(off.replay) == 0 and off.history == [] and handle.critic is critic
    with pytest.raises(ValueError, match="needs an audit"):
        CriticRefresh(handle, REFRESH, audit=None)
    with pytest.raises(ValueError, match="single process"):
        CriticRefresh(handle, REFRESH, scripted_audit([])[0]).on_fit_start(FakeTrainer(world_size=2), None)
    with pytest.raises(ValueError, match="min_replay"):
        CriticRefreshConfig(min_replay=10, max_replay=5)


def test_refresh_state_round_trip_restores_the_refreshed_critic(critic, tmp_path):
    handle, (audit, _) = CriticHandle(critic), scripted_audit([0.8, 1.0])
    cb, trainer = CriticRefresh(handle, REFRESH, audit), FakeTrainer()
    _drive(cb, trainer, [1, 2, 3])
    state = torch.load(_saved(cb.state_dict(), tmp_path), weights_only=True)  # as Lightning reloads it
    handle2, (audit2, shown2) = CriticHandle(critic), scripted_audit([1.0, 1.0])
    resumed = CriticRefresh(handle2, REFRESH, audit2)
    resumed.load_state_dict(state)
    restored = handle2.critic
    assert restored is not critic
    assert np.allclose(handle2.score(ANCHORS), handle.score(ANCHORS), atol=1e-6)
    assert len(resumed.replay) == len(cb.replay) == 12 and resumed.history == cb.history
    assert resumed.anchor_texts == cb.anchor_texts and np.allclose(resumed.anchor_scores, cb.anchor_scores)
    _drive(resumed, trainer, [4])
    assert shown2[0] is restored and len(shown2) == 2  # the current critic is audited again after a resume
    assert (resumed.history[-1].step, resumed.history[-1].status) == (4, KEPT) and handle2.critic is shown2[1]


# ---------------------------------------------------------------- all four in a real Trainer, with resume


def test_real_trainer_checkpoint_and_resume(critic, tmp_path):
    batches = [[group(rollout(texts_at(i)), dialogue=f"d{i}")] for i in range(8)]

    def build(dev_scores):
        handle, (audit, _) = CriticHandle(critic), scripted_audit([0.8] * 10)
        accuracies = iter(dev_scores)
        return handle, [
            LambdaAnnealing(1.0, 0.2, 4),
            ShapingShareMonitor(ShapingMonitorConfig(window=3)),
            CriticRefresh(handle, REFRESH, audit),
            DevCheckpointSelection(lambda p: next(accuracies), DevSelectionConfig(every_n_steps=2), tmp_path,
                                   DEV, {"d0"}),
        ]  # fmt: skip

    module, (_, cbs) = TinyModule(), build([0.1, 0.5, 0.3])
    trainer = fit(module, cbs, 3, batches)
    ckpt = tmp_path / "last.ckpt"
    trainer.save_checkpoint(ckpt)
    assert [s for s, _ in cbs[3].history] == [0, 2, 3] and [r.step for r in cbs[2].history] == [2]
    module2, (handle2, cbs2) = TinyModule(), build([0.6, 0.2])
    fit(module2, cbs2, 6, batches, ckpt_path=ckpt)
    assert [(k, round(lam, 6)) for k, lam in module2.seen] == [(3, 0.4), (4, 0.2), (5, 0.2)]
    lam_cb, monitor, refresh, select = cbs2
    assert lam_cb.last_k == 5 and len(monitor.masses) == 3
    assert [r.step for r in refresh.history] == [2, 4, 6] and len(refresh.replay) == 18
    assert handle2.critic is not critic  # refreshed critics all along
    assert [s for s, _ in select.history] == [0, 2, 3, 4, 6]
    assert (select.best_step, select.best_score) == (4, 0.6)


# ---------------------------------------------------------------- policy drift: the maths

LOG0 = -math.inf  # log 0: a candidate with probability 0
# three gates: one candidate; two tied candidates; three candidates. Padding holds garbage on purpose.
DRIFT_MASK = np.array([[True, False, False], [True, True, False], [True, True, True]])
DRIFT_P = np.array([[0.0, 7.0, 7.0], np.log([0.5, 0.5, 1.0]), np.log([0.2, 0.5, 0.3])])
DRIFT_Q = np.array([[0.0, -1.0, 3.0], np.log([0.25, 0.75, 1.0]), np.log([0.6, 0.2, 0.2])])


def test_drift_entropy_kl_and_changed_share_by_hand():
    # entropy: a single candidate is certain; two equal ones give log 2
    h3 = -(0.2 * math.log(0.2) + 0.5 * math.log(0.5) + 0.3 * math.log(0.3))
    assert entropy(DRIFT_P, DRIFT_MASK) == pytest.approx([0.0, math.log(2), h3])
    # identical distributions: KL exactly 0 on every gate, the one-candidate gate included
    assert kl_divergence(DRIFT_P, DRIFT_P, DRIFT_MASK).tolist() == [0.0, 0.0, 0.0]
    # KL(p || q): 0; ½ log(½/¼) + ½ log(½/¾); 0.2 log(0.2/0.6) + 0.5 log(0.5/0.2) + 0.3 log(0.3/0.2)
    kl3 = 0.2 * math.log(1 / 3) + 0.5 * math.log(2.5) + 0.3 * math.log(1.5)
    assert kl_divergence(DRIFT_P, DRIFT_Q, DRIFT_MASK) == pytest.approx([0.0, 0.143841, kl3], abs=1e-6)
    # p(c) = 0 adds nothing; q(c) = 0 where p(c) > 0 is an infinite KL
    zero_p, zero_q = np.array([[LOG0, 0.0]]), np.log([[0.5, 0.5]])
    both = np.ones((1, 2), dtype=bool)
    assert kl_divergence(zero_p, zero_q, both).tolist() == [pytest.approx(math.log(2))]
    assert kl_divergence(zero_q, zero_p, both).tolist() == [math.inf]
    # greedy choices: ties go to the lowest index, padding is never chosen (its garbage is larger)
    assert greedy_choices(DRIFT_P, DRIFT_MASK).tolist() == [0, 0, 1]
    assert greedy_choices(DRIFT_Q, DRIFT_MASK).tolist() == [0, 1, 0]
    assert changed_share(DRIFT_P, DRIFT_Q, DRIFT_MASK) == pytest.approx(2 / 3)
    assert changed_share(DRIFT_P, DRIFT_P, DRIFT_MASK) == 0.0
    assert even_indices(10, 4) == [0, 2, 5, 7] and even_indices(3, 5) == [0, 1, 2]
    assert even_indices(0, 2) == []


def test_drift_maths_reject_malformed_tables():
    with pytest.raises(EvalInputError, match="row 1 has no candidate"):
        entropy(np.zeros((2, 2)), np.array([[True, False], [False, False]]))
    with pytest.raises(EvalInputError, match=r"\[0, 1\] is nan"):
        kl_divergence(np.array([[0.0, math.nan]]), np.zeros((1, 2)), np.ones((1, 2), dtype=bool))
    with pytest.raises(EvalInputError, match="same shape"):
        changed_share(np.zeros((2, 2)), np.zeros((2, 2)), np.ones((2, 3), dtype=bool))
    with pytest.raises(EvalInputError, match="boolean mask"):
        entropy(np.zeros((1, 2)), np.ones((1, 2)))
    with pytest.raises(EvalInputError, match="k >= 1"):
        even_indices(3, 0)


# ---------------------------------------------------------------- policy drift: the monitor


@pytest.fixture(scope="module")
def dev_play():
    """The env and the dev selection dialogues of a tiny synthetic set (hashing embedder)."""
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2,
                                              turns_per_session=8))  # fmt: skip
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=64"]))
    return stack.env, data["dev_selection"]


def _drift_policy():
    # seed 2: on the dev_play gates its greedy play mixes Noop and other actions (entropy ≈ 1 nat), so a
    # policy that turns uniform (greedy = Noop) changes actions; the by-hand test checks that premise
    return tiny_scoring_policy(seed=2, head_std=0.1, lora=LoraSettings(rank=0))


def test_drift_gates_are_the_reference_greedy_play_evenly_subsampled(dev_play):
    env, dialogues = dev_play
    policy = _drift_policy()
    every = record_gates(env, dialogues, policy, max_gates=10_000)
    assert len(every) > 8 and all(g.candidates and g.view is not None for g in every)
    picked = record_gates(env, dialogues, policy, max_gates=8)
    assert picked == tuple(every[i] for i in even_indices(len(every), 8))  # deterministic, evenly spaced
    monitor = PolicyDriftMonitor(DriftMonitorConfig(batch_size=3), policy, every)  # several forwards
    # the table is the policy's distribution: log π(choice) and entropy as log_probs gives them, and the
    # greedy choice the play recorded is the table's argmax
    with torch.no_grad():
        chosen, ent = policy.log_probs(every)
    rows = np.arange(len(every))
    picks = np.array([g.choice for g in every])
    assert monitor.ref_logp[rows, picks] == pytest.approx(chosen.double().numpy(), abs=1e-5)
    assert monitor.ref_entropy == pytest.approx(float(ent.mean()), abs=1e-5)
    assert greedy_choices(monitor.ref_logp, monitor.mask).tolist() == picks.tolist()
    assert monitor.mask.sum(axis=1).tolist() == [len(g.candidates) for g in every]
    assert np.all(np.isneginf(monitor.ref_logp[~monitor.mask]))


def test_drift_monitor_logs_at_start_and_every_n_steps_by_hand(dev_play, caplog, tmp_path):
    env, dialogues = dev_play
    policy = _drift_policy()
    cfg = DriftMonitorConfig(every_n_steps=2, max_gates=12)
    monitor = PolicyDriftMonitor.from_play(cfg, policy, env, dialogues)
    resumed = PolicyDriftMonitor.from_play(cfg, policy, env, dialogues)  # built from the same reference
    other = PolicyDriftMonitor(cfg, policy, monitor.gates[:-1])  # other gates (max_gates changed)
    ref_logp, mask = monitor.ref_logp, monitor.mask
    trainer, module = FakeTrainer(), FakeModule(policy=policy)
    policy.train()
    monitor.on_train_start(trainer, module)  # step 0: the reference itself
    with torch.no_grad():  # the head zeroed: every gate uniform over its candidates
        policy.head.weight.zero_()
        policy.head.bias.zero_()
    for step in (1, 3, 4, 5):
        trainer.global_step = step
        monitor.on_train_batch_end(trainer, module, None, [], 0)
    assert policy.training  # measured in eval mode, the mode restored
    log = trainer.loggers[0]
    assert [s for s, _ in log.values("drift/kl_to_ref")] == [0, 3, 4]  # crossing 2 at 3, 4 at 4; not at 1, 5
    assert log.values("drift/ref_entropy") == [(0, monitor.ref_entropy)]  # logged once
    start = monitor.history[0]
    assert (start.step, start.action_changed) == (0, 0.0) and start.kl_to_ref == pytest.approx(0.0, abs=1e-9)
    assert start.entropy == pytest.approx(monitor.ref_entropy)
    n = mask.sum(axis=1)  # [N] candidates per gate
    uniform_kl = -np.log(n) - np.where(mask, ref_logp, 0.0).sum(axis=1) / n  # Σ_c (1/n)(log 1/n − log π_ref)
    ref_choice = np.array([g.choice for g in monitor.gates])
    assert np.any(ref_choice != 0), "premise: the reference play is not all Noop (pick another seed)"
    for rec in monitor.history[1:]:
        assert rec.entropy == pytest.approx(float(np.log(n).mean()))
        assert rec.kl_to_ref == pytest.approx(float(uniform_kl.mean()))
        assert rec.action_changed == pytest.approx(float(np.mean(ref_choice != 0)))  # uniform: greedy = Noop
    assert monitor.history[1].action_changed > 0 and monitor.history[1].kl_to_ref > 0
    assert log.values("drift/action_changed")[1] == (3, monitor.history[1].action_changed)
    # the checkpoint round trip: the history comes back, nothing is measured again at the resumed step
    resumed.load_state_dict(torch.load(_saved(monitor.state_dict(), tmp_path), weights_only=True))
    assert resumed.history == monitor.history
    trainer2 = FakeTrainer()
    trainer2.global_step = 5
    resumed.on_train_start(trainer2, module)
    resumed.on_train_batch_end(trainer2, module, None, [], 0)
    assert trainer2.loggers[0].rows == []
    trainer2.global_step = 6
    resumed.on_train_batch_end(trainer2, module, None, [], 0)
    assert [s for s, _ in trainer2.loggers[0].values("drift/entropy")] == [6]
    # a checkpoint measured on other gates is not resumed from: its history is dropped, measuring restarts
    with caplog.at_level("WARNING", logger="memprm.stages"):
        other.load_state_dict(monitor.state_dict())
    assert other.history == [] and "other gates" in caplog.text
    with pytest.raises(ValueError, match="field 'gates' is missing"):
        other.load_state_dict({"history": []})


class _CausalLike(nn.Module):
    cfg = SimpleNamespace(kind="causal")


def test_drift_monitor_refuses_the_causal_policy_and_bad_settings(dev_play):
    env, dialogues = dev_play
    with pytest.raises(ValueError, match=r"_CausalLike \(policy.kind='causal'\).*drift.enabled=false"):
        PolicyDriftMonitor.from_play(DriftMonitorConfig(), _CausalLike(), env, dialogues)
    with pytest.raises(ValueError, match="no gates"):
        PolicyDriftMonitor(DriftMonitorConfig(), _drift_policy(), ())
    for bad in ({"every_n_steps": 0}, {"max_gates": True}, {"batch_size": 1.5}, {"enabled": "yes"}):
        with pytest.raises(ValueError, match="drift."):
            DriftMonitorConfig(**bad)
    assert load_config(None, ["drift.max_gates=10"]).drift == DriftMonitorConfig(max_gates=10)
    with pytest.raises(ValueError, match="drift.every_n_steps must be an integer >= 1"):
        load_config(None, ["drift.every_n_steps=0"])


class _HeadModule(TinyModule):
    """A scoring policy whose head GRPO-like steps pull towards all-ones (so the distribution drifts)."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def training_step(self, batch, batch_idx):
        return ((self.policy.head.weight - 1.0) ** 2).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.policy.head.parameters(), lr=0.05)


def test_drift_monitor_in_a_real_trainer_with_resume(dev_play, tmp_path):
    env, dialogues = dev_play
    cfg = DriftMonitorConfig(every_n_steps=2, max_gates=10)
    batches = [[group(rollout(["a"]))]] * 6
    policy = _drift_policy()
    monitor = PolicyDriftMonitor.from_play(cfg, policy, env, dialogues)
    trainer = fit(_HeadModule(policy), [monitor], 3, batches)
    assert [r.step for r in monitor.history] == [0, 2]
    assert monitor.history[0].kl_to_ref == pytest.approx(0.0, abs=1e-9) and monitor.history[1].kl_to_ref > 0
    ckpt = tmp_path / "last.ckpt"
    trainer.save_checkpoint(ckpt)
    fresh = _drift_policy()  # the resumed stage rebuilds the reference from the SFT policy
    monitor2 = PolicyDriftMonitor.from_play(cfg, fresh, env, dialogues)
    fit(_HeadModule(fresh), [monitor2], 6, batches, ckpt_path=ckpt)
    assert [r.step for r in monitor2.history] == [0, 2, 4, 6]
    assert monitor2.history[:2] == monitor.history
    assert monitor2.history[3].kl_to_ref > monitor2.history[1].kl_to_ref  # the head kept drifting
