"""Bank operations, forks, counterfactual views and persistence."""

import copy
import json

import pytest

from memprm.memory import BankError, MemoryBank


def _bank() -> MemoryBank:
    b = MemoryBank()
    b.write_verbatim("Ana: I adopted a dog named Biscuit.", turn_id="D1:1", timestamp="2023-05-08")
    b.write("event", "Ana adopted a dog named Biscuit", key="pet", timestamp="2023-05-08", turn_id="D1:1")
    b.write("profile", "Ana lives in Porto", key="city", turn_id="D1:2")
    return b


def test_write_merge_noop_and_op_log():
    b = _bank()
    profile = b.entries("profile")[0]
    rec = b.merge(profile.id, "Ana moved to Lisbon", timestamp="2023-06-01", turn_id="D2:4")
    noop = b.noop("event", turn_id="D2:5")
    e = b.entry(profile.id)
    assert [v.content for v in e.versions] == ["Ana lives in Porto", "Ana moved to Lisbon"]
    assert e.latest.content == "Ana moved to Lisbon" and e.latest.source_turn_ids == ("D2:4",)
    assert rec.kind == "merge" and rec.entry_id == profile.id and rec.version_index == 1
    assert e.op_ids == (b.ops[2].op_id, rec.op_id)
    assert noop.kind == "noop" and noop.entry_id is None and len(b) == 3
    assert [o.kind for o in b.ops] == ["verbatim", "write", "write", "merge", "noop"]
    assert len({o.op_id for o in b.ops}) == 5
    assert b.version_log[-1] == ("profile", profile.id, 1)
    assert b.stats() == {"entries": 2, "versions": 3, "versions_per_entry": 1.5}


@pytest.mark.parametrize(
    "op, match",
    [
        (lambda b: b.merge("e99999", "x"), "no entry"),
        (lambda b: b.write("episodic", "x"), "unknown layer"),
        (lambda b: b.write("event", "   "), "non-empty"),
        (lambda b: b.write("verbatim", "x"), "automatically"),
        (lambda b: b.merge(b.entries("verbatim")[0].id, "x"), "append-only"),
        (lambda b: b.merge(b.entries("event")[0].id, ""), "non-empty"),
        (lambda b: b.noop("semantic"), "unknown layer"),
    ],
)
def test_invalid_operations_raise_and_leave_bank_unchanged(op, match):
    b = _bank()
    before = json.dumps(b.to_dict())
    with pytest.raises(BankError, match=match):
        op(b)
    assert json.dumps(b.to_dict()) == before


def test_fork_is_independent_both_ways():
    parent = _bank()
    a, c = parent.fork(), parent.fork()
    ev = parent.entries("event")[0].id
    a.merge(ev, "Biscuit is a beagle")
    a.write("event", "Ana ran a marathon")
    c.noop("event")
    assert len(parent.entry(ev).versions) == 1 and len(parent) == 3 and len(parent.ops) == 3
    assert len(c.entry(ev).versions) == 1 and len(c) == 3 and len(c.ops) == 4
    assert len(a.entry(ev).versions) == 2 and len(a) == 4
    parent.write("profile", "Ana works as a nurse")
    assert len(a) == 4 and len(c) == 3
    # forks share the immutable entry objects rather than copying them
    assert parent.fork().entry(ev) is parent.entry(ev)


def test_counterfactual_view_hides_without_mutating():
    b = _bank()
    ev = b.entries("event")[0].id
    view = b.without([ev])
    assert ev not in view and ev in b and len(view) == len(b) - 1
    assert [e.id for e in view.entries("event")] == []
    with pytest.raises(BankError, match="hidden"):
        view.entry(ev)
    with pytest.raises(BankError, match="unknown"):
        b.without(["nope"])
    prof = b.entries("profile")[0].id
    assert view.without([prof]).hidden == {ev, prof}


def test_json_round_trip_is_lossless(tmp_path):
    b = _bank()
    b.merge(b.entries("profile")[0].id, "Ana moved to Lisbon", timestamp="2023-06-01")
    b.noop("profile", turn_id="D2:9")
    path = tmp_path / "bank.json"
    b.save(path)
    back = MemoryBank.load(path)
    assert back.to_dict() == b.to_dict()
    assert [e for e in back] == [e for e in b]
    assert back.ops == b.ops
    # ids keep counting after a reload
    assert back.write("event", "new").entry_id == b.write("event", "new").entry_id


def test_load_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BankError, match="bad.json"):
        MemoryBank.load(bad)
    d = _bank().to_dict()
    del d["entries"][0]["versions"][0]["content"]
    bad.write_text(json.dumps(d))
    with pytest.raises(BankError, match="bad.json.*malformed"):
        MemoryBank.load(bad)
    d["format_version"] = 99
    bad.write_text(json.dumps(d))
    with pytest.raises(BankError, match="format_version"):
        MemoryBank.load(bad)


def test_fork_matches_deepcopy_semantics():
    b = _bank()
    f, d = b.fork(), copy.deepcopy(b)
    assert f.to_dict() == d.to_dict() == b.to_dict()
