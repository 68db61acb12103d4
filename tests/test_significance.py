"""Dialogue-level significance tests on hand-computed cases."""

import math

import pytest

from memprm.eval.significance import clustered_interval, paired_permutation, sign_test


def test_sign_test_exact_values_and_ties():
    assert sign_test([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]).p_value == 1 / 32
    r = sign_test([1, 1, 0, 1], [0, 0, 1, 1])  # 2 wins, 1 loss, 1 tie -> n = 3: P(X >= 2) = 4/8
    assert (r.statistic, r.n, r.p_value) == (2.0, 3, 0.5)
    r = sign_test([2, 2, 2, 0, 5], [1, 1, 1, 1, 5])  # 3 wins, 1 loss, 1 tie -> P(X >= 3 | n = 4) = (4 + 1)/16
    assert (r.statistic, r.n, r.p_value) == (3.0, 4, 5 / 16)
    assert sign_test([0, 0], [1, 1]).p_value == 1.0  # no wins: P(X >= 0) = 1
    tied, empty = sign_test([1, 2], [1, 2]), sign_test([], [])  # all tied / no units: nothing to test, p = 1
    assert (tied.statistic, tied.n, tied.p_value) == (0.0, 0, 1.0)
    assert (empty.statistic, empty.n, empty.p_value) == (0.0, 0, 1.0)
    with pytest.raises(ValueError, match="equal length"):
        sign_test([1, 2], [1])


def test_paired_permutation_exact():
    # differences (+1, +1, +1): the observed mean is the maximum of 8 sign patterns -> p = 1/8
    assert paired_permutation([2, 2, 2], [1, 1, 1]).p_value == 1 / 8
    # differences (+1, -1): means {0, 1, -1, 0}; observed 0 -> 3 of 4 are >= 0
    assert paired_permutation([2, 1], [1, 2]).p_value == 3 / 4
    # one unit: the flips are d and -d
    assert [paired_permutation([a], [0]).p_value for a in (1, 0, -1)] == [0.5, 1.0, 1.0]
    # d = (0.1, 0.2, -0.3): sums 0, .6, -.4, -.2, .2, .4, -.6, 0; the all-flipped 0 is ~-6e-17 in floats and
    # still ties the observed 0 -> 5 of 8
    r = paired_permutation([0.1, 0.2, 0.0], [0.0, 0.0, 0.3])
    assert r.p_value == 5 / 8 and r.statistic == pytest.approx(0.0, abs=1e-15) and r.n == 3
    assert paired_permutation([1.0] * 16, [0.0] * 16, n_perm=10).p_value == 2.0**-16  # n <= 16: exact
    assert paired_permutation([], []).p_value == 1.0
    with pytest.raises(ValueError, match="equal length"):
        paired_permutation([[1.0]], [[0.0]])


def test_paired_permutation_monte_carlo():
    # all 20 differences +1: only the identity pattern reaches the observed mean, and 999 random flips of
    # 2^20 almost surely miss it -> p = (0 + 1) / (999 + 1); never 0, reproducible given the seed
    big = paired_permutation([1.0] * 20, [0.0] * 20, n_perm=999, seed=1)
    assert (big.p_value, big.n, big.statistic) == (1 / 1000, 20, 1.0)
    # d = (0.1, -0.1, -0.1, 0.2) x 5, mean 0.025: in tenths, 15 units of size 1 and 5 of size 2, observed sum 5.
    # A flip pattern with k of the size-1 and j of the size-2 units positive sums (2k - 15) + 2 (2j - 5) >= 5
    # iff k + 2j >= 15, so the exact p = sum C(15, k) C(5, j) / 2^20 over those (k, j) ≈ 0.2522
    hits = sum(math.comb(15, k) * math.comb(5, j) for k in range(16) for j in range(6) if k + 2 * j >= 15)
    exact = hits / 2**20
    d = ([0.3, 0.1, 0.0, 0.2] * 5, [0.2, 0.2, 0.1, 0.0] * 5)
    mc = paired_permutation(*d, n_perm=500, seed=3)
    assert mc.n == 20 and mc.statistic == pytest.approx(0.025, abs=1e-12)
    # 500 random flips: within 4 standard errors (≈ 0.078) of the exact p, on the (hits + 1) / 501 grid
    assert abs(mc.p_value - exact) < 4 * math.sqrt(exact * (1 - exact) / 500)
    assert round(mc.p_value * 501) == pytest.approx(mc.p_value * 501, abs=1e-9)
    assert paired_permutation(*d, n_perm=500, seed=3) == mc  # reproducible given the seed
    assert paired_permutation(*d, n_perm=500, seed=4).p_value != mc.p_value  # and the seed is what draws them
    exact = paired_permutation([1.0] * 17, [0.0] * 17, n_perm=2**17)  # n_perm >= 2^n: all flips, exact
    assert exact.p_value == 2.0**-17


def test_clustered_interval_hand_computed_and_edges():
    # p = 35 / 50 = 0.7; residuals c - p n = (1, -1, -2, 2, 0), Σ² = 10; se = sqrt(5/4 · 10) / 50 = 0.0707107;
    # t_4(0.975) = 2.7764451 -> half width 0.1963243
    ci = clustered_interval([8, 6, 5, 9, 7], [10, 10, 10, 10, 10])
    assert ci.estimate == pytest.approx(0.7) and ci.se == pytest.approx(0.0707107, abs=1e-7)
    assert (ci.low, ci.high) == (pytest.approx(0.5036757, abs=1e-6), pytest.approx(0.8963243, abs=1e-6))
    assert ci.clusters == 5 and ci.format() == "50.4–89.6"
    # clusters weigh by their questions: a big cluster pulls the estimate, unequal sizes enter the residuals
    assert clustered_interval([1, 30], [10, 40]).estimate == pytest.approx(31 / 50)
    # the same accuracy in every dialogue: no between-dialogue spread, a zero-width interval
    flat = clustered_interval([3, 6, 9], [4, 8, 12])
    assert (flat.se, flat.low, flat.high) == (0.0, 0.75, 0.75)
    # a wider level is wider; clipping keeps it in [0, 1]
    assert clustered_interval([8, 6, 5, 9, 7], [10] * 5, level=0.99).low < ci.low
    assert clustered_interval([10, 9], [10, 10]).high == 1.0
    # one cluster (or every other one empty) leaves the spread unknown: NaN, printed as "–"
    one = clustered_interval([3, 0], [5, 0])
    assert one.clusters == 1 and one.estimate == 0.6 and math.isnan(one.se) and one.format() == "–"
    with pytest.raises(ValueError, match="0 <= correct <= questions"):
        clustered_interval([6], [5])
    with pytest.raises(ValueError, match="equal length"):
        clustered_interval([1, 2], [3])
    with pytest.raises(ValueError, match="level"):
        clustered_interval([1, 2], [3, 3], level=1.0)
