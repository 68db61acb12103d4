"""The Mem0-style baseline: its ADD / UPDATE / DELETE / NONE rules on hand-built notes and turns, and its
flat top-k read (at most k facts; context tokens = the rendered context's tokens)."""

from datetime import datetime

import pytest

from memprm.data.records import Dialogue, Question, Session, Turn
from memprm.env.gates import EnvConfig
from memprm.env.mem0 import FlatRetriever, Mem0Config, Mem0Store, build_store, evaluate_mem0
from memprm.env.memory_env import MemoryEnv
from memprm.llm.judge import F1Judge
from memprm.llm.notes import Note
from memprm.llm.probes import FactProbeGenerator
from memprm.llm.reader import ExtractiveReader
from memprm.llm.render import approx_tokens, render_retrieval
from memprm.memory import HashingEmbedder, Retriever

CFG = Mem0Config(update=0.5, duplicate=0.95)


@pytest.fixture
def store():
    return Mem0Store(HashingEmbedder(dim=1024), CFG)


def event(text):
    return Note("event", "", text)


def job(value, day):
    return Note("profile", "Ana/job", f"Ana's job: {value} (as of {day} May 2023)")


def texts(store):
    return [f.text for f in store.facts.values()]


def test_add_on_a_new_fact(store):
    ops = store.apply(
        event("On 1 May 2023, Ana adopted a beagle called Biscuit."), "Ana", "2023-05-02", "D1:1"
    )
    assert [(o.kind, o.fact_id) for o in ops] == [("add", 0)]
    ops = store.apply(job("nurse", 2), "Ana", "2023-05-02", "D1:2")
    assert [o.kind for o in ops] == ["add"] and len(store.facts) == 2


def test_update_overwrites_in_place_and_destroys_the_old_value(store):
    store.apply(event("On 1 May 2023, Bo baked bread for the street party."), "Bo", "2023-05-02", "D1:1")
    store.apply(job("nurse", 2), "Ana", "2023-05-02", "D1:2")
    ops = store.apply(job("teacher", 9), "Ana", "2023-05-09", "D2:4")
    assert [(o.kind, o.fact_id) for o in ops] == [("update", 1)] and "nurse" in ops[0].old
    assert len(store.facts) == 2 and list(store.facts) == [0, 1]  # one entry, same id and place
    assert store.facts[1].text == "Ana's job: teacher (as of 9 May 2023)" and store.facts[1].turn_id == "D2:4"
    assert not any("nurse" in t for t in texts(store))
    assert not any("nurse" in e.latest.content for e in store.to_bank())  # no version chain keeps it either


def test_event_update_by_similarity_but_never_across_keys(store):
    store.apply(event("On 1 May 2023, Ana ran a half marathon in Lisbon."), "Ana", "2023-05-02", "D1:1")
    ops = store.apply(
        event("On 1 May 2023, Ana ran a half marathon in Lisbon and finished in two hours."),
        "Ana",
        None,
        "D1:3",
    )
    assert [o.kind for o in ops] == ["update"] and texts(store) == [
        "On 1 May 2023, Ana ran a half marathon in Lisbon and finished in two hours."
    ]
    other = Note("profile", "Ana/city", "Ana's home city: Lisbon (as of 2 May 2023)")
    ops = store.apply(other, "Ana", None, "D1:4")
    assert [o.kind for o in ops] == ["add"]  # a keyed note never overwrites an event, however similar


def test_delete_fires_on_a_stated_end_of_a_stored_value(store):
    store.apply(
        Note("profile", "Daniel/sport", "Daniel's sport: basketball (as of 2 May 2023)"),
        "Daniel",
        None,
        "D1:1",
    )
    store.apply(
        Note("profile", "Lucas/sport", "Lucas's sport: basketball (as of 2 May 2023)"), "Lucas", None, "D1:2"
    )
    ended = event("Daniel stopped playing basketball and joined a badminton club.")
    ops = store.apply(ended, "Daniel", "2023-05-09", "D2:1")
    assert [(o.kind, o.fact_id) for o in ops] == [("delete", 0), ("add", 2)]
    assert "Daniel's sport: basketball" in ops[0].old
    assert texts(store) == ["Lucas's sport: basketball (as of 2 May 2023)", ended.text]  # Lucas's value stays
    assert [o.kind for o in store.ops] == ["add", "add", "delete", "add"]


def test_delete_needs_the_end_and_the_value(store):
    store.apply(
        Note("profile", "Daniel/sport", "Daniel's sport: basketball (as of 2 May 2023)"),
        "Daniel",
        None,
        "D1:1",
    )
    store.apply(event("Daniel watched basketball with friends."), "Daniel", None, "D1:2")  # no end stated
    store.apply(event("Daniel stopped eating sugar."), "Daniel", None, "D1:3")  # an end, not of the value
    assert "Daniel's sport: basketball (as of 2 May 2023)" in texts(store)
    assert "delete" not in [o.kind for o in store.ops]


def test_none_on_a_duplicate_and_on_a_restated_value(store):
    note = event("On 1 May 2023, Ana adopted a beagle called Biscuit.")
    store.apply(note, "Ana", "2023-05-02", "D1:1")
    assert [o.kind for o in store.apply(note, "Ana", "2023-05-09", "D2:1")] == ["none"]
    store.apply(job("nurse", 2), "Ana", "2023-05-02", "D1:2")
    assert [o.kind for o in store.apply(job("nurse", 9), "Ana", "2023-05-09", "D2:2")] == ["none"]
    assert texts(store) == [note.text, "Ana's job: nurse (as of 2 May 2023)"]  # nothing changed, date kept


def _env(emb):
    return MemoryEnv(EnvConfig(), Retriever(emb), ExtractiveReader(emb), F1Judge(), FactProbeGenerator())


def _dialogue():
    lines = [f"Last Sunday I visited museum number {i} with my cousin." for i in range(14)]
    lines += ["I work as a nurse at the city hospital.", "I quit being a nurse, and now I work as a teacher!"]
    s1 = tuple(Turn(f"D1:{i + 1}", "Ana", t, 1) for i, t in enumerate(lines[:15]))
    s2 = (Turn("D2:1", "Ana", lines[15], 2),)
    qs = (
        Question("q1", "What is Ana's job now?", "teacher", "knowledge-update", ("D1:15", "D2:1")),
        Question("q2", "When did Ana visit museum number 3?", "30 April 2023", "temporal", ("D1:4",)),
    )
    return Dialogue(
        "dlg", ("Ana", "Bo"), (Session(1, datetime(2023, 5, 2), s1), Session(2, datetime(2023, 6, 1), s2)), qs
    )


def test_the_note_writer_feeds_the_store_through_a_dialogue():
    env, d = _env(HashingEmbedder(dim=1024)), _dialogue()
    store = build_store(env, d, Mem0Config(update=1.01, duplicate=1.01))
    assert [o.kind for o in store.ops].count("update") == 1  # nurse → teacher, by key
    jobs = [f.text for f in store.facts.values() if f.key == "Ana/job"]
    assert jobs == ["Ana's job: teacher (as of 1 June 2023)"]
    assert len(store.facts) == 15  # 14 events + one job


def test_top_k_read_returns_at_most_k_facts_and_counts_the_rendered_tokens():
    emb = HashingEmbedder(dim=1024)
    env, d = _env(emb), _dialogue()
    bank = build_store(env, d, Mem0Config(update=1.01, duplicate=1.01)).to_bank()
    for k, n in ((10, 10), (200, 15)):
        r = FlatRetriever(env.retriever, k).retrieve(bank, d.questions[1].text)
        assert len(r.hits) == n and [h.score for h in r.hits] == sorted(
            (h.score for h in r.hits), reverse=True
        )
    results = evaluate_mem0(env, [d], Mem0Config(update=1.01, duplicate=1.01, top_k=(3, 200)))
    for k, res in results.items():
        want = [
            approx_tokens(render_retrieval(FlatRetriever(env.retriever, k).retrieve(bank, q.text)))
            + approx_tokens(q.text)
            for q in d.questions
        ]
        assert res.context_tokens == pytest.approx(sum(want) / len(want)) and res.n_questions == 2
        assert res.entries == 15 and res.versions_per_entry == 1.0
    assert results[3].context_tokens < results[200].context_tokens
