"""Dialogue-level significance tests on hand-computed cases."""

import pytest

from memprm.eval.significance import paired_permutation, sign_test


def test_sign_test_exact_values_and_ties():
    assert sign_test([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]).p_value == pytest.approx(1 / 32)
    r = sign_test([1, 1, 0, 1], [0, 0, 1, 1])  # 2 wins, 1 loss, 1 tie -> n = 3: P(X >= 2) = 4/8
    assert (r.statistic, r.n, r.p_value) == (2.0, 3, 0.5)
    assert sign_test([1, 2], [1, 2]).p_value == 1.0
    with pytest.raises(ValueError, match="equal length"):
        sign_test([1, 2], [1])


def test_paired_permutation_exact():
    # differences (+1, +1, +1): the observed mean is the maximum of 8 sign patterns -> p = 1/8
    assert paired_permutation([2, 2, 2], [1, 1, 1]).p_value == pytest.approx(1 / 8)
    # differences (+1, -1): means {0, 1, -1, 0}; observed 0 -> 3 of 4 are >= 0
    assert paired_permutation([2, 1], [1, 2]).p_value == pytest.approx(3 / 4)
    big = paired_permutation([1.0] * 20, [0.0] * 20, n_perm=2000, seed=1)
    assert big.p_value < 0.01 and big.n == 20
