"""The learned profile tagger and the tagged note writer (memprm.llm.profile_tagger, notes.kind=tagged)."""

from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest
import torch

from memprm.config import load_config
from memprm.configtools import ConfigError
from memprm.data.records import Dialogue, Fact, Session, Turn
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.stack import build_note_writer, build_stack
from memprm.llm.note_quality import note_quality
from memprm.llm.notes import Note, NoteWriterConfig
from memprm.llm.profile_tagger import (
    NONE,
    ProfileTagger,
    TaggedNoteWriter,
    build_tagger,
    candidate_spans,
    last_within_margin,
    tagger_examples,
    train_softmax,
)
from memprm.memory.embedder import HashingEmbedder, build_embedder

pytestmark = pytest.mark.timeout(300)

MAY = datetime(2023, 5, 7)


def test_candidate_spans_skip_stop_words_at_the_ends_and_attribute_nouns_anywhere():
    skip = frozenset("i a the now".split())
    spans = candidate_spans("I drive a Honda Civic now, my car.", skip, frozenset({"car"}))
    # "drive a Honda" keeps its inner "a"; nothing starts or ends with a skipped word, nothing crosses the
    # comma ("Civic now, my"), "car" is never a value
    assert spans == ["drive", "drive a Honda", "Honda", "Honda Civic", "Civic", "my"]
    assert candidate_spans("", skip, frozenset()) == []


def test_last_within_margin_prefers_the_later_span_on_ties_and_at_the_margin():
    assert last_within_margin(np.array([0.9, 0.2, 0.9]), 0.0) == 2  # a tie: the later one
    assert last_within_margin(np.array([0.9, 0.8, 0.1]), 0.1) == 1  # exactly at the margin counts
    assert last_within_margin(np.array([0.9, 0.79, 0.1]), 0.1) == 0  # just outside does not
    assert last_within_margin(np.array([0.3]), 0.5) == 0


def test_train_softmax_separates_classes_and_the_class_weight_moves_the_boundary():
    x = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])  # [N=4, D=2]
    y = torch.tensor([0, 0, 1, 1])
    w, b = train_softmax(x, y, torch.ones(2))
    assert w.shape == (2, 2) and b.shape == (2,)
    assert ((x @ w + b).argmax(-1) == y).all()
    middle = torch.tensor([0.5, 0.5])  # [D]
    p_even = torch.softmax(middle @ w + b, -1)[0]
    w2, b2 = train_softmax(x, y, torch.tensor([0.1, 1.0]))  # class 0 weighs less: the midpoint leans to 1
    assert torch.softmax(middle @ w2 + b2, -1)[0] < p_even
    again = train_softmax(x, y, torch.ones(2))  # deterministic
    assert torch.equal(again[0], w) and torch.equal(again[1], b)


def _dialogue(turns: list[tuple[str, tuple[Fact, ...]]]) -> Dialogue:
    ts = tuple(Turn(f"D1:{i}", "Ana", text, 1, facts=facts) for i, (text, facts) in enumerate(turns))
    return Dialogue("d", ("Ana", "Ben"), (Session(1, MAY, ts),))


def test_tagger_examples_label_each_turn_by_its_last_profile_fact_and_collect_values():
    d = _dialogue(
        [
            (
                "Ramen is all I eat.",
                (Fact("Ana's favourite food is ramen.", "D1:0", "Ana", "food", "ramen"),),
            ),
            (
                "I ran a marathon yesterday.",
                (Fact("On 6 May 2023, Ana ran a marathon.", "D1:1", "Ana", "event:run"),),
            ),
            ("Nice weather.", ()),
            (
                "Sold the Kia, bought a Jeep.",
                (
                    Fact("Ana drives a Kia.", "D1:3", "Ana", "car", "Kia"),
                    Fact("Ana drives a Jeep.", "D1:3", "Ana", "car", "Jeep"),
                ),
            ),
        ]
    )
    ex = tagger_examples([d])
    assert ex.labels == ("food", NONE, NONE, "car")  # an event fact is no profile fact
    assert ex.values == {"car": ("Jeep", "Kia"), "food": ("ramen",)}
    with pytest.raises(ValueError, match="no profile fact"):
        ProfileTagger.fit(
            HashingEmbedder(), tagger_examples([_dialogue([("Hi.", ())])]), 0.3, frozenset(), frozenset()
        )


class _FixedTagger:
    """A tagger that always answers the same (for the writer's own rules, not the tagger's)."""

    def __init__(self, key: str, p: float, value: str | None):
        self.key, self.p, self.val, self.calls = key, p, value, 0

    def attribute(self, text):
        self.calls += 1
        return self.key, self.p

    def value(self, text, key, margin):
        return self.val


class _Rules:
    def __init__(self, notes):
        self._notes = notes

    def notes(self, turn, said_on):
        return self._notes


def test_tagged_writer_adds_a_profile_note_only_where_the_rules_found_none_and_the_turn_is_undated():
    turn = Turn("D1:1", "Ana", "Give me ramen any day, no other food comes close.", 1)
    event = Note("event", "", "Ana gave something.")
    tagger = _FixedTagger("food", 0.8, "ramen")
    out = TaggedNoteWriter(_Rules((event,)), tagger, 0.5, 0.1).notes(turn, MAY)
    assert out == (event, Note("profile", "Ana/food", "Ana's favourite food: ramen (as of 7 May 2023)"))
    rule_profile = Note("profile", "Ana/food", "Ana's favourite food: sushi (as of 7 May 2023)")
    assert TaggedNoteWriter(_Rules((rule_profile,)), tagger, 0.5, 0.1).notes(turn, MAY) == (rule_profile,)
    dated = Turn("D1:2", "Ana", "I had ramen yesterday, no other food comes close.", 1)
    calls = tagger.calls
    assert TaggedNoteWriter(_Rules(()), tagger, 0.5, 0.1).notes(dated, MAY) == ()  # a dated turn: an event
    assert tagger.calls == calls
    assert TaggedNoteWriter(_Rules(()), _FixedTagger("food", 0.49, "ramen"), 0.5, 0.1).notes(turn, MAY) == ()
    at_threshold = TaggedNoteWriter(_Rules(()), _FixedTagger("food", 0.5, "ramen"), 0.5, 0.1).notes(turn, MAY)
    assert [n.key for n in at_threshold] == ["Ana/food"]  # a probability exactly at the threshold writes
    assert TaggedNoteWriter(_Rules(()), _FixedTagger(NONE, 0.9, "ramen"), 0.5, 0.1).notes(turn, MAY) == ()
    assert TaggedNoteWriter(_Rules(()), _FixedTagger("food", 0.9, None), 0.5, 0.1).notes(turn, MAY) == ()


def test_note_writer_config_validates_the_tagger_settings():
    assert NoteWriterConfig(kind="tagged").tagger_phrasings == ("tuning", "heldout")
    for bad in (
        {"kind": "tagged", "tagger_phrasings": ()},
        {"kind": "tagged", "tagger_phrasings": ("tuning", "tunning")},
        {"tagger_threshold": 1.5},
        {"tagger_none_weight": 0.0},
        {"tagger_margin": -0.1},
        {"kind": "tagger"},
    ):
        with pytest.raises(ValueError, match="notes\\."):
            NoteWriterConfig(**bad)


def test_build_tagger_refuses_the_run_s_own_phrasing_in_one_line():
    cfg = NoteWriterConfig(kind="tagged", tagger_phrasings=("standard", "heldout"))
    with pytest.raises(ConfigError, match="includes data.synthetic.phrasing='standard'") as err:
        build_tagger(cfg, SyntheticConfig(), HashingEmbedder())
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_tagged_writer_finds_profile_facts_the_rules_miss_on_a_family_it_never_saw():
    """Trained on two families' train splits, read on the third's (tuning) train split: more facts matched
    than the rules alone, and no worse than 75% precision on the notes it adds."""
    small = SyntheticConfig(n_dialogues=6, phrasing="tuning")
    cfg = load_config(None, ["notes.kind=tagged", "notes.tagger_phrasings=[standard,heldout]"])
    emb = build_embedder(cfg.embedder)  # the local MiniLM: hashed words do not carry over to a new family
    tagged = build_note_writer(cfg.notes, cfg.llm, emb, small)
    rules = build_note_writer(replace(cfg.notes, kind="rules"), cfg.llm, emb, small)
    dialogues = list(generate_synthetic(small)["train"])
    q_rules, q_tagged = note_quality(rules, dialogues), note_quality(tagged, dialogues)
    added = q_tagged.notes - q_rules.notes
    assert q_tagged.matched - q_rules.matched >= 0.75 * added > 0
    assert build_tagger(cfg.notes, small, emb) is build_tagger(cfg.notes, small, emb)  # trained once


def test_the_stack_builds_the_tagged_writer_from_config_and_its_tagger_once_per_settings():
    cfg = load_config(
        None,
        ["notes.kind=tagged", "embedder.kind=hashing", "embedder.dim=64", "data.synthetic.n_dialogues=7"],
    )
    first, second = build_stack(cfg), build_stack(cfg)
    assert isinstance(first.env.notes.writer, TaggedNoteWriter)
    assert first.env.notes.writer.tagger is second.env.notes.writer.tagger  # trained once per process
    assert set(first.env.notes.writer.tagger.keys) > {NONE}
    other = build_stack(replace(cfg, notes=replace(cfg.notes, tagger_none_weight=0.5)))
    assert other.env.notes.writer.tagger is not first.env.notes.writer.tagger


def test_fit_refuses_a_tagger_trained_on_the_run_s_own_phrasing_before_writing_anything(tmp_path):
    from memprm.fit import fit

    cfg = load_config(
        None, ["notes.kind=tagged", "notes.tagger_phrasings=[standard]", f"output_dir={tmp_path / 'runs'}"]
    )
    with pytest.raises(ConfigError, match="tagger_phrasings"):
        fit(cfg)
    assert not (tmp_path / "runs").exists()
