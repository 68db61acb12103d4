"""The critic validity checks on constructed cases with known answers (memprm/eval)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from memprm.eval import (
    DeletionCausality,
    EvalInputError,
    Metric,
    ValidityReport,
    ValidityThresholds,
    adversarial_fp_rate,
    binary_auc,
    compute_validity,
    deletion_causality,
    misattach_auc,
    miss_auc,
    ranking_spearman,
    spearman,
)


def test_spearman_with_ties_matches_hand_computation() -> None:
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]: Σdxdy = 4.5, Σdx² = 4.5, Σdy² = 5 → 4.5/√22.5 = 3/√10
    m = spearman([1, 2, 2, 3], [1, 3, 2, 4])
    assert m.value == pytest.approx(3 / math.sqrt(10), abs=1e-12) and m.sizes == (4,) and m.defined
    # ties on both sides: ranks x = [1.5, 1.5, 3.5, 3.5], y = [1, 2.5, 2.5, 4]; centred (-1, -1, 1, 1) and
    # (-1.5, 0, 0, 1.5): Σdxdy = 3, Σdx² = 4, Σdy² = 4.5 → 3/√18 = 1/√2 (ordinal ranks: 1.0)
    assert spearman([1, 1, 2, 2], [1, 2, 2, 3]).value == pytest.approx(1 / math.sqrt(2), abs=1e-12)
    assert spearman([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]).value == pytest.approx(1.0, abs=1e-12)  # no eps bias
    assert spearman([1, 2, 3], [30, 20, 10]).value == pytest.approx(-1.0)
    assert ranking_spearman([0.9, 0.1, 0.5], [1.0, 0.0, 0.3]).value == pytest.approx(1.0)


def test_spearman_undefined_is_nan_with_reason() -> None:
    const = spearman([1, 2, 3], [0.3, 0.3, 0.3])
    assert math.isnan(const.value) and not const.defined and const.sizes == (3,)
    assert const.reason == "Spearman undefined: y is constant over all 3 items"
    assert spearman([5, 5], [5, 5]).reason == "Spearman undefined: x is constant over all 2 items"  # x first
    one = spearman([1.0], [2.0])
    assert math.isnan(one.value) and "at least 2" in one.reason
    assert math.isnan(spearman([], []).value)


def test_bad_input_raises_naming_the_argument() -> None:
    with pytest.raises(EvalInputError, match="lengths 3 and 2"):
        spearman([1, 2, 3], [1, 2])
    with pytest.raises(EvalInputError, match=r"spearman\(y\): score at index 1"):
        spearman([1, 2], [0.0, math.nan])
    with pytest.raises(EvalInputError, match=r"binary_auc\(positive\): expected a 1-D"):
        binary_auc([[1.0, 2.0]], [0.0])
    with pytest.raises(EvalInputError, match="disagree"):
        Metric(math.nan, (1,))


def test_auc_perfect_reversed_ties_and_hand_computed() -> None:
    assert binary_auc([0.8, 0.9], [0.1, 0.2, 0.3]).value == 1.0
    assert binary_auc([0.1, 0.2], [0.8, 0.9]).value == 0.0
    assert binary_auc([0.5, 0.5], [0.5, 0.5, 0.5]).value == 0.5
    assert binary_auc([0.4], [0.4]).value == 0.5 and binary_auc([0.5], [0.4]).value == 1.0
    assert binary_auc([50.0, 60.0], [40.0, 55.0]).value == 0.75  # raw scores: no sigmoid squashing 50 ≈ 60
    m = binary_auc([0.9, 0.5], [0.5, 0.1])  # pairs 1, 1, ½, 1
    assert m.value == 0.875 and m.sizes == (2, 2)


def test_auc_matches_brute_force_pair_count_with_ties() -> None:
    rng = np.random.default_rng(3)
    pos, neg = rng.integers(0, 5, 17).astype(float), rng.integers(0, 5, 11).astype(float)
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    assert binary_auc(pos, neg).value == pytest.approx(wins / (17 * 11))


def test_auc_with_an_empty_class_is_nan_with_reason() -> None:
    m = binary_auc([], [0.1, 0.2])
    assert math.isnan(m.value) and "positive class is empty" in m.reason and m.sizes == (0, 2)
    assert binary_auc([0.3], []).reason == "AUC undefined: the negative class is empty"
    assert binary_auc([], []).reason == "AUC undefined: the positive class is empty"


def test_miss_and_misattach_auc_directions() -> None:
    missed, correct = [0.05, 0.1], [0.4, 0.6, 0.7]
    assert miss_auc(missed, correct).value == 1.0  # correct Noops above missed ones: higher is better
    assert miss_auc(correct, missed).value == 0.0
    assert miss_auc(missed, correct).sizes == (3, 2)  # (positives = correct, negatives = missed)
    forced, teacher = [0.2, 0.3], [0.8, 0.25]  # pairs: (0.8 > both) + (0.25 > 0.2 only) = 3 of 4
    assert misattach_auc(forced, teacher).value == 0.75


def test_adversarial_fp_rate_hand_computed() -> None:
    real = [0.1, 0.5, 0.9, 0.3]  # median 0.4
    m = adversarial_fp_rate([0.2, 0.4, 0.45, 0.95], real)  # 0.45 and 0.95 are above; 0.4 ties, not counted
    assert m.value == 0.5 and m.sizes == (4, 4)
    assert adversarial_fp_rate([0.0, 0.1], real).value == 0.0
    empty = adversarial_fp_rate([0.3], [])
    assert math.isnan(empty.value) and "no real writes" in empty.reason


CONTRIB = {f"e{i}": c for i, c in enumerate([0.20, 0.10, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])}
BASE = 0.8


def _accuracy_without(calls: list[list[str]]):
    def acc(ids: list[str]) -> float:
        calls.append(list(ids))
        return BASE - sum(CONTRIB[i] for i in ids)

    return acc


def test_deletion_causality_with_known_contributions() -> None:
    scores = {e: c + 0.001 * int(e[1:]) for e, c in CONTRIB.items()}  # a critic that tracks the contributions
    calls: list[list[str]] = []
    d = deletion_causality(scores, _accuracy_without(calls), BASE, k=2, rng_seed=7, random_repeats=5)
    assert d.top_drop == pytest.approx(30.0) and d.bottom_drop == pytest.approx(0.0) and d.k == 2
    assert calls[-2] == ["e0", "e1"] and sorted(calls[-1]) == ["e3", "e4"]  # top best first, then bottom
    assert len(calls) == 7 and all(len(set(c)) == 2 for c in calls)
    assert len(d.random_drops) == 5 and d.random_drop == pytest.approx(np.mean(d.random_drops))
    pair_drops = {round(100 * (CONTRIB[a] + CONTRIB[b]), 6) for a, b in itertools.combinations(CONTRIB, 2)}
    assert all(round(r, 6) in pair_drops for r in d.random_drops)
    assert d.top_drop > d.random_drop > d.bottom_drop and d.ordered() and d.margin() == 30.0 - d.random_drop
    again = deletion_causality(dict(reversed(scores.items())), _accuracy_without([]), BASE, 2, rng_seed=7)
    assert again == d  # deterministic given the seed, whatever the dict order
    others = {
        deletion_causality(scores, _accuracy_without([]), BASE, 2, rng_seed=s).random_drops for s in range(6)
    }
    assert len(others) > 1  # the seed does drive the random draws


def _fake_flat(calls: list[list[str]]):
    return lambda ids: calls.append(list(ids)) or 0.5


def test_deletion_ties_broken_by_entry_id() -> None:
    calls: list[list[str]] = []
    deletion_causality(dict.fromkeys(["b", "c", "a"], 0.5), _fake_flat(calls), 0.5, 2, 0, random_repeats=1)
    assert calls[-2] == ["a", "b"] and calls[-1] == ["a", "b"]


def test_deletion_causality_rejects_bad_input() -> None:
    ok = {"a": 0.1, "b": 0.2}
    with pytest.raises(EvalInputError, match=r"deletion_causality\(k\): need 1 <= k <= 2"):
        deletion_causality(ok, lambda ids: 0.5, 0.5, k=3, rng_seed=0)
    with pytest.raises(EvalInputError, match=r"\(k\)"):
        deletion_causality(ok, lambda ids: 0.5, 0.5, k=0, rng_seed=0)
    with pytest.raises(EvalInputError, match="base_accuracy"):
        deletion_causality(ok, lambda ids: 0.5, 50.0, k=1, rng_seed=0)
    with pytest.raises(EvalInputError, match="accuracy_without"):
        deletion_causality(ok, lambda ids: 1.5, 0.5, k=1, rng_seed=0)
    with pytest.raises(EvalInputError, match="entry 'a'"):
        deletion_causality({"a": math.inf, "b": 0.0}, lambda ids: 0.5, 0.5, k=1, rng_seed=0)
    with pytest.raises(EvalInputError, match="random_repeats"):
        deletion_causality(ok, lambda ids: 0.5, 0.5, k=1, rng_seed=0, random_repeats=0)


def _report(sp: float = 0.6, fp: float = 0.05, top: float = 9.0, **kw) -> ValidityReport:
    return ValidityReport(
        spearman=Metric(sp, (4,), "constant" if math.isnan(sp) else ""),
        miss_auc=Metric(0.95, (1, 1)),
        misattach_auc=Metric(0.98, (1, 1)),
        adversarial_fp=Metric(fp, (20, 2)),
        deletion=DeletionCausality(top, 2.0, 0.5, 3),
        **kw,
    )


def test_compute_validity_maps_groups_and_passes() -> None:
    r = compute_validity(
        ranking=([0.1, 0.2, 0.3, 0.4], [0.0, 0.3, 0.6, 1.0]),
        noops=([0.1, 0.2], [0.9]),  # (missed, correct)
        merges=([0.2], [0.8]),  # (forced, teacher)
        writes=([0.0] * 19 + [1.0], [0.5, 0.6]),  # (adversarial, real)
        deletion=DeletionCausality(9.0, 2.0, 0.5, 3),
        label="D5",
    )
    assert (r.spearman.value, r.miss_auc.value, r.misattach_auc.value) == (1.0, 1.0, 1.0)
    assert r.adversarial_fp.value == pytest.approx(0.05) and r.passed
    assert not compute_validity().passed  # nothing ran: no evidence of validity


def test_thresholds_fail_checks_and_nan_fails() -> None:
    strict = ValidityThresholds(min_spearman=0.7)
    assert _report().passed and not _report(thresholds=strict).passed
    assert _report(thresholds=strict).check_passed("spearman") is False
    assert not _report(fp=0.6).passed and not _report(top=2.0).passed  # fp too high; top not above random
    nan = _report(sp=math.nan)
    assert nan.check_passed("spearman") is False and not nan.passed
    partial = ValidityReport(miss_auc=Metric(0.9, (3, 3)))
    assert partial.passed and partial.check_passed("deletion") is None
    with pytest.raises(EvalInputError, match="max_adversarial_fp"):
        ValidityThresholds(max_adversarial_fp=math.nan)


def test_markdown_has_paper_values_and_marks() -> None:
    md = _report(sp=math.nan, label="LoCoMo D5").to_markdown()
    assert md.startswith("# Critic validity: LoCoMo D5") and "Overall: FAIL" in md
    for paper in ("0.639", "0.951", "0.985", "0.032", "9.6 / 2.1 / 0.8"):
        assert paper in md
    assert "NaN (constant)" in md and "**no**" in md and "9.0 / 2.0 / 0.5 (k=3)" in md
    assert "not run" in ValidityReport(miss_auc=Metric(0.9, (3, 3))).to_markdown()


def test_write_produces_json_and_markdown(tmp_path) -> None:
    r = _report(sp=math.nan)
    js, md = r.write(tmp_path / "audit")
    data = json.loads(js.read_text())
    assert data["checks"]["spearman"]["value"] is None and data["checks"]["spearman"]["reason"] == "constant"
    assert data["checks"]["miss_auc"]["paper"] == 0.951 and data["checks"]["deletion"]["top_drop"] == 9.0
    assert data["passed"] is False and md.read_text() == r.to_markdown()


def test_worse_than() -> None:
    base = _report()
    assert not base.worse_than(base, 0.0)
    assert _report(sp=0.45).worse_than(base, 0.1) and not _report(sp=0.55).worse_than(base, 0.1)
    assert not _report(sp=0.9).worse_than(base, 0.0)  # better is never worse
    assert _report(fp=0.2).worse_than(base, 0.1) and not _report(fp=0.0).worse_than(base, 0.0)
    assert _report(top=3.0).worse_than(base, 0.05)  # margin 7 → 1 point = 0.06 in accuracy fraction
    assert not _report(top=5.0).worse_than(base, 0.05)  # margin 7 → 3 point = 0.04
    assert _report(sp=math.nan).worse_than(base, 0.5) and not base.worse_than(_report(sp=math.nan), 0.0)
    assert not ValidityReport(miss_auc=Metric(0.1, (2, 2))).worse_than(ValidityReport(), 0.0)  # not in both
    with pytest.raises(EvalInputError, match="tolerance"):
        base.worse_than(base, -0.1)
