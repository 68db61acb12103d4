"""Eq. (6) presence credit, its ladder variants, chain propagation, step credit and the coverage penalty."""

import pytest

from memprm.credit import (
    AuditRecord,
    CreditConfig,
    CreditError,
    CreditVariant,
    PresenceWeights,
    Step,
    coverage_penalty,
    presence_credit,
    propagate_chain_credit,
    step_credit,
)


def rec(e, q, correct, cited, flips=None, cures=None, weight=1.0, retrieved=True):
    return AuditRecord(e, q, weight, correct, retrieved, cited, flips=flips, cures=cures)


# e1: load-bearing on q1, retrieved-only on q2 (weight 2); e2: cited, not flipping; e3: toxic; e4: retrieved
# on a wrong answer, not cited.
QUIZ = [
    rec("e1", "q1", True, True, flips=True),
    rec("e1", "q2", True, False, weight=2.0),
    rec("e2", "q1", True, True, flips=False),
    rec("e3", "q3", False, True, cures=True),
    rec("e4", "q3", False, False),
]


def rounded(d):
    return {k: round(v, 9) for k, v in d.items()}


@pytest.mark.parametrize(
    "variant, expected",
    [
        ("full", {"e1": 1.0, "e2": 0.6, "e3": -1.0, "e4": 0.0}),
        ("observational", {"e1": 0.6, "e2": 0.6, "e3": 0.0, "e4": 0.0}),
        ("flip_only", {"e1": 1.0, "e2": 0.6, "e3": 0.0, "e4": 0.0}),
        ("toxicity_only", {"e1": 0.6, "e2": 0.6, "e3": -1.0, "e4": 0.0}),
        # observational × Σ|full| / Σ|obs| = × 2.6 / 1.2
        ("matched_scale", {"e1": 1.3, "e2": 1.3, "e3": 0.0, "e4": 0.0}),
    ],
)
def test_ladder_variants_hand_computed(variant, expected):
    assert rounded(presence_credit(QUIZ, CreditConfig(variant=variant))) == expected


def test_never_retrieved_entries_get_zero_and_are_listed():
    out = presence_credit(QUIZ[:1], entry_ids=["e1", "e7"])
    assert out == {"e1": 1.0, "e7": 0.0}
    assert presence_credit([], entry_ids=["e7"]) == {"e7": 0.0}


def test_load_bearing_and_toxic_on_different_questions_cancel():
    rs = [rec("e1", "q1", True, True, flips=True), rec("e1", "q2", False, True, cures=True)]
    assert rounded(presence_credit(rs)) == {"e1": 0.0}


def test_untested_flip_counts_zero():
    # cited on a correct answer but not tested (budget): 0.3 + 0.3
    assert rounded(presence_credit([rec("e1", "q1", True, True, flips=None)])) == {"e1": 0.6}


def test_mean_aggregation_is_question_weighted():
    cfg = CreditConfig(positive="mean", toxicity="mean")
    # e1: (1.0·1 + 0.3·2) / 3
    assert round(presence_credit(QUIZ, cfg)["e1"], 9) == round(1.6 / 3, 9)
    rs = [
        rec("e1", "q1", False, True, cures=True, weight=1.0),
        rec("e1", "q2", False, True, cures=False, weight=3.0),
    ]
    assert presence_credit(rs, cfg) == {"e1": -0.25}
    assert presence_credit(rs) == {"e1": -1.0}  # any-cure


def test_share_aggregation_splits_each_correct_question_once():
    cfg = CreditConfig(positive="share")
    # q1 (weight 1): e1 1.0 and e2 0.6 split it 1/1.6 and 0.6/1.6; q2 (weight 2): e1 alone (0.3 of 0.3);
    # q3 is wrong: no positive part, e3 keeps its toxicity
    assert rounded(presence_credit(QUIZ, cfg)) == {"e1": 0.625 + 2.0, "e2": 0.375, "e3": -1.0, "e4": 0.0}


def test_share_aggregation_does_not_pay_for_more_entries():
    # the same correct answer, from one entry or from three retrieved beside it: the question pays 1 in all
    one = [rec("e1", "q1", True, True, flips=True)]
    many = one + [rec(f"x{i}", "q1", True, False) for i in range(3)]
    cfg = CreditConfig(positive="share")
    assert sum(presence_credit(one, cfg).values()) == pytest.approx(1.0)
    assert sum(presence_credit(many, cfg).values()) == pytest.approx(1.0)
    assert presence_credit(many, cfg)["e1"] == pytest.approx(1.0 / 1.9)
    assert sum(presence_credit(many).values()) == pytest.approx(1.0 + 3 * 0.3)  # max pays per entry


def test_custom_weights():
    cfg = CreditConfig(weights=PresenceWeights(retrieved=0.1, cited=0.2, flips=0.7, toxicity=0.5))
    assert rounded(presence_credit(QUIZ, cfg)) == {"e1": 1.0, "e2": 0.3, "e3": -0.5, "e4": 0.0}


def test_matched_scale_with_no_observational_mass_is_zero():
    rs = [rec("e3", "q3", False, True, cures=True)]
    assert presence_credit(rs, CreditConfig(variant=CreditVariant.MATCHED_SCALE)) == {"e3": 0.0}


def test_shuffled_flip_permutes_flips_among_tested_records():
    rs = [rec(f"e{i}", "q1", True, True, flips=(i < 2)) for i in range(6)] + [rec("e9", "q1", True, False)]
    cfg = CreditConfig(variant="shuffled_flip")
    outs = [rounded(presence_credit(rs, cfg, seed=s)) for s in range(20)]
    for out in outs:
        assert sorted(out[f"e{i}"] for i in range(6)) == [0.6] * 4 + [1.0] * 2  # two flips kept
        assert out["e9"] == 0.3  # untested records are untouched
    assert len({tuple(sorted(o.items())) for o in outs}) > 1  # the seed changes who gets the flips
    assert outs[3] == rounded(presence_credit(rs, cfg, seed=3))  # and is deterministic
    with pytest.raises(CreditError, match="needs a seed"):
        presence_credit(rs, cfg)


def test_shuffle_swaps_when_the_permutation_does():
    rs = [rec("a", "q1", True, True, flips=True), rec("b", "q1", True, True, flips=False)]
    cfg = CreditConfig(variant="shuffled_flip")
    results = {tuple(sorted(rounded(presence_credit(rs, cfg, seed=s)).items())) for s in range(10)}
    assert results == {(("a", 1.0), ("b", 0.6)), (("a", 0.6), ("b", 1.0))}


def test_repeated_entry_question_pair_raises():
    with pytest.raises(CreditError, match=r"records\[1\] repeats"):
        presence_credit([rec("e1", "q1", True, False), rec("e1", "q1", True, True)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cited=True, retrieved=False), "cited=True but retrieved=False"),
        (dict(flips=True, cited=False), "deletion test runs only"),
        (dict(flips=False, correct=False), "deletion test runs only"),
        (dict(cures=True, correct=True, cited=True), "toxicity test runs only"),
        (dict(weight=0.0), "weight must be"),
        (dict(weight=float("nan")), "weight must be"),
    ],
)
def test_audit_record_validation_names_record_and_field(kwargs, match):
    base = dict(entry_id="e1", question_id="q1", weight=1.0, correct=True, retrieved=True, cited=True)
    with pytest.raises(CreditError, match=match) as err:
        AuditRecord(**(base | kwargs))
    assert "entry_id='e1'" in str(err.value) and "question_id='q1'" in str(err.value)


def test_config_validation():
    with pytest.raises(CreditError, match="positive"):
        CreditConfig(positive="median")
    with pytest.raises(CreditError, match="toxicity"):
        CreditConfig(toxicity="max")
    with pytest.raises(ValueError):
        CreditConfig(variant="bogus")
    with pytest.raises(CreditError, match="PresenceWeights.flips"):
        PresenceWeights(flips=-0.1)
    assert CreditConfig(variant="flip_only", chain="normalized").variant is CreditVariant.FLIP_ONLY


CHAINS = {"e1": ("op1", "op3", "op5"), "e2": ("op2",), "e3": ("op4",)}


@pytest.mark.parametrize(
    "mode, evidence, expected",
    [
        ("unnormalized", None, {"op1": 0.9, "op3": 0.9, "op5": 0.9, "op2": -1.0, "op4": 0.0}),
        ("normalized", None, {"op1": 0.3, "op3": 0.3, "op5": 0.3, "op2": -1.0, "op4": 0.0}),
        ("cited_version", None, {"op1": 0.0, "op3": 0.0, "op5": 0.9, "op2": -1.0, "op4": 0.0}),
        ("cited_version", {"e1": [0, 1]}, {"op1": 0.9, "op3": 0.9, "op5": 0.0, "op2": -1.0, "op4": 0.0}),
    ],
)
def test_chain_propagation_modes(mode, evidence, expected):
    out = propagate_chain_credit({"e1": 0.9, "e2": -1.0}, CHAINS, mode, evidence_versions=evidence)
    assert rounded(out) == expected


@pytest.mark.parametrize(
    "credit, chains, evidence, match",
    [
        ({"e9": 1.0}, CHAINS, None, r"credited entries \['e9'\] have no version chain"),
        ({}, {"e1": ()}, None, "chains\\['e1'\\] is empty"),
        ({}, {"e1": ("op1",), "e2": ("op1",)}, None, "op 'op1' is on two chains"),
        ({}, CHAINS, {"e1": [3]}, "outside the chain's 3 versions"),
        ({}, CHAINS, {"e8": [0]}, "names entries \\['e8'\\]"),
    ],
)
def test_chain_propagation_errors(credit, chains, evidence, match):
    with pytest.raises(CreditError, match=match):
        propagate_chain_credit(credit, chains, "cited_version", evidence_versions=evidence)


STEPS = [
    Step("op1", "write", "event", "D1:1"),
    Step("op2", "noop", "profile", "D1:1"),
    Step("op3", "merge", "event", "D1:2"),
    Step("op4", "noop", "event", "D1:3"),
    Step("op5", "noop", "profile", "D1:3"),
]


def test_step_credit_maps_ops_and_zeroes_noops():
    assert step_credit(STEPS, {"op1": 0.6, "op3": 1.0, "op9": 0.3}).tolist() == [0.6, 0.0, 1.0, 0.0, 0.0]
    with pytest.raises(CreditError, match=r"steps\[2\] \(merge op 'op3'\) is on no version chain"):
        step_credit(STEPS, {"op1": 0.6})
    with pytest.raises(CreditError, match=r"steps\[1\] is a Noop"):
        step_credit(STEPS, {"op1": 0.6, "op2": 0.1, "op3": 1.0})


def test_coverage_penalty_only_noops_at_failed_anchors():
    assert coverage_penalty(STEPS, {"D1:1", "D1:3"}).tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]
    assert coverage_penalty(STEPS, {"D1:3"}, layers={"event"}).tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert coverage_penalty(STEPS, {"D1:2"}).tolist() == [0.0] * 5  # the Merge covered the turn
    assert coverage_penalty([], {"D1:1"}).shape == (0,)


def test_step_rejects_unknown_kind():
    with pytest.raises(CreditError, match="kind must be one of"):
        Step("op1", "delete", "event", "D1:1")


def test_online_labels_tiers_and_noops():
    from memprm.credit.online_labels import online_labels
    from memprm.credit.tiers import TierTargets
    from memprm.credit.types import AuditRecord, Step

    steps = [
        Step("w1", "write", "event", "D1:1"),
        Step("m1", "merge", "event", "D1:2"),
        Step("w2", "write", "profile", "D1:3"),
        Step("w3", "write", "event", "D1:4"),
        Step("n1", "noop", "event", "D1:5"),
        Step("n2", "noop", "profile", "D1:6"),
    ]
    recs = [
        AuditRecord("e1", "q1", 1.0, True, True, True, flips=False),  # e1 cited on a correct answer
        AuditRecord("e2", "q1", 1.0, True, True, False),
    ]  # e2 only retrieved
    chains = {"e1": ("w1", "m1"), "e2": ("w2",), "e3": ("w3",)}
    u, rr = online_labels(steps, recs, chains, failed_anchor_turns={"D1:6"}, targets=TierTargets())
    assert u.tolist() == [0.6, 0.6, 0.3, 0.0, 0.3, 0.0]  # cited, cited (chain), retrieved, inert, skip, miss
    assert rr.tolist() == [1, 1, 1, 0, 0, 0]
