"""Composite rewards, the shaping share, GRPO group advantages, and the whole online chain on one group."""

import doctest
import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import memprm.credit
from memprm.credit import (
    AuditRecord,
    CreditError,
    GroupStatus,
    RewardWeights,
    Step,
    composite_rewards,
    coverage_penalty,
    group_advantages,
    lambda_schedule,
    noop_mask,
    presence_credit,
    propagate_chain_credit,
    shaping_share,
    step_credit,
    suffix_min_shaping,
)


def test_composite_rewards_components_hand_computed():
    b = composite_rewards(
        0.75, [0.6, 0.0, 1.0], [0, 1, 0], [0.2, 0.4, 0.2], lam=0.5, weights=RewardWeights(2.0, 0.5, 3.0)
    )
    assert b.task.tolist() == [0.0, 0.0, 1.5]  # w_task·R at the last step only
    assert b.credit.tolist() == [0.3, 0.0, 0.5]
    assert b.miss.tolist() == [0.0, -3.0, 0.0]
    assert b.shaping.tolist() == [0.1, 0.2, 0.1]
    assert np.allclose(b.total, [0.4, -2.8, 2.1])
    assert shaping_share(b) == pytest.approx(0.4 / (1.5 + 0.8 + 3.0 + 0.4))
    assert shaping_share([b, b]) == pytest.approx(shaping_share(b))


def test_single_step_rollout_and_zero_mass_share():
    b = composite_rewards(0.0, [0.0], [0.0], [0.0], lam=0.0)
    assert b.total.tolist() == [0.0] and shaping_share(b) == 0.0


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((1.5, [0.0], [0.0], [0.0]), dict(lam=0.1), r"R must lie in \[0, 1\]"),
        ((0.5, [], [], []), dict(lam=0.1), "at least one step"),
        ((0.5, [0.0, 0.0], [0.0], [0.0, 0.0]), dict(lam=0.1), "miss: expected 2 values"),
        ((0.5, [0.0], [0.0], [float("inf")]), dict(lam=0.1), "shaping: value at index 0 is not finite"),
        ((0.5, [0.0], [0.0], [0.0]), dict(lam=-1.0), "lam"),
    ],
)
def test_composite_rewards_errors(args, kw, match):
    with pytest.raises(CreditError, match=match):
        composite_rewards(*args, **kw)
    with pytest.raises(CreditError, match="RewardWeights.miss"):
        RewardWeights(miss=-1.0)


def test_process_advantages_hand_computed():
    # all steps: [1, 0, 0, 0, 1] → mean 0.4, std √0.24; r̃(1) = 0.6/√0.24, r̃(0) = −0.4/√0.24
    g = group_advantages([[1.0, 0.0], [0.0, 0.0, 1.0]])
    hi, lo = 0.6 / np.sqrt(0.24), -0.4 / np.sqrt(0.24)
    assert g.status is GroupStatus.OK and not g.skip
    assert np.allclose(g.advantages[0], [hi + lo, lo])
    assert np.allclose(g.advantages[1], [2 * lo + hi, lo + hi, hi])
    assert (g.mean, g.std) == pytest.approx((0.4, np.sqrt(0.24)))


def test_gate_advantages_hand_computed():
    # returns to go [[1, 0], [1, 1], [0, 0]]; per-gate means [2/3, 1/3]; centred values have mean square 2/9
    g = group_advantages([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], "gate")
    s = np.sqrt(2 / 9)
    assert g.status is GroupStatus.OK
    assert np.allclose(np.stack(g.advantages), np.array([[1, -1], [1, 2], [-2, -1]]) / 3 / s)
    assert np.allclose(np.sum(g.advantages, axis=0), 0.0)  # each gate's advantages sum to zero


def test_gate_mode_has_no_offset_that_grows_with_the_steps_left():
    """R paid at the last step only: ``process`` lifts the late gates of *every* rollout alike (one mean per
    step, summed over the suffix: the worse rollout's last action gets +4.4), ``gate`` gives each rollout its
    contrast alone, the same at every gate."""
    rewards = [np.r_[np.zeros(49), 1.0], np.r_[np.zeros(49), 0.5]]
    process, gate = group_advantages(rewards), group_advantages(rewards, "gate")
    assert process.advantages[1][-1] > 4 and process.advantages[1][0] < -2  # same action, sign by position
    assert np.allclose(gate.advantages[0], 1.0) and np.allclose(gate.advantages[1], -1.0)


def test_outcome_advantages_hand_computed():
    g = group_advantages([[0.3, 0.1], [0.0], [5.0, 1.0, 2.0]], "outcome", outcomes=[1.0, 0.5, 0.0])
    z = 0.5 / np.sqrt(1 / 6)
    assert np.concatenate(g.advantages).tolist() == pytest.approx([z, z, 0.0, -z, -z, -z])
    assert [a.shape for a in g.advantages] == [(2,), (1,), (3,)]


@pytest.mark.parametrize(
    "rewards, mode, outcomes, status",
    [
        ([[0.5, 0.5], [0.5]], "process", None, GroupStatus.ZERO_VARIANCE),
        ([[0.2, 0.9], [0.2, 0.9], [0.2, 0.9]], "process", None, GroupStatus.IDENTICAL_ROLLOUTS),
        ([[0.2, 0.9]], "process", None, GroupStatus.IDENTICAL_ROLLOUTS),  # a group of one has no contrast
        ([[0.1], [0.7, 0.2]], "outcome", [0.6, 0.6], GroupStatus.ZERO_VARIANCE),
        ([[0.2, 0.9], [0.2, 0.9]], "gate", None, GroupStatus.IDENTICAL_ROLLOUTS),
        ([[0.2, 0.9]], "gate", None, GroupStatus.ZERO_VARIANCE),
    ],
)
def test_groups_without_contrast_are_flagged_with_zero_advantages(rewards, mode, outcomes, status):
    g = group_advantages(rewards, mode, outcomes=outcomes)
    assert g.status is status and g.skip
    assert [a.tolist() for a in g.advantages] == [[0.0] * len(r) for r in rewards]


def test_identical_within_eps_is_still_a_contrast_beyond_it():
    assert group_advantages([[0.2, 0.9], [0.2, 0.9 + 1e-3]]).status is GroupStatus.OK


@pytest.mark.parametrize(
    "rewards, mode, outcomes, match",
    [
        ([], "process", None, "the group is empty"),
        ([[0.1], []], "process", None, "rollout 1 has no steps"),
        ([[0.1], [0.2, float("nan")]], "process", None, "rollout 1, step 1"),
        ([[0.1], [0.2]], "outcome", [0.1], "one outcome per rollout"),
        ([[0.1], [0.2]], "outcome", None, "one outcome per rollout"),
        ([[0.1], [0.2]], "outcome", [0.1, float("inf")], r"outcomes\[1\] \(rollout 1\)"),
        ([[0.1], [0.2]], "reinforce", None, "mode must be"),
        ([[0.1], [0.2, 0.3]], "gate", None, "same gates"),
        ([[[0.1]], [0.2]], "process", None, "rollout 0: rewards must be 1-D"),
    ],
)
def test_group_errors_name_the_rollout(rewards, mode, outcomes, match):
    with pytest.raises(CreditError, match=match):
        group_advantages(rewards, mode, outcomes=outcomes)


@given(
    st.integers(2, 6),
    st.integers(1, 8),
    st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
)
def test_outcome_advantages_sum_to_zero_per_step_when_lengths_are_equal(g, t, outcomes):
    adv = group_advantages([np.zeros(t)] * g, "outcome", outcomes=outcomes[:g]).advantages
    assert np.allclose(np.sum(adv, axis=0), 0.0, atol=1e-9)


@given(st.lists(st.lists(st.floats(-3.0, 3.0), min_size=1, max_size=6), min_size=2, max_size=5))
def test_process_normalized_rewards_sum_to_zero(rollouts):
    g = group_advantages(rollouts)
    # A_0 of each rollout is the sum of its normalized rewards; over the group they sum to zero
    assert abs(sum(a[0] for a in g.advantages)) <= 1e-6 * max(1, sum(len(r) for r in rollouts))


def test_online_chain_on_one_group():
    """Audit records → entry credit → op credit → step credit, miss, shaping → rewards → advantages."""
    steps = [
        Step("op1", "write", "event", "D1:1"),
        Step("op2", "noop", "profile", "D1:1"),
        Step("op3", "merge", "event", "D1:2"),
        Step("op4", "noop", "event", "D1:3"),
    ]
    chains = {"e1": ("op1", "op3"), "v1": ("op0",)}
    records = [AuditRecord("e1", "q1", 1.0, True, True, True, flips=True)]
    u = step_credit(steps, propagate_chain_credit(presence_credit(records), chains))
    assert u.tolist() == [1.0, 0.0, 1.0, 0.0]
    miss = coverage_penalty(steps, {"D1:3"})
    s = suffix_min_shaping([0.8, 0.4, 0.6, 0.3], noop_mask(steps))
    assert s.tolist() == [0.6, 0.4, 0.6, 0.3]
    lam = lambda_schedule(0, 0.5, 0.2, 10)
    good = composite_rewards(1.0, u, miss, s, lam=lam)
    assert np.allclose(good.total, [1.3, 0.2, 1.3, 1.0 - 1.0 + 0.15])
    bad = composite_rewards(0.0, np.zeros(4), miss, s, lam=lam)
    g = group_advantages([good.total, bad.total])
    assert g.status is GroupStatus.OK
    assert all(a > b for a, b in zip(g.advantages[0], g.advantages[1], strict=True))


@pytest.mark.parametrize(
    "module",
    [
        "types",
        "presence",
        "chains",
        "tiers",
        "clusters",
        "relabel",
        "shaping",
        "reward",
        "advantage",
        "online_labels",
    ],
)
def test_docstring_examples_hold(module):
    m = importlib.import_module(f"memprm.credit.{module}")
    result = doctest.testmod(m, extraglobs=vars(memprm.credit), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if module != "types":
        assert result.attempted > 0
