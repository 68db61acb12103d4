"""SFT on teacher operations, policy weight files, and the test table."""

import json

import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from memprm.config import load_config
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.evaluate import EvalResult
from memprm.env.stack import build_stack
from memprm.env.trajectories import run_trajectory
from memprm.models.sft import balance_weights, sft_loss
from memprm.models.trainable import load_trainable, save_trainable
from memprm.stages.held_out import results_table, write_results
from memprm.stages.sft_stage import (
    SFTConfig,
    action_of,
    observation_from_decision,
    run_sft_stage,
    sft_samples,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def teacher_run():
    data = generate_synthetic(SyntheticConfig(n_dialogues=2, n_train=1, n_dev=1, sessions_per_dialogue=2))
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=512"]))
    d = data["train"][0]
    return d, run_trajectory(stack.env, d, stack.teacher, stack.cache())


def test_observations_rebuilt_from_decisions(teacher_run):
    d, traj = teacher_run
    w = traj.windows[0]
    x = w.decisions[0]
    obs = observation_from_decision(d, w.window, x)
    assert obs.turn.id == x.turn_id and obs.layer == x.layer and obs.neighbours == x.neighbours
    assert obs.timestamp == d.sessions[0].datetime.isoformat()
    kinds = {action_of(x).kind for w in traj.windows for x in w.decisions}
    assert kinds <= {"noop", "write", "merge"} and "write" in kinds


def test_sft_moves_the_policy_to_the_teacher_and_weights_round_trip(teacher_run, tmp_path):
    d, traj = teacher_run
    policy = tiny_scoring_policy(seed=0, head_std=0.5)
    samples = sft_samples(policy, [traj], [d])
    assert len(samples) == sum(len(w.decisions) for w in traj.windows)
    decisions = [(w.window, x) for w in traj.windows for x in w.decisions]
    chosen = [policy.candidates(observation_from_decision(d, win, x))[s.choice].action
              for (win, x), s in zip(decisions, samples, strict=True)]  # fmt: skip
    assert chosen == [action_of(x) for _, x in decisions]  # each sample chooses exactly the teacher's action
    assert {a.kind for a in chosen} == {"noop", "write", "merge"}
    weights = balance_weights(
        [action_of(x).kind for w in traj.windows for x in w.decisions], SFTConfig().balance
    )
    with torch.no_grad():
        before = float(sft_loss(policy.eval(), samples, weights))
    losses = run_sft_stage(policy, [traj], [d], SFTConfig(steps=15, lr=5e-3, batch_size=16), tmp_path, seed=0)
    with torch.no_grad():
        after = float(sft_loss(policy.eval(), samples, weights))
    assert len(losses) == 15 and after < before  # the balanced loss (the default) over every sample fell
    saved = tmp_path / "policy_sft.pt"
    assert json.loads((tmp_path / "sft_losses.json").read_text()) == losses
    events = EventAccumulator(str(tmp_path / "tb" / "sft"))  # Lightning's TensorBoardLogger, one scalar a step
    events.Reload()
    scalars = events.Scalars("sft/loss")
    assert [e.step for e in scalars] == list(range(15))
    assert [e.value for e in scalars] == losses  # float32 losses: exact
    assert torch.load(saved).keys() == {n for n, p in policy.named_parameters() if p.requires_grad}
    fresh = tiny_scoring_policy(seed=0, head_std=0.5)
    policy.eval(), fresh.eval()  # dropout off: log-probs are compared exactly
    logp_trained = policy.log_probs(samples[:8])[0].detach()
    assert not torch.allclose(fresh.log_probs(samples[:8])[0].detach(), logp_trained)
    load_trainable(fresh, saved)
    assert torch.allclose(fresh.log_probs(samples[:8])[0].detach(), logp_trained, atol=1e-6)
    assert run_sft_stage(policy, [traj], [d], SFTConfig(steps=0), tmp_path / "none", seed=0) == []
    with pytest.raises(ValueError, match="sft.balance"):
        SFTConfig(balance=1.5)
    with pytest.raises(ValueError, match="not loaded"):
        sft_samples(policy, [traj], [])
    other = tmp_path / "other.pt"
    torch.save({"not.a.param": torch.zeros(1)}, other)
    with pytest.raises(ValueError, match=r"other\.pt: parameters \['not\.a\.param'\] are not in this"):
        load_trainable(fresh, other)
    torch.save({"head.bias": torch.zeros(7)}, other)
    with pytest.raises(ValueError, match=r"other\.pt: tensor 'head\.bias' has shape \(7,\)"):
        load_trainable(fresh, other)
    assert save_trainable(fresh, tmp_path / "again.pt").stat().st_size > 0


def test_results_table_and_files(tmp_path):
    res = {
        "teacher": EvalResult(0.5, 4, 120.0, {"single-hop": 0.5, "temporal": 0.5}, {"d1": 0.5}, 3.0, 1.5),
        "GRPO (ours)": EvalResult(
            0.75, 8, 150.0, {"single-hop": 1.0, "temporal": 0.5}, {"d1": 1.0, "d2": 0.5}, 2.0, 2.0,
            per_dialogue_questions={"d1": 4, "d2": 4}, per_dialogue_correct={"d1": 4, "d2": 2},
        ),
    }
    table = results_table(res)
    # residuals ±1 around p = 0.75: se = sqrt(2 · 2) / 8 = 0.25, t_1 = 12.7 -> the whole [0, 1]
    assert "| GRPO (ours) | 75.0 | 0.0–100.0 | 100.0 | 50.0 | 150 | 2.0 | 2.00 |" in table
    assert "| teacher | 50.0 | – |" in table  # saved without per-dialogue counts: no interval, not a guess
    assert "4 questions, 1 dialogues; 95% CI clustered by dialogue" in table
    write_results(res, tmp_path)
    assert (tmp_path / "test_results.md").read_text().startswith("### test")
    assert '"accuracy": 0.75' in (tmp_path / "test_results.json").read_text()
