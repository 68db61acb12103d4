"""The MC-rollout critic control (``critic.target=mc``): its targets, its stage key, its arm and its stage."""

import json
from pathlib import Path

import numpy as np
import pytest

from memprm.config import ConfigError, load_config, to_dict
from memprm.credit.tiers import RelabelConfig
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.managers import noop_manager
from memprm.env.stack import build_stack
from memprm.env.trajectories import run_trajectory
from memprm.fit import check_stage_one_critic, fit
from memprm.stages.markers import Markers, stage_key
from memprm.stages.mc_targets import mc_examples, mc_returns, noisy_teacher
from memprm.stages.relabel_stage import relabel_trajectory
from memprm.stages.stage_keys import stage_one_folder

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8",
    "embedder.kind=hashing", "embedder.dim=128",
]  # fmt: skip


@pytest.fixture(scope="module")
def teacher_run():
    """One train dialogue of two sessions, the offline stack and the teacher's trajectory on it."""
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2))
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=256"]))
    d = data["train"][0]
    return d, stack, run_trajectory(stack.env, d, stack.teacher, stack.cache())


class SwitchAt:
    """The teacher everywhere, except that in window ``window`` the gates after gate ``gate`` are Noops."""

    def __init__(self, teacher, window: int, gate: int):
        self.teacher, self.window, self.gate, self.seen = teacher, window, gate, 0

    def __call__(self, obs):
        if obs.window != self.window:
            return self.teacher(obs)
        self.seen += 1
        return self.teacher(obs) if self.seen <= self.gate + 1 else noop_manager(obs)


def test_a_deterministic_behaviour_gives_every_step_the_teachers_window_score(teacher_run):
    d, stack, traj = teacher_run
    steps, cost = mc_returns(stack.env, [d], [traj], 3, 3, noisy_teacher(stack.teacher, 0.0), seed=0)
    # ε = 0: every continuation is the teacher's own window again, scored by the same quiz
    score = {w.window: w.accuracy for w in traj.windows}
    windows = [w for w in traj.windows if w.quiz_size]
    assert len(windows) == 2 and len(steps) == 6 and cost.sampled_steps == 6
    assert cost.rollouts == 18 and cost.windows == 2 and cost.failed_exams == 0
    assert cost.teacher_steps == sum(len(w.steps) for w in traj.windows) and cost.seconds > 0
    for s in steps:
        assert s.returns == (score[s.window],) * 3 and s.target == pytest.approx(score[s.window])
    assert len({(s.window, s.op_id) for s in steps}) == 6
    after = {x.op_id: len(w.steps) - 1 - i for w in traj.windows for i, x in enumerate(w.steps)}
    assert cost.behaviour_gates == 3 * sum(after[s.op_id] for s in steps)
    # the examples: the audit example's text (the online rendering) and u_rr, u = the mean return, no tier
    rel = relabel_trajectory(traj, stack.embedder, RelabelConfig())
    online = {s.op_id: x for w in traj.windows for s, x in zip(w.steps, w.critic_inputs, strict=True)}
    audit = {
        lab.op_id: ex for lab, ex in zip(rel.labeled, rel.examples, strict=True) if lab.source == "teacher"
    }
    for s, ex in zip(steps, mc_examples(steps, [rel]), strict=True):
        assert ex.text == online[s.op_id] and ex.u_rr == audit[s.op_id].u_rr
        assert (ex.u, ex.tier, ex.kind, ex.op_id) == (s.target, "", "mc_rollout", s.op_id)


def test_the_target_is_the_mean_of_continuations_that_differ(teacher_run):
    d, stack, traj = teacher_run
    plays, gates = [], []

    def alternate(seed):  # continuation k of each step: the teacher for even k, Noops for odd k
        plays.append(seed)
        manager = stack.teacher if len(plays) % 2 else noop_manager
        return lambda obs: gates.append(obs) or manager(obs)

    steps, cost = mc_returns(stack.env, [d], [traj], 2, 2, alternate, seed=3)
    assert len(steps) == 4 and cost.rollouts == len(plays) == 8
    assert cost.behaviour_gates == len(gates) > 0  # the gates after each sampled one, in every continuation
    assert len(set(plays)) == 8  # every continuation has its own behaviour seed
    teacher_score = {w.window: w.accuracy for w in traj.windows}
    differ = 0
    for s in steps:
        window = next(w for w in traj.windows if w.window == s.window)
        gate = [x.op_id for x in window.steps].index(s.op_id)
        # the Noop continuation, recomputed from scratch: a fresh walk of the dialogue with that manager
        redo = run_trajectory(stack.env, d, SwitchAt(stack.teacher, s.window, gate), stack.cache())
        noop_score = next(w.accuracy for w in redo.windows if w.window == s.window)
        assert s.returns == pytest.approx((teacher_score[s.window], noop_score))
        assert s.target == pytest.approx((teacher_score[s.window] + noop_score) / 2)
        differ += noop_score != teacher_score[s.window]
    assert differ >= 1  # the case is not degenerate: some continuations do score differently


def test_sampling_and_seeds_are_fixed_by_the_seed(teacher_run):
    d, stack, traj = teacher_run
    behaviour = noisy_teacher(stack.teacher, 0.5)
    a, _ = mc_returns(stack.env, [d], [traj], 2, 2, behaviour, seed=1)
    b, _ = mc_returns(stack.env, [d], [traj], 2, 2, behaviour, seed=1)
    c, _ = mc_returns(stack.env, [d], [traj], 2, 2, behaviour, seed=2)
    assert a == b and [s.op_id for s in a] != [s.op_id for s in c]
    assert all(0.0 <= r <= 1.0 for s in a for r in s.returns)


def test_the_mc_critic_has_its_own_stage_key_and_the_audit_key_is_unchanged():
    audit = load_config(None)
    key = stage_key(audit, "critic")
    assert "target" not in key.config["critic"] and "mc_continuations" not in key.config["critic"]
    # MC settings cannot change an audit critic: they stay out of its key
    assert stage_key(load_config(None, ["critic.mc_continuations=9"]), "critic").digest == key.digest
    mc = stage_key(load_config(None, ["critic.target=mc"]), "critic")
    assert mc.digest != key.digest and mc.config["critic"]["target"] == "mc"
    for change in ("critic.mc_continuations=8", "critic.mc_steps_per_window=1", "critic.mc_epsilon=0.1"):
        other = stage_key(load_config(None, ["critic.target=mc", change]), "critic")
        assert other.digest not in (mc.digest, key.digest), change
    with pytest.raises(ConfigError, match="mc_continuations"):
        load_config(None, ["critic.mc_continuations=0"])
    with pytest.raises(ConfigError, match="critic.target"):
        load_config(None, ["critic.target=replay"])


def _leaves(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out |= _leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v}
    return out


def test_the_arm_is_ours_with_mc_targets():
    ours = _leaves(to_dict(load_config(ROOT / "configs" / "arms" / "ours.yaml")))
    arm = load_config(ROOT / "configs" / "arms" / "mc_critic.yaml")
    got = _leaves(to_dict(arm))
    assert {k: got[k] for k in got if got[k] != ours[k]} == {"arm": "mc_critic", "critic.target": "mc"}
    assert (arm.critic.mc_steps_per_window, arm.critic.mc_continuations, arm.critic.mc_epsilon) == (3, 4, 0.3)


def test_a_stage_one_folder_with_an_audit_critic_is_not_reused_by_an_mc_run(tmp_path):
    other = tmp_path / "ours-seed0"
    Markers(other).write(stage_key(load_config(None), "critic"))
    (other / "critic").mkdir()
    (other / "critic" / "critic.json").write_text("{}")  # what has_critic looks for
    run = tmp_path / "mc_critic-seed0"
    same = load_config(None, [f"fit.stage_one_dir={other}"])
    mc = load_config(None, [f"fit.stage_one_dir={other}", "critic.target=mc"])
    assert stage_one_folder(same, run) == other and stage_one_folder(mc, run) == run
    assert stage_one_folder(load_config(None, ["critic.target=mc"]), run) == run
    shaped = ["fit.stages=[grpo]", f"fit.stage_one_dir={other}"]
    check_stage_one_critic(load_config(None, shaped))  # same targets: reused
    with pytest.raises(ConfigError, match="trained with {'target': 'audit'}"):
        check_stage_one_critic(load_config(None, [*shaped, "critic.target=mc"]))


@pytest.mark.slow
def test_the_critic_stage_with_mc_targets_end_to_end(tmp_path):
    cfg = load_config(
        None,
        [*TINY, f"output_dir={tmp_path}", "fit.run_name=mc", "fit.stages=[critic]", "critic.target=mc",
         "critic.mc_steps_per_window=2", "critic.mc_continuations=3", "critic.max_epochs=1"],
    )  # fmt: skip
    res = fit(cfg)
    c, folder = res.critic, tmp_path / "mc" / "critic"
    cost = c.mc_cost
    assert cost["rollouts"] == 3 * cost["sampled_steps"] > 0 and cost["seconds"] > 0
    assert c.n_train == cost["sampled_steps"] <= 2 * cost["windows"]  # sampled steps only, no counterfactuals
    assert c.report is not None and c.n_val > 0  # the validity audit ran on the dev audit labels
    saved = json.loads((folder / "mc_targets.json").read_text())
    assert saved["cost"] == cost and len(saved["steps"]) == cost["sampled_steps"]
    for s in saved["steps"]:
        assert len(s["returns"]) == 3 and s["target"] == pytest.approx(np.mean(s["returns"]))
    assert (folder / "critic.json").is_file() and (folder / "validity" / "report.md").is_file()
    phi, _ = c.critic.score(["operation: WRITE layer: event\ncontent: Ana ran a marathon"])
    assert 0.0 <= phi[0] <= 1.0
    marker = json.loads((tmp_path / "mc" / "stages" / "critic.json").read_text())
    assert marker["config"]["critic"]["target"] == "mc"
    again = fit(cfg)  # done under this config: reused, its cost read back
    assert again.critic.report is None and again.critic.mc_cost == cost
