"""Note writer precision / recall against fact annotations (memprm.llm.note_quality, tools/note_quality.py)."""

import json
from datetime import datetime

import pytest

from memprm.data.records import Dialogue, Fact, Session, Turn
from memprm.llm.note_quality import match_score, match_turn, note_quality, token_f1
from memprm.llm.notes import Note

pytestmark = pytest.mark.timeout(300)


def test_token_f1_by_hand():
    assert (
        token_f1("nurse", "nurse") == 1.0 and token_f1("", "nurse") == 0.0 and token_f1("cat", "dog") == 0.0
    )
    # "the" is dropped; "dogs" stems to "dog": {walked, dog} vs {dog, walked, park}: p = 1, r = 2/3
    assert token_f1("walked the dogs", "dog walked park") == pytest.approx(0.8)


def test_profile_facts_need_a_profile_note_with_the_value_events_need_text():
    job = Fact("Ana works as a nurse.", "t", "Ana", "job", "nurse")
    assert match_score(Note("profile", "Ana/job", "Ana's job: nurse (as of 7 May 2023)"), job) == 1.0
    assert match_score(Note("profile", "Ana/work", "Ana's work: nurse (as of 7 May 2023)"), job) == 1.0  # any key
    assert match_score(Note("profile", "Ana/job", "Ana's job: chef (as of 7 May 2023)"), job) == 0.0
    assert (
        match_score(Note("event", "", "Ana works as a nurse."), job) == 0.0
    )  # a profile fact needs a profile note
    # the value is read between ": " and " (as of": the date does not dilute it; extra words do
    dog = Fact("Ana has a dog named Milo.", "t", "Ana", "dog", "Milo")
    assert (
        match_score(Note("profile", "Ana/dog", "Ana's dog: Milo keeps me busy (as of 1 May 2023)"), dog)
        == 0.4
    )
    ev = Fact("On 7 May 2023, Ana ran a marathon.", "t", "Ana", "event:run")
    assert match_score(Note("event", "", "On 7 May 2023, Ana ran a marathon."), ev) == 1.0
    wrong_day = match_score(Note("event", "", "On 8 May 2023, Ana ran a marathon."), ev)
    assert 0.5 < wrong_day < 1.0  # the date's day token is lost


def test_matching_is_one_to_one_and_greedy_by_score():
    facts = [Fact("Ana ran a marathon.", "t"), Fact("Ana baked bread.", "t")]
    notes = [Note("event", "", "Ana ran a marathon."), Note("event", "", "Ana ran a marathon today.")]
    # both notes fit fact 0 best; only one may take it, the other does not fit fact 1
    assert match_turn(notes, facts, 0.5) == [(0, 0)]
    assert match_turn([], facts, 0.5) == [] and match_turn(notes, [], 0.5) == []


class _Writer:
    """A writer that returns fixed notes per turn id (the scorer is what is tested)."""

    def __init__(self, by_turn):
        self.by_turn, self.dates = by_turn, []

    def notes(self, turn, said_on):
        self.dates.append(said_on)
        return self.by_turn.get(turn.id, ())


def test_note_quality_counts_precision_recall_and_kinds():
    day = datetime(2023, 5, 7)
    turns = (
        Turn(
            "a", "Ana", "I'm a nurse.", 0, facts=(Fact("Ana works as a nurse.", "a", "Ana", "job", "nurse"),)
        ),
        Turn("b", "Bo", "Ran a marathon!", 0, facts=(Fact("Bo ran a marathon.", "b", "Bo", "event:run"),)),
        Turn("c", "Ana", "Nice weather.", 0),
    )
    d = Dialogue("d0", ("Ana", "Bo"), (Session(0, day, turns),))
    writer = _Writer({
        "a": (Note("profile", "Ana/job", "Ana's job: nurse (as of 7 May 2023)"),),
        "c": (Note("event", "", "Ana said the weather is nice."),),  # a note where no fact is: precision falls
    })  # fmt: skip
    q = note_quality(writer, [d])
    assert (q.turns, q.turns_with_facts, q.turns_with_notes, q.facts, q.notes, q.matched) == (
        3,
        2,
        2,
        2,
        2,
        1,
    )
    assert q.precision == 0.5 and q.recall == 0.5 and q.by_kind == {"job": [1, 1], "event": [1, 0]}
    assert writer.dates == [day] * 3  # every turn is written with its session's date
    assert [e["turn"] for e in q.examples] == ["b", "c"]
    with pytest.raises(ValueError, match="threshold"):
        note_quality(writer, [d], threshold=0.0)


def test_note_quality_tool_on_synthetic(tmp_path, capsys):
    from helpers.tools_loader import load_tool

    out = tmp_path / "nq.json"
    tiny = ["data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
            "data.synthetic.sessions_per_dialogue=2"]  # fmt: skip
    got = load_tool("note_quality").main(["--split", "train", "--json", str(out), *tiny])
    assert json.loads(out.read_text()) == json.loads(json.dumps(got))
    assert got["dialogues"] == ["syn-000"] and got["notes_kind"] == "rules" and got["facts"] > 0
    # the rule writer was written for this family: it must find most of its facts and invent few
    assert got["recall"] >= 0.7 and got["precision"] >= 0.8, (got["recall"], got["precision"])
    assert "| turns | with facts |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="has 1 dialogues"):
        load_tool("note_quality").main(["--split", "train", *tiny, "--dialogues", "3"])
