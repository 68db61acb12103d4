"""The offline extractive reader, relative dates, rendering and citation checks."""

from datetime import datetime

import pytest

from memprm.data.records import Question
from memprm.llm.reader import ExtractiveReader, ReaderConfig
from memprm.llm.reader_text import BRIDGE, extract_span
from memprm.llm.relative_time import format_date, resolve
from memprm.llm.render import approx_tokens, render_retrieval
from memprm.llm.roles import ABSTAIN_ANSWER, check_citations
from memprm.memory import HashingEmbedder, MemoryBank, Retriever


def q(text: str) -> Question:
    return Question(id="q", text=text, answer="", category="single-hop")


@pytest.mark.parametrize(
    "text, said, expected",
    [
        ("I ran a marathon yesterday!", "2023-05-08", "7 May 2023"),
        ("the day before yesterday we met", "2023-05-08", "6 May 2023"),
        ("I adopted him two days ago", "2023-05-08", "6 May 2023"),
        ("3 weeks ago I moved", "2023-05-08", "17 April 2023"),
        ("a week ago I moved", "2023-05-08", "1 May 2023"),
        # 8 May 2023 is a Monday: last Saturday = 6 May, last Monday = 1 May (strictly before)
        ("Last Saturday I baked bread", "2023-05-08", "6 May 2023"),
        ("last monday was fun", "2023-05-08", "1 May 2023"),
        ("last weekend was fun", "2023-05-08", "6 May 2023"),
        ("I went hiking last week", "2023-05-08", "the week before 8 May 2023"),
        ("last year I lived in Oslo", "2023-05-08", "the year before 8 May 2023"),
        ("I live in Oslo", "2023-05-08", "8 May 2023"),
        ("yesterday, or was it two days ago?", "2023-05-08", "7 May 2023"),  # first expression wins
        # English date arithmetic beyond the generator's phrases
        ("we talked about it last night", "2023-05-08", "7 May 2023"),
        ("a couple of days ago I moved", "2023-05-08", "6 May 2023"),
        ("12 days back I moved", "2023-05-08", "26 April 2023"),
        ("two weeks back we met", "2023-05-08", "24 April 2023"),
        ("a fortnight ago we met", "2023-05-08", "24 April 2023"),
        ("three years ago I lived in Oslo", "2023-05-08", "2020"),
        ("I painted it over the weekend", "2023-05-08", "6 May 2023"),
        ("this past Friday was fun", "2023-05-08", "5 May 2023"),
        ("this afternoon I baked bread", "2023-05-08", "8 May 2023"),
        ("three nights ago we met", "2023-05-08", "5 May 2023"),
        ("the night before last I moved", "2023-05-08", "6 May 2023"),
        ("I moved a full week ago", "2023-05-08", "1 May 2023"),
        ("a whole two weeks ago we met", "2023-05-08", "24 April 2023"),
        ("the previous week I moved", "2023-05-08", "the week before 8 May 2023"),
        ("over the past year I learned it", "2023-05-08", "8 May 2023"),  # a duration, not a date
    ],
)
def test_relative_time_resolution(text, said, expected):
    assert resolve(text, datetime.fromisoformat(said)) == expected


def test_format_date_has_no_zero_padding():
    assert format_date(datetime(2023, 5, 7)) == "7 May 2023"


@pytest.mark.parametrize(
    "content, question, answer",
    [
        ("Ana: I adopted a dog named Biscuit last week.", "What is the name of Ana's dog?", "Biscuit"),
        ("Ana: I work as a nurse now.", "What does Ana work as?", "nurse"),
        ("Bo: We moved to Lisbon in March. It is sunny.", "Where did Bo move to?", "Lisbon"),
        ("Ana: I ran 42 kilometres on Sunday", "How many kilometres did Ana run?", "42"),
        # a thing is asked for: a past-tense verb is no answer; "what did … do" asks for the verb
        ("Bo painted a mural of a giant octopus at the school.", "What subject did Bo pick for the school mural?",
         "giant octopus"),
        ("Bo painted a mural at the school.", "What did Bo do at the school?", "painted"),
    ],
)
def test_extract_span(content, question, answer):
    assert extract_span(content, question) == answer


@pytest.mark.parametrize(
    "question, clause",
    [
        ("What sport does the person who ran a marathon play?", " ran a marathon play"),
        ("What sport is the reader of The Hobbit into?", " The Hobbit into"),  # an agent noun + "of"
        ("Which car does the owner of a dog named Milo drive?", " a dog named Milo drive"),
        ("What is the order of the events?", None),  # "order" is no agent
    ],
)
def test_two_fact_bridge_reads_relative_clauses_and_agent_nouns(question, clause):
    m = BRIDGE.search(question)
    assert (m.group("clause") if m else None) == clause


def _bank():
    b = MemoryBank()
    e = b.write("profile", "Ana works as a teacher", key="job", timestamp="2023-01-10").entry_id
    b.merge(e, "Ana now works as a nurse", timestamp="2023-06-01")
    b.write("event", "Ana ran a marathon yesterday", timestamp="2023-05-08")
    b.write("event", "Bo baked sourdough bread", timestamp="2023-05-09")
    return b, e


def test_reader_uses_newest_version_for_current_value_and_dates_for_when():
    emb = HashingEmbedder(dim=512)
    bank, job = _bank()
    r = Retriever(emb)
    reader = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05))
    cur = reader.answer(q("Ana now works as what, currently?"), r.retrieve(bank, "Ana now works as what, currently?"))
    assert cur.answer == "nurse" and cur.cited == (job,)  # the chain's newest version
    before = "What did Ana work as before she works as a nurse?"
    prev = reader.answer(q(before), r.retrieve(bank, before))
    assert prev.answer == "teacher" and prev.cited == (job,)  # the version before the one naming "nurse"
    when = reader.answer(q("When did Ana run a marathon?"), r.retrieve(bank, "When did Ana run a marathon?"))
    assert when.answer == "7 May 2023" and len(when.cited) == 1
    assert when.context_tokens > 0


def test_reader_reports_the_version_it_read():
    """``ReaderAnswer.evidence`` names the (entry, version index) each cited entry was read from: on a
    3-version chain an earlier-value question reads (and reports) the middle version, a current-value one the
    newest; a two-fact join reports the bridge entry's matching version and the joined entry's newest."""
    emb = HashingEmbedder(dim=512)
    bank = MemoryBank()
    job = bank.write("profile", "Ana works as a teacher", key="job", timestamp="2023-01-10").entry_id
    bank.merge(job, "Ana now works as a nurse", timestamp="2023-06-01")
    bank.merge(job, "Ana now works as a pilot", timestamp="2023-09-01")
    met = bank.write("event", "Mei went hiking in the hills", timestamp="2023-05-09").entry_id
    bank.merge(met, "Mei met Ana at the marathon finish line", timestamp="2023-05-10")
    bank.write("event", "Bo baked sourdough bread", timestamp="2023-05-09")
    r = Retriever(emb)
    reader = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05))

    def ask(text):
        return reader.answer(q(text), r.retrieve(bank, text))

    before = ask("What did Ana work as before pilot?")
    assert (before.answer, before.cited, before.evidence) == ("nurse", (job,), ((job, 1),))
    now = ask("What does Ana work as now?")
    assert (now.answer, now.cited, now.evidence) == ("pilot", (job,), ((job, 2),))
    join = ask("What is the job of the woman who Mei met at the marathon?")
    assert join.cited == (met, job) and join.evidence == ((met, 1), (job, 2))
    assert ask("Which violin concerto?").evidence == ()  # an abstention cites and reads nothing


def test_time_order_reads_the_newest_of_separate_entries_and_the_one_before():
    """The same fact stored as separate entries (no merge): the chain-aware reader reads the best-matching
    entry whatever its date; with ``reader.time_order`` the newest answers "now" and the older "before"."""
    emb = HashingEmbedder(dim=512)
    bank = MemoryBank()
    old = bank.write("event", "Ana: I work as a teacher at the school", timestamp="2023-01-10").entry_id
    new = bank.write("event", "Ana: I work as a nurse", timestamp="2023-06-01").entry_id
    bank.write("event", "Bo: I baked sourdough bread", timestamp="2023-07-01")  # far: not on the line
    r = Retriever(emb)
    now, before = "What does Ana work as now, at the school?", "What did Ana work as before nurse?"
    chain = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05))
    timed = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05, time_order=True, time_margin=0.5))
    # the older entry matches "now, at the school" best: the chain reader answers from it
    assert (chain.answer(q(now), r.retrieve(bank, now)).answer, chain.answer(q(now), r.retrieve(bank, now)).cited) \
        == ("teacher", (old,))
    got = timed.answer(q(now), r.retrieve(bank, now))
    assert (got.answer, got.cited) == ("nurse", (new,))
    got = timed.answer(q(before), r.retrieve(bank, before))
    assert (got.answer, got.cited) == ("teacher", (old,))  # the one before the version naming "nurse"
    # a margin of 0 keeps only the best chain: the chain reader's answer again
    strict = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05, time_order=True, time_margin=0.0))
    assert strict.answer(q(now), r.retrieve(bank, now)).answer == "teacher"
    # merged chains read as before: the time line holds the chain, newest last
    bank2, job = _bank()
    cur = timed.answer(q("Ana now works as what, currently?"), r.retrieve(bank2, "Ana now works as what, currently?"))
    assert (cur.answer, cur.cited) == ("nurse", (job,))
    with pytest.raises(ValueError, match="time_margin"):
        ReaderConfig(time_margin=-0.1)


def test_reader_abstains_on_empty_or_unrelated_memory():
    emb = HashingEmbedder(dim=512)
    reader = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.3))
    r = Retriever(emb)
    empty = reader.answer(q("What is Ana's car?"), r.retrieve(MemoryBank(), "What is Ana's car?"))
    assert empty.answer == ABSTAIN_ANSWER and empty.cited == ()
    bank, _ = _bank()
    far = reader.answer(q("Which violin concerto?"), r.retrieve(bank, "Which violin concerto?"))
    assert far.answer == ABSTAIN_ANSWER and far.cited == ()


def test_render_and_citation_check():
    emb = HashingEmbedder(dim=128)
    bank, job = _bank()
    ret = Retriever(emb).retrieve(bank, "Ana job")
    text = render_retrieval(ret)
    assert f"[{job} | profile | key: job]" in text
    assert (
        "v1 (2023-01-10): Ana works as a teacher" in text
        and "v2 (2023-06-01): Ana now works as a nurse" in text
    )
    kept, dropped = check_citations([job, "e99999", job], ret)
    assert kept == (job,) and dropped == ("e99999",)
    assert approx_tokens("Ana's dog, Biscuit!") == 7
    assert ReaderConfig().kind == "extractive"
    with pytest.raises(ValueError, match="reader.kind"):
        ReaderConfig(kind="abstractive")
