"""Quiz assembly, exams, the audit trail (flips, cures, zero detection), probe gates and the env's gates."""

from datetime import datetime

import pytest

from memprm.data.records import Dialogue, Fact, Question, Session, Turn
from memprm.env.audit import AuditResult, audit_exam
from memprm.env.exam import ReaderCache, assemble_quiz, reader_input_key, run_exam, unlocked_questions
from memprm.env.gates import Action, EnvConfig
from memprm.env.memory_env import MemoryEnv, advance_reference
from memprm.env.probe_gates import gate_probes
from memprm.llm.judge import F1Judge
from memprm.llm.probes import FactProbeGenerator
from memprm.llm.reader import ExtractiveReader, ReaderConfig
from memprm.llm.roles import ABSTAIN_ANSWER, ReaderAnswer, check_citations
from memprm.memory import HashingEmbedder, MemoryBank, Retriever, RetrieverConfig
from memprm.memory.embedder import EmbedderConfig, build_embedder


def Q(qid, text, answer, evidence=(), category="single-hop"):
    return Question(id=qid, text=text, answer=answer, category=category, evidence=tuple(evidence))


def dialogue(n_sessions=3, turns=4, questions=()):
    sessions = []
    for s in range(1, n_sessions + 1):
        ts = tuple(
            Turn(f"D{s}:{t}", "Ana" if t % 2 else "Bo", f"session {s} turn {t} words here", s)
            for t in range(1, turns + 1)
        )
        sessions.append(Session(s, datetime(2023, 5, s), ts))
    return Dialogue("dlg", ("Ana", "Bo"), tuple(sessions), tuple(questions))


# ----------------------------------------------------------------------------------------- quiz assembly
def test_evidence_unlocking_and_final_session_weight():
    qs = [
        Q("q1", "?", "a", ["D1:1", "D2:2"]),
        Q("q2", "?", "a", ["D1:3"]),
        Q("q3", "?", "a", []),
        Q("q4", "?", "a", ["D3:1"]),
    ]
    d = dialogue(questions=qs)
    ids = lambda s: [t.id for t in d.sessions[s - 1].turns]  # noqa: E731
    assert [q.id for q in unlocked_questions(d, [], ids(1))] == ["q2"]
    assert [q.id for q in unlocked_questions(d, ids(1), ids(2))] == ["q1"]
    assert [q.id for q in unlocked_questions(d, ids(1) + ids(2), ids(3))] == ["q3", "q4"]
    probe = Q("p", "?", "a", ["D3:2"], "probe")
    quiz = assemble_quiz(d, [probe], ids(1) + ids(2), ids(3), final_session_weight=2.0)
    assert [(i.question.id, i.kind, i.weight) for i in quiz.items] == [
        ("p", "probe", 2.0),
        ("q3", "official", 2.0),
        ("q4", "official", 2.0),
    ]
    quiz2 = assemble_quiz(d, [Q("p1", "?", "a", ["D2:1"], "probe")], ids(1), ids(2))
    assert [i.weight for i in quiz2.items] == [1.0, 1.0] and quiz2.total_weight == 2.0


# ----------------------------------------------------------------------------------------- audit logic
class KeywordReader:
    """Test double with known behaviour: answers ``gold`` citing the first retrieved entry containing
    ``support``, unless an entry containing "POISON" was retrieved (then it answers wrong citing it)."""

    def __init__(self, support: dict[str, str]):
        self.support, self.calls = support, 0

    def answer(self, question, retrieval):
        self.calls += 1
        hits = retrieval.hits
        poison = [h.entry.id for h in hits if "POISON" in h.entry.latest.content]
        if poison:
            return ReaderAnswer("wrong", (poison[0],))
        good = [h.entry.id for h in hits if self.support[question.id] in h.entry.latest.content]
        if good:
            kept, dropped = check_citations([good[0], "e99999"], retrieval)
            return ReaderAnswer(question.answer, kept, dropped)
        return ReaderAnswer(ABSTAIN_ANSWER, ())


@pytest.fixture()
def audit_setup():
    bank = MemoryBank()
    a = bank.write("event", "biscuit dog story alpha").entry_id  # sole support of q1
    d1 = bank.write("event", "marathon race beta one").entry_id  # two supports of q2
    d2 = bank.write("event", "marathon race beta two").entry_id
    p = bank.write("event", "POISON lisbon city gamma").entry_id  # poisons q3
    bank.write("event", "lisbon city gamma clean")  # answers q3 once the poison is gone
    z = bank.write("event", "zzz unrelated zeta never").entry_id  # never retrieved (loses every tie)
    retriever = Retriever(
        HashingEmbedder(dim=8192),
        RetrieverConfig(widths={"event": 2, "profile": 1, "verbatim": 1}, paths=("event",)),
    )
    quiz = assemble_quiz(
        dialogue(
            1,
            1,
            [
                Q("q1", "biscuit dog story", "Biscuit", ["D1:1"]),
                Q("q2", "marathon race beta", "Porto", ["D1:1"]),
                Q("q3", "lisbon city gamma", "Lisbon", ["D1:1"]),
            ],
        ),
        [],
        [],
        ["D1:1"],
    )
    reader = KeywordReader({"q1": "alpha", "q2": "marathon", "q3": "lisbon"})
    return bank, retriever, quiz, reader, dict(a=a, d1=d1, d2=d2, p=p, z=z)


def test_audit_flips_cures_duplicates_and_zero_detection(audit_setup):
    bank, retriever, quiz, reader, ids = audit_setup
    judge = F1Judge(0.5)
    cache = ReaderCache(reader, judge)
    exam = run_exam(bank, quiz, reader, judge, retriever, cache)
    assert [r.correct for r in exam.results] == [True, True, False]
    assert exam.accuracy == pytest.approx(2 / 3)
    calls = reader.calls
    audit = audit_exam(bank, exam, reader, judge, retriever, cache)
    assert audit.counts.reader_calls == reader.calls - calls == 3  # each deletion re-answer was computed
    rec = {(r.question_id, r.entry_id): r for r in audit.records}
    assert rec[("q1", ids["a"])].cited and rec[("q1", ids["a"])].flips is True  # sole support: load-bearing
    cited_q2 = [r for r in audit.records if r.question_id == "q2" and r.cited]
    assert len(cited_q2) == 1 and cited_q2[0].flips is False  # the duplicate absorbs the deletion
    assert rec[("q3", ids["p"])].cited and rec[("q3", ids["p"])].cures is True
    assert all(r.flips is None and r.cures is None for r in audit.records if not r.cited)
    assert not any(r.entry_id == ids["z"] for r in audit.records)  # zero detection: never retrieved
    assert audit.counts.zero_detected == 1 and audit.counts.deletion_tests == 3
    assert audit.counts.flips == 1 and audit.counts.cures == 1
    assert audit.counts.dropped_citations == 2  # the forged "e99999" on each correct answer
    assert audit.chains[ids["a"]] == bank.entry(ids["a"]).op_ids
    # the same audit again is answered entirely from the cache
    calls = reader.calls
    again = audit_exam(
        bank, run_exam(bank, quiz, reader, judge, retriever, cache), reader, judge, retriever, cache
    )
    assert reader.calls == calls and again.counts.reader_calls == 0 and again.counts.deletion_tests == 3
    assert AuditResult.from_dict(audit.to_dict()) == audit


def test_audit_records_carry_the_versions_read_and_old_files_still_load(audit_setup):
    """A cited record holds the versions its answer was read from: the reader's ``evidence``, else (a reader
    that does not say, like this one) the newest. They survive JSON; an audit written before the field loads
    with none, which :func:`cited_versions` leaves to the newest-version default."""
    import json
    from dataclasses import replace

    from memprm.credit import cited_versions
    from memprm.env.audit import read_versions

    bank, retriever, quiz, reader, ids = audit_setup
    bank.merge(ids["a"], "biscuit dog story alpha again")  # q1's support now has two versions
    judge = F1Judge(0.5)
    cache = ReaderCache(reader, judge)
    exam = run_exam(bank, quiz, reader, judge, retriever, cache)
    audit = audit_exam(bank, exam, reader, judge, retriever, cache)
    assert all(bool(r.versions) == r.cited for r in audit.records)
    cited = {r.entry_id: r.versions for r in audit.records if r.cited}
    assert cited[ids["a"]] == (1,)  # the reader did not say: the newest
    entry = bank.entry(ids["a"])
    said = ReaderAnswer("Biscuit", (ids["a"],), evidence=((ids["a"], 0), ("e77777", 1)))
    assert read_versions(said, entry) == (0,)
    with pytest.raises(ValueError, match="read_versions"):
        read_versions(ReaderAnswer("Biscuit", (ids["a"],), evidence=((ids["a"], 2),)), entry)
    assert AuditResult.from_dict(json.loads(json.dumps(audit.to_dict()))) == audit
    old = audit.to_dict()
    for r in old["records"]:
        del r["versions"]
    loaded = AuditResult.from_dict(old)
    assert loaded.records == tuple(replace(r, versions=()) for r in audit.records)
    assert cited_versions(loaded.records) == {}
    assert cited_versions(audit.records)[ids["a"]] == {1}


def test_deleting_a_never_retrieved_entry_leaves_every_reader_input_identical(audit_setup):
    bank, retriever, quiz, _, ids = audit_setup
    for item in quiz.items:
        full = retriever.retrieve(bank, item.question.text)
        assert ids["z"] not in full.entry_ids
        assert reader_input_key(
            retriever.retrieve(bank.without([ids["z"]]), item.question.text)
        ) == reader_input_key(full)


def test_failed_probe_anchors_are_reported(audit_setup):
    bank, retriever, _, reader, _ = audit_setup
    reader.support["pr"] = "nothing-matches"
    probe = Q("pr", "biscuit dog story", "Biscuit", ["D1:1"], "probe")
    quiz = assemble_quiz(dialogue(1, 1), [probe], [], ["D1:1"])
    exam = run_exam(bank, quiz, reader, F1Judge(), retriever)
    audit = audit_exam(bank, exam, reader, F1Judge(), retriever)
    assert audit.failed_probe_anchors == {"D1:1"}


# ----------------------------------------------------------------------------------------- probe gates
def test_probe_gates_keep_only_controlled_probes():
    emb = build_embedder(EmbedderConfig())
    retriever = Retriever(emb)
    reader, judge = ExtractiveReader(emb, ReaderConfig()), F1Judge(0.5)
    turns = (
        Turn("D1:1", "Ana", "I adopted a dog named Biscuit", 1),
        Turn("D1:2", "Bo", "My sister lives in Lisbon", 1),
        Turn("D1:3", "Bo", "Yes, my sister really lives in Lisbon", 1),
    )
    d = Dialogue("d", ("Ana", "Bo"), (Session(1, datetime(2023, 5, 1), turns),))
    ref = MemoryBank()
    advance_reference(ref, d, 1)
    good = Q("d/probe/D1:1/0", "Ana adopted a dog named what?", "Biscuit", ["D1:1"], "probe")
    redundant = Q("d/probe/D1:2/0", "Bo's sister lives in what city?", "Lisbon", ["D1:2"], "probe")
    closed_book = Q("d/probe/D1:1/1", "What colour is the dog's collar?", ABSTAIN_ANSWER, ["D1:1"], "probe")
    rep = gate_probes([good, redundant, closed_book], ref, ReaderCache(reader, judge), retriever)
    assert [p.id for p in rep.kept] == [good.id]
    # closed_book passes gate 1 (the memory supports no answer about a collar: the reader abstains, which is
    # right) and fails gate 2 (closed-book it abstains too); redundant fails gate 3 (D1:3 still answers it)
    assert rep.gate1 == 3 and rep.gate2 == 2 and rep.gate3 == 1
    assert rep.rates()["anchor_removal_error_rate"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="exactly one anchor"):
        gate_probes([Q("x", "?", "a", ["D1:1", "D1:2"], "probe")], ref, ReaderCache(reader, judge), retriever)


# ----------------------------------------------------------------------------------------- env gates
def test_play_window_gate_accounting_and_invalid_actions():
    emb = HashingEmbedder(dim=128)
    retriever = Retriever(emb)
    turns = (
        Turn("D1:1", "Ana", "hi", 1),  # 1 word: no gate
        Turn("D1:2", "Bo", "I adopted a dog named Biscuit", 1, facts=(Fact("Bo adopted Biscuit", "D1:2"),)),
        Turn("D1:3", "Ana", "Biscuit is such a lovely name", 1),
    )
    d = Dialogue("d", ("Ana", "Bo"), (Session(1, datetime(2023, 5, 1), turns),))
    env = MemoryEnv(EnvConfig(gate_min_words=2), retriever, None, None, FactProbeGenerator())
    seen = []

    def policy(obs):
        seen.append(obs)
        if obs.layer == "event" and obs.turn.id == "D1:2":
            return Action("write", "Bo adopted a dog named Biscuit", key="pet")
        if obs.layer == "event":
            return Action("merge", "Biscuit is lovely", entry_id=obs.neighbours[0].entry_id)
        return Action("merge", "bad", entry_id="e99999")  # invalid → applied as a Noop and counted

    bank = MemoryBank()
    play = env.play_window(d, 1, bank, policy)
    assert [(s.turn_id, s.layer, s.kind) for s in play.steps] == [
        ("D1:2", "event", "write"),
        ("D1:2", "profile", "noop"),
        ("D1:3", "event", "merge"),
        ("D1:3", "profile", "noop"),
    ]
    assert play.invalid_actions == 2
    assert len(bank.entries("verbatim")) == 3 and len(bank.entries("event")) == 1
    assert len(bank.entries("event")[0].versions) == 2
    # decision-time records: the merge saw the chain as it was (one version), and informativeness is a label
    merge = play.decisions[2]
    assert merge.kind == "merge" and "Bo adopted a dog named Biscuit" in merge.neighbours[0].text
    assert "Biscuit is lovely" not in merge.neighbours[0].text
    assert [x.turn_is_informative for x in play.decisions] == [True, True, False, False]
    assert seen[2].context == ("Ana: hi", "Bo: I adopted a dog named Biscuit")
    assert seen[0].timestamp == "2023-05-01T00:00:00"
    assert {o.op_id for o in bank.ops} >= {s.op_id for s in play.steps}
