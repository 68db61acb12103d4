"""Offline hindsight relabeling: tiers, content clusters, counterfactual negatives, decision-time-only fields."""

import dataclasses

import pytest

from memprm.credit import (
    AuditRecord,
    CreditError,
    EntryOutcome,
    LabeledExample,
    Neighbour,
    RelabelConfig,
    RelabelCounts,
    TeacherDecision,
    Tier,
    TierTargets,
    entry_outcomes,
    relabel_tiers,
)

DOG = "Ana adopted a dog named Biscuit"
PORTO, LISBON = "Ana lives in Porto", "Ana moved to Lisbon"


def dec(op_id, kind, layer, turn, content=None, target=None, neighbours=(), key="", informative=True):
    return TeacherDecision(
        op_id, kind, layer, turn, f"text of {turn}", context_turns=(f"before {turn}",), content=content,
        key=key, target_entry_id=target, neighbours=tuple(neighbours), turn_is_informative=informative,
    )  # fmt: skip


TRAJ = [
    dec("op0", "write", "event", "D1:1", DOG, "e1"),
    dec("op1", "noop", "profile", "D1:1"),
    dec("op2", "write", "profile", "D1:2", PORTO, "e2", [Neighbour("e1", "event", DOG)], key="city"),
    dec("op3", "noop", "event", "D1:3", informative=False),
    dec("op4", "merge", "profile", "D2:1", LISBON, "e2",
        [Neighbour("e2", "profile", PORTO), Neighbour("v7", "verbatim", "Ana: I moved!")]),
    dec("op5", "write", "event", "D2:2", "Ana has a dog called Biscuit", "e3", [Neighbour("e1", "event", DOG)]),
    dec("op6", "write", "profile", "D2:3", "Ana lives in Lisbon now", "e4",
        [Neighbour("e2", "profile", f"{PORTO} | {LISBON}")], key="city"),
    dec("op7", "write", "event", "D2:4", "Ana starts pottery", "e5",
        [Neighbour("e3", "event", "Ana has a dog called Biscuit")]),
    dec("op8", "noop", "event", "D2:5"),
]  # fmt: skip
EMB = {
    "op0": [1.0, 0.0, 0.0, 0.0],
    "op2": [0.0, 1.0, 0.0, 0.0],
    "op4": [0.0, 0.8, 0.6, 0.0],
    "op5": [0.99, 0.141, 0.0, 0.0],  # cos 0.99 with op0: a copy in another entry
    "op6": [0.0, 0.0, 1.0, 0.0],  # cos 0 with op2 but the same key: a contradictory copy
    "op7": [0.0, 0.0, 0.0, 1.0],
}
OUTCOMES = {
    "e1": EntryOutcome("e1", retrieved=True, cited_correct=False, flipped=False),
    "e2": EntryOutcome("e2", retrieved=True, cited_correct=True, flipped=False),
    "e3": EntryOutcome("e3", retrieved=True, cited_correct=True, flipped=True),
    "e4": EntryOutcome("e4", retrieved=True, cited_correct=False, flipped=False),
}  # e5 has no outcome: never retrieved


def run(decisions=TRAJ, outcomes=OUTCOMES, **kw):
    return relabel_tiers(decisions, outcomes, EMB, failed_anchor_turns={"D2:5"}, **kw)


def test_tiers_clusters_and_counterfactuals_hand_computed():
    res = run()
    got = [(x.op_id, x.source, x.tier, x.target, x.u_rr) for x in res.examples]
    assert got == [
        ("op0", "teacher", Tier.LOAD_BEARING, 1.0, 1),  # earliest writer inherits op5's load-bearing tier
        ("op0:cf_noop", "cf_noop_miss", Tier.MISS, 0.0, 0),
        ("op1", "teacher", Tier.SKIP, 0.3, 0),
        ("op2", "teacher", Tier.CITED_NON_FLIPPING, 0.6, 1),
        ("op3", "teacher", Tier.SKIP, 0.3, 0),
        ("op3:cf_write", "cf_uninformative_write", Tier.INERT, 0.0, 0),
        ("op4", "teacher", Tier.CITED_NON_FLIPPING, 0.6, 1),  # an update of its own entry: not a copy
        ("op5", "teacher", Tier.DUPLICATE, 0.1, 1),  # later copy: load-bearing capped at duplicate
        ("op6", "teacher", Tier.DUPLICATE, 0.1, 1),  # same key, other content: still a copy
        ("op7", "teacher", Tier.INERT, 0.0, 0),
        ("op7:cf_merge", "cf_forced_merge", Tier.INERT, 0.0, 0),
        ("op8", "teacher", Tier.MISS, 0.0, 0),  # its turn anchors a failed probe
    ]
    assert res.counts == RelabelCounts(
        teacher=9, cf_noop_miss=1, cf_uninformative_write=1, cf_forced_merge=1,
        forced_merge_skipped_no_neighbour=2, forced_merge_skipped_copy=2, copies_penalized=2, earliest_promoted=1,
    )  # fmt: skip


def test_counterfactual_examples_have_the_teacher_context():
    by_id = {x.op_id: x for x in run().examples}
    noop = by_id["op0:cf_noop"]
    assert (noop.kind, noop.content, noop.target_entry_id, noop.origin_op_id) == ("noop", None, None, "op0")
    assert (noop.turn_text, noop.context_turns, noop.layer) == ("text of D1:1", ("before D1:1",), "event")
    write = by_id["op3:cf_write"]
    assert (write.kind, write.content, write.target_entry_id) == ("write", "text of D1:3", None)
    merge = by_id["op7:cf_merge"]
    assert (merge.kind, merge.content, merge.target_entry_id) == ("merge", "Ana starts pottery", "e3")
    assert merge.target_chain == ("Ana has a dog called Biscuit",)
    assert merge.neighbours == TRAJ[7].neighbours


def test_same_key_rule_can_be_switched_off():
    res = run(config=RelabelConfig(same_key_is_copy=False))
    tiers = {x.op_id: x.tier for x in res.examples}
    assert tiers["op6"] is Tier.NOVEL_UNCITED and res.counts.copies_penalized == 1


def test_threshold_controls_clusters():
    tiers = {x.op_id: x.tier for x in run(config=RelabelConfig(cluster_threshold=0.995)).examples}
    assert tiers["op0"] is Tier.NOVEL_UNCITED and tiers["op5"] is Tier.LOAD_BEARING


def test_inert_copy_stays_inert_and_targets_follow_config():
    outcomes = {"e1": OUTCOMES["e1"], "e4": OUTCOMES["e4"]}  # e3 (op5) and e2 (op2) never retrieved
    targets = TierTargets(inert=0.0, duplicate=0.2, novel_uncited=0.4, cited_non_flipping=0.7, skip=0.5)
    by_id = {x.op_id: x for x in run(outcomes=outcomes, config=RelabelConfig(targets=targets)).examples}
    assert by_id["op5"].tier is Tier.INERT and by_id["op0"].tier is Tier.NOVEL_UNCITED
    assert (by_id["op0"].target, by_id["op1"].target, by_id["op6"].target) == (0.4, 0.5, 0.2)
    assert by_id["op2"].tier is Tier.NOVEL_UNCITED and by_id["op2"].u_rr == 0  # promoted by its copy op6


def test_labeled_example_fields_are_decision_time_plus_labels():
    labels = {"tier", "target", "u_rr", "source", "origin_op_id"}
    features = {f.name for f in dataclasses.fields(LabeledExample)} - labels
    assert features == {
        "op_id", "kind", "layer", "turn_id", "turn_text", "context_turns", "content", "key",
        "target_entry_id", "target_chain", "neighbours",
    }  # fmt: skip


def _features(x: LabeledExample) -> tuple:
    return tuple(
        getattr(x, f.name) for f in dataclasses.fields(x) if f.name not in ("tier", "target", "u_rr")
    )


def test_no_later_event_leaks_into_an_example():
    full = run()
    by_id = {x.op_id: x for x in full.examples}
    # the Merge sees the chain as it was: one version, although e2 ends with two (and is later cited)
    assert by_id["op4"].target_chain == (PORTO,)
    assert by_id["op2"].target_chain == () and by_id["op0"].neighbours == ()
    # cutting the trajectory after each decision changes no decision-time field of the examples before it
    for k in range(1, len(TRAJ) + 1):
        prefix = run(decisions=TRAJ[:k])
        kept = [x for x in full.examples if x.origin_op_id in {d.op_id for d in TRAJ[:k]}]
        assert [_features(x) for x in prefix.examples if x.source == "teacher"] == [
            _features(x) for x in kept if x.source == "teacher"
        ]
    # later retrieval and citation change labels only
    never = run(outcomes={})
    assert [_features(x) for x in never.examples if x.source == "teacher"] == [
        _features(x) for x in full.examples if x.source == "teacher"
    ]
    assert {x.tier for x in never.examples if x.source == "teacher" and x.kind != "noop"} == {Tier.INERT}


def test_neighbour_written_later_is_a_leak():
    bad = list(TRAJ)
    bad[2] = dec("op2", "write", "profile", "D1:2", PORTO, "e2", [Neighbour("e3", "event", "x")])
    with pytest.raises(CreditError, match=r"decisions\[2\] \(op2\) neighbour 'e3' is written later"):
        run(decisions=bad)


def test_neighbour_text_with_a_later_version_is_a_leak():
    bad = list(TRAJ)
    bad[4] = dec(
        "op4", "merge", "profile", "D2:1", LISBON, "e2", [Neighbour("e2", "profile", f"{PORTO} {LISBON}")]
    )
    with pytest.raises(CreditError, match="a version written at or after the decision"):
        run(decisions=bad)


def test_uninformative_noop_with_empty_text_is_counted_not_written():
    traj = [TeacherDecision("op0", "noop", "event", "D3:1", "  ", turn_is_informative=False)]
    res = relabel_tiers(traj, {}, {})
    assert [x.source for x in res.examples] == ["teacher"]
    assert res.counts.uninformative_write_skipped_empty_turn == 1 and res.counts.cf_uninformative_write == 0


def test_initial_chains_and_unknown_entries():
    traj = [dec("op0", "merge", "event", "D3:1", "Biscuit is two", "e0", [Neighbour("e0", "event", DOG)])]
    res = relabel_tiers(traj, {}, {"op0": [1.0]}, initial_chains={"e0": (DOG,)})
    assert res.examples[0].target_chain == (DOG,)
    with pytest.raises(CreditError, match="merges into entry 'e0', which does not exist"):
        relabel_tiers(traj, {}, {"op0": [1.0]})
    unknown = [dec("op0", "noop", "event", "D3:1", neighbours=[Neighbour("e9", "event", "?")])]
    with pytest.raises(CreditError, match="'e9' is written nowhere"):
        relabel_tiers(unknown, {}, {})


@pytest.mark.parametrize(
    "traj, emb, match",
    [
        ([dec("op0", "write", "event", "t", "x", "e1")], {}, "no vector for content op 'op0'"),
        ([dec("op0", "write", "event", "t", "x", "e1")], {"op0": [0.0, 0.0]}, "finite non-zero"),
        ([dec("op0", "write", "event", "t", "x", "e1"), dec("op0", "noop", "event", "t")], {"op0": [1]}, "repeats"),
        ([dec("a", "write", "event", "t", "x", "e1"), dec("b", "write", "event", "t", "y", "e1")],
         {"a": [1], "b": [1]}, "which already exists"),
    ],
)  # fmt: skip
def test_bad_trajectories_raise(traj, emb, match):
    with pytest.raises(CreditError, match=match):
        relabel_tiers(traj, {}, emb)


def test_type_validation():
    with pytest.raises(CreditError, match="a Noop has no content"):
        TeacherDecision("op0", "noop", "event", "t", "", content="x")
    with pytest.raises(CreditError, match="needs non-empty content and target_entry_id"):
        TeacherDecision("op0", "merge", "event", "t", "", content="x")
    with pytest.raises(CreditError, match="flipped ⇒ cited_correct ⇒ retrieved"):
        EntryOutcome("e1", retrieved=False, cited_correct=True, flipped=False)
    with pytest.raises(CreditError, match="non-decreasing"):
        TierTargets(duplicate=0.5, novel_uncited=0.3)
    with pytest.raises(CreditError, match=r"TierTargets.miss must lie in \[0, 1\]"):
        TierTargets(miss=-0.1)
    with pytest.raises(CreditError, match="cluster_threshold"):
        RelabelConfig(cluster_threshold=1.5)


def test_entry_outcomes_fold_audit_records():
    rs = [
        AuditRecord("e1", "q1", 1.0, True, True, False),
        AuditRecord("e1", "q2", 1.0, True, True, True, flips=True),
        AuditRecord("e2", "q1", 1.0, False, True, True, cures=True),  # cited on a wrong answer only
        AuditRecord("e3", "q1", 1.0, True, True, True, flips=False),
    ]
    out = entry_outcomes(rs)
    assert {e: o.tier for e, o in out.items()} == {
        "e1": Tier.LOAD_BEARING, "e2": Tier.NOVEL_UNCITED, "e3": Tier.CITED_NON_FLIPPING,
    }  # fmt: skip
