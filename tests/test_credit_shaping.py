"""Suffix-min and sum shaping, λ(k): hand-computed cases and the paper's Appendix B properties."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memprm.credit import (
    CreditError,
    lambda_schedule,
    magnitude_ratio,
    suffix_min_shaping,
    sum_shaping,
    sum_shaping_scale,
)

P = [0.9, 0.5, 0.7, 0.2, 0.8]
NOOP = [False, False, True, False, False]


def test_suffix_min_hand_computed():
    assert suffix_min_shaping(P, NOOP).tolist() == [0.2, 0.2, 0.7, 0.2, 0.8]
    # a low Noop score does not pull the Write/Merge steps before it down
    assert suffix_min_shaping([0.6, 0.1, 0.9], [False, True, False]).tolist() == [0.6, 0.1, 0.9]
    assert suffix_min_shaping([0.4, 0.3], [True, True]).tolist() == [0.4, 0.3]
    assert suffix_min_shaping([], np.array([], dtype=bool)).shape == (0,)


def test_sum_hand_computed_and_scaled():
    assert np.allclose(sum_shaping(P, NOOP), [2.4, 1.5, 0.7, 1.0, 0.8])
    assert np.allclose(sum_shaping(P, NOOP, scale=0.5), [1.2, 0.75, 0.7, 0.5, 0.4])  # Noops unscaled


def test_magnitude_ratio_rescales_sum_to_min():
    s_min, s_sum = suffix_min_shaping(P, NOOP), sum_shaping(P, NOOP)
    r = magnitude_ratio(s_min, s_sum)
    assert r == pytest.approx(2.1 / 6.4)
    assert np.abs(s_sum * r).mean() == pytest.approx(np.abs(s_min).mean())
    with pytest.raises(CreditError, match="zero magnitude"):
        magnitude_ratio([1.0], [0.0])


@pytest.mark.timeout(60)
def test_sum_shaping_scale_hand_computed_and_zero_magnitude():
    second = ([0.4, 0.6, 0.1], [False, False, True])
    # Write/Merge steps only: suffix-min 0.2+0.2+0.2+0.8 and 0.4+0.6 = 2.4; sum 2.4+1.5+1.0+0.8 and 1.0+0.6 = 7.3
    scale = sum_shaping_scale([(P, NOOP), second])
    assert scale == pytest.approx(2.4 / 7.3)
    # the Noops (0.7, 0.1) are the same in both forms, so the mean magnitude over all 8 steps matches
    mins = np.concatenate([suffix_min_shaping(*w) for w in [(P, NOOP), second]])
    sums = np.concatenate([sum_shaping(*w, scale=scale) for w in [(P, NOOP), second]])
    assert np.abs(sums).mean() == pytest.approx(np.abs(mins).mean())
    for windows in ([([0.0, 0.5], [False, True])], [([0.3], [True])], []):
        with pytest.raises(CreditError, match="zero magnitude"):
            sum_shaping_scale(windows)
    with pytest.raises(CreditError, match="outside"):
        sum_shaping_scale([([1.5], [False])])


@pytest.mark.parametrize(
    "scores, mask, match",
    [
        ([0.5, 1.2], [False, False], r"scores\[1\] = 1.2 lies outside \[0, 1\]"),
        ([0.5, float("nan")], [False, False], "index 1 is not finite"),
        ([0.5, 0.5], [False], "is_noop must be a bool array of shape"),
        ([0.5], [0], "is_noop must be a bool array"),
    ],
)
def test_shaping_input_errors(scores, mask, match):
    with pytest.raises(CreditError, match=match):
        suffix_min_shaping(scores, mask)


def test_lambda_schedule_hand_computed_and_errors():
    assert lambda_schedule(0, 1.0, 0.2, 100) == 1.0
    assert lambda_schedule(25, 1.0, 0.2, 100) == pytest.approx(0.8)
    assert lambda_schedule(100, 1.0, 0.2, 100) == pytest.approx(0.2)
    assert lambda_schedule(10_000, 1.0, 0.2, 100) == pytest.approx(0.2)
    for bad, match in [
        ((-1, 1.0, 0.2, 100), "k"),
        ((0, 1.0, 0.2, 0), "k_decay"),
        ((0, 0.1, 0.2, 10), "lambda0"),
    ]:
        with pytest.raises(CreditError, match=match):
            lambda_schedule(*bad)


unit = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def episodes(draw, min_size=1):
    n = draw(st.integers(min_size, 12))
    scores = np.array(draw(st.lists(unit, min_size=n, max_size=n)))
    noop = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return scores, noop


@given(episodes())
def test_suffix_min_never_exceeds_own_score(ep):
    p, noop = ep
    s = suffix_min_shaping(p, noop)
    assert np.all(s <= p)
    assert np.array_equal(s[noop], p[noop])  # Noops get φ_N(x_t)


@given(episodes(), st.lists(st.floats(-1.0, 1.0), min_size=12, max_size=12))
def test_suffix_min_is_1_lipschitz(ep, delta):
    p, noop = ep
    q = np.clip(p + np.array(delta[: p.shape[0]]), 0.0, 1.0)
    gap = np.abs(suffix_min_shaping(p, noop) - suffix_min_shaping(q, noop)).max()
    assert gap <= np.abs(p - q).max() + 1e-12


def _non_bottleneck(p, noop):
    """Non-Noop steps j with p_j strictly above the minimum of the later non-Noop scores: no suffix minimum."""
    out = []
    for j in range(p.shape[0]):
        later = [p[s] for s in range(j + 1, p.shape[0]) if not noop[s]]
        if not noop[j] and later and p[j] > min(later):
            out.append(j)
    return out


@settings(max_examples=200)
@given(episodes(min_size=2), st.floats(0.01, 1.0), st.data())
def test_raising_a_non_minimum_changes_no_suffix_min_credit_but_changes_the_sum(ep, frac, data):
    p, noop = ep
    candidates = [j for j in _non_bottleneck(p, noop) if p[j] <= 0.99]
    assume(candidates)
    j = data.draw(st.sampled_from(candidates))
    q = p.copy()
    q[j] = p[j] + frac * (1.0 - p[j])
    assert np.array_equal(suffix_min_shaping(q, noop), suffix_min_shaping(p, noop))
    # the sum form credits the inflation at every non-Noop step up to j
    gain = sum_shaping(q, noop).sum() - sum_shaping(p, noop).sum()
    assert gain == pytest.approx((q[j] - p[j]) * int((~noop[: j + 1]).sum()))
    assert gain > 0


@given(
    st.floats(0.0, 5.0),
    st.floats(0.0, 5.0),
    st.floats(1.0, 1000.0),
    st.lists(st.floats(0.0, 3000.0), min_size=2, max_size=20),
)
def test_lambda_is_non_increasing_and_reaches_lambda_inf(a, b, k_decay, ks):
    lam0, lam_inf = max(a, b), min(a, b)
    values = [lambda_schedule(k, lam0, lam_inf, k_decay) for k in sorted(ks)]
    assert all(x >= y - 1e-12 for x, y in zip(values, values[1:], strict=False))
    assert all(lam_inf - 1e-12 <= v <= lam0 + 1e-12 for v in values)
    assert lambda_schedule(k_decay, lam0, lam_inf, k_decay) == pytest.approx(lam_inf)
    assert lambda_schedule(2 * k_decay + 1, lam0, lam_inf, k_decay) == lam_inf
