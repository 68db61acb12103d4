"""Probe generators: offline cloze probes from fact annotations, and the LLM generator with a fake client."""

from __future__ import annotations

from datetime import datetime

import pytest
from helpers.fakes import FakeClient

from memprm.data.records import Dialogue, Fact, Question, Session, Turn
from memprm.data.synthetic import SyntheticConfig, generate_dialogue
from memprm.llm.cloze import date_spans, make_cloze
from memprm.llm.endpoint import Failure
from memprm.llm.probes import FactProbeGenerator, LLMProbeGenerator, speaker_names

NAMES = frozenset({"Ana", "Ben"})


def turn(tid: str, text: str, *facts: str, speaker: str = "Ana") -> Turn:
    return Turn(tid, speaker, text, 1, None, tuple(Fact(f, tid, speaker) for f in facts))


def dialogue(*turns: Turn) -> Dialogue:
    return Dialogue(
        "d1", ("Ana", "Ben"), (Session(1, datetime(2023, 5, 8, 13, 56), turns, "1:56 pm on 8 May, 2023"),)
    )


@pytest.mark.parametrize(
    "fact, question, answer, kind",
    [
        ("Ana adopted a dog named Biscuit.", "Ana adopted a dog named what?", "Biscuit", "proper"),
        ("Ana moved to Lisbon in March.", "Ana moved to what in March?", "Lisbon", "proper"),
        ("Ana is dating Riley.", "Ana is dating who?", "Riley", "proper"),
        ("Ana walked Riley's dog.", "Ana walked whose dog?", "Riley", "proper"),
        ("Ana drives a Tesla Model 3.", "Ana drives what?", "Tesla Model 3", "proper"),
        (
            "Ana's favorite book is 'Becoming Nicole'.",
            "Ana's favorite book is what?",
            "Becoming Nicole",
            "proper",
        ),
        ("On 7 May 2023, Ana ran a half marathon.", "Ana ran a half marathon when?", "7 May 2023", "date"),
        ("Ana went camping last week with her kids.", "Ana went camping when?", "last week", "date"),
        (
            "Ben started painting about three years ago.",
            "Ben started painting when?",
            "three years ago",
            "date",
        ),
        ("Ana has been married for 5 years.", "Ana has been married for how many years?", "5", "number"),
        ("Ana paid $40 for the tickets.", "Ana paid how much for the tickets?", "$40", "number"),
        ("Ana works as a teacher.", "Ana works as what?", "teacher", "content"),
        ("Ben plays basketball regularly.", "Ben plays what regularly?", "basketball", "content"),
        ("Biscuit is a beagle.", "Biscuit is what?", "beagle", "content"),  # sentence start is no proper noun
        (
            "Ana visited Porto, a lovely city.",
            "Ana visited what?",
            "Porto",
            "proper",
        ),  # the clause ends at ","
        (
            "Ana went on a road trip recently. He loves cars.",
            "Ana went on what recently?",
            "road trip",
            "content",
        ),
        ("Ana went to the museum with Ben.", "Ana went to what with Ben?", "museum", "content"),
    ],
)
def test_cloze_spans_and_questions(fact, question, answer, kind):
    cloze = make_cloze(fact, NAMES)
    assert cloze is not None
    assert (cloze.question, cloze.answer, cloze.kind) == (question, answer, kind)


@pytest.mark.parametrize("fact", ["Hi Ana.", "Ana and Ben.", "Ben was there with Ana.", "Ben cooks.", ""])
def test_cloze_without_a_span_is_none(fact):
    # no candidate at all, or a question with fewer than two words besides the wh-word ("Ben what?")
    assert make_cloze(fact, NAMES) is None


def test_date_spans():
    text = (
        "On 14 February 2023 she ran; last Saturday, three years ago, in 2022 and at 10 am. She may see May"
    )
    assert [text[s:e] for s, e in date_spans(text)] == [
        "14 February 2023", "last Saturday", "three years ago", "2022", "10 am", "May"
    ]  # fmt: skip


def test_speaker_names_include_first_names():
    d = Dialogue("d", ("Ana Lopez", "Ben"), ())
    assert speaker_names(d, [turn("D1:1", "hi", speaker="Cleo")]) == {
        "Ana Lopez",
        "Ana",
        "Lopez",
        "Ben",
        "Cleo",
    }


def test_fact_probes_ids_fields_and_skips():
    t1 = turn("D1:1", "Hey Ben!")
    t2 = turn("D1:2", "I adopted Biscuit!", "Ana adopted a dog named Biscuit.")
    t3 = turn("D1:3", "...", "Hi Ben.", "Ben works as a nurse.", "Ben plays the violin.", speaker="Ben")
    gen = FactProbeGenerator(max_per_turn=1)
    probes = gen.generate(dialogue(t1, t2, t3), [t1, t2, t3])
    assert probes == [
        Question("d1/probe/D1:2/0", "Ana adopted a dog named what?", "Biscuit", "probe", ("D1:2",), None),
        Question("d1/probe/D1:3/1", "Ben works as what?", "nurse", "probe", ("D1:3",), None),
    ]
    assert (gen.stats.considered, gen.stats.probes, gen.stats.no_span, gen.stats.skipped) == (3, 2, 1, 1)
    assert gen.stats.examples == ["no_span: d1/D1:3: 'Hi Ben.'"]
    two = FactProbeGenerator(max_per_turn=2).generate(dialogue(t3), [t3])
    assert [p.id for p in two] == ["d1/probe/D1:3/1", "d1/probe/D1:3/2"]


def test_turns_without_facts_yield_nothing_and_only_the_window_counts():
    t1, t2 = turn("D1:1", "Hello!"), turn("D1:2", "I adopted Biscuit!", "Ana adopted a dog named Biscuit.")
    gen = FactProbeGenerator()
    assert gen.generate(dialogue(t1, t2), [t1]) == []
    assert gen.stats.considered == 0
    with pytest.raises(ValueError, match="max_per_turn"):
        FactProbeGenerator(0)


def test_fact_naming_another_turn_is_an_error():
    bad = Turn("D1:2", "Ana", "text", 1, None, (Fact("Ana adopted a dog named Biscuit.", "D1:9", "Ana"),))
    with pytest.raises(ValueError, match=r"turn 'D1:2', field 'facts\[0\].turn_id'.*'D1:9'"):
        FactProbeGenerator().generate(dialogue(bad), [bad])


def test_synthetic_probes_are_deterministic_and_never_ask_for_a_speaker():
    d = generate_dialogue(SyntheticConfig(), 0)
    first = FactProbeGenerator().generate(d, d.turns())
    assert first == FactProbeGenerator().generate(d, d.turns())
    with_facts = [t for t in d.turns() if t.facts]
    assert len(first) >= 0.9 * len(with_facts)
    index = d.turn_index()
    for p in first:
        anchor = index[p.evidence[0]]
        assert p.answer in anchor.facts[int(p.id.rsplit("/", 1)[1])].text
        assert p.answer not in d.speakers and p.text.endswith("?") and p.category == "probe"


@pytest.mark.data
def test_locomo_observation_probes(data_root):
    from memprm.data.locomo import load_locomo

    d = load_locomo(data_root / "locomo" / "locomo10.json")["train"][0]
    gen = FactProbeGenerator()
    probes = gen.generate(d, d.turns())
    assert gen.stats.considered == sum(1 for t in d.turns() if t.facts)
    assert gen.stats.no_span <= 0.05 * gen.stats.considered
    assert all(p.answer not in d.speakers for p in probes)


# --- LLM probe generator ------------------------------------------------------------------------------------


class FakeBatchClient(FakeClient):
    def __init__(self, replies):
        super().__init__(replies)
        self.batches = 0

    def complete_json_many(self, batch, validate):
        self.batches += 1
        return [self.complete_json(m, validate) for m in batch]


TURNS = (
    turn("D1:1", "Hi Ben, how have you been lately?"),
    turn("D1:2", "Great, I adopted a dog named Biscuit last week!", speaker="Ben"),
    turn("D1:3", "Wow!"),
    turn("D1:4", "He is a beagle and loves long walks on the beach.", speaker="Ben"),
    turn("D1:5", "That sounds lovely, I should visit you both."),
)


def test_llm_probes_prompt_replies_and_counts():
    client = FakeClient(
        [{"question": "What is  the name of Ben's dog?", "answer": "Biscuit"}, {"skip": True},
         {"question": "What breed?", "answer": "a very long answer that goes on and on for many more words"}]
    )  # fmt: skip
    gen = LLMProbeGenerator(client, min_words=3, context_turns=1)
    probes = gen.generate(dialogue(*TURNS), TURNS[1:])
    assert probes == [
        Question("d1/probe/D1:2/0", "What is the name of Ben's dog?", "Biscuit", "probe", ("D1:2",))
    ]
    assert len(client.messages) == 3  # D1:3 ("Wow!") is under min_words: no call
    prompt = client.messages[0][0]["content"]
    assert "Ana: Hi Ben, how have you been lately?" in prompt  # one turn of context
    assert "Ben: Great, I adopted a dog named Biscuit last week!" in prompt
    assert "1:56 pm on 8 May, 2023" in prompt
    assert "Hi Ben" not in client.messages[1][0]["content"]  # D1:4's context is D1:3 only
    s = gen.stats
    assert (s.considered, s.probes, s.too_short, s.no_fact, s.failed, s.skipped) == (4, 1, 1, 1, 1, 3)


def test_llm_probes_first_turn_context_and_batch_path():
    client = FakeBatchClient([{"question": "Who did Ana greet?", "answer": "Ben"}])
    probes = LLMProbeGenerator(client, min_words=0).generate(dialogue(*TURNS), TURNS[:1])
    assert client.batches == 1 and probes[0].id == "d1/probe/D1:1/0"
    assert "(the conversation starts here)" in client.messages[0][0]["content"]


def test_llm_probes_client_failure_is_skipped_and_counted():
    gen = LLMProbeGenerator(FakeClient([Failure("transport: HTTP 503", None, "transport")]))
    assert gen.generate(dialogue(*TURNS), TURNS[1:2]) == []
    assert (gen.stats.failed, gen.stats.examples) == (1, ["failed: d1/D1:2: transport: HTTP 503"])


def test_llm_probes_bad_input():
    with pytest.raises(ValueError, match="is not in the dialogue"):
        LLMProbeGenerator(FakeClient([])).generate(
            dialogue(*TURNS[:2]), [turn("D9:9", "one two three four five six")]
        )
    with pytest.raises(ValueError, match="max_answer_words"):
        LLMProbeGenerator(FakeClient([]), max_answer_words=0)
