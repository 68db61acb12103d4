"""Note writers, the chain-aware reader's two-fact join, abstention calibration and the fixed managers."""

import math
from datetime import datetime

import numpy as np
import pytest

from memprm.data.records import Fact, Question, Turn
from memprm.env.calibration import NEVER, choose_threshold
from memprm.llm.notes import LLMNoteWriter, Note, OracleNoteWriter
from memprm.llm.reader import ExtractiveReader, ReaderConfig
from memprm.llm.reader_text import names_in
from memprm.llm.rule_notes import RuleNoteWriter, resolve_first_person
from memprm.memory import HashingEmbedder
from memprm.memory.bank import MemoryBank
from memprm.memory.retriever import Retriever

SAID = datetime(2023, 5, 8, 14, 0)


def notes(text, speaker="Ana"):
    return RuleNoteWriter().notes(Turn("D1:1", speaker, text, 1), SAID)


# ------------------------------------------------------------------------------------------------ rule writer
@pytest.mark.parametrize(
    "text, expected",
    [
        ("Guess what? I ran a half marathon yesterday!", [Note("event", "", "On 7 May 2023, Ana ran a half marathon.")]),
        ("So last week I built a birdhouse, and it was exhausting but worth it.",
         [Note("event", "", "In the week before 8 May 2023, Ana built a birdhouse.")]),
        ("I work as a nurse, and I honestly love it.", [Note("profile", "Ana/job", "Ana's job: nurse (as of 8 May 2023)")]),
        ("I quit being a nurse, and now I work as a teacher!",
         [Note("profile", "Ana/job", "Ana's job: teacher (as of 8 May 2023)")]),  # the new value wins
        ("I used to love sushi, but now ramen is my favourite food.",
         [Note("profile", "Ana/food", "Ana's favourite food: ramen (as of 8 May 2023)")]),
        ("I moved to Lisbon! I finally left Denver.", [Note("profile", "Ana/city", "Ana's home city: Lisbon (as of 8 May 2023)")]),
    ],
)  # fmt: skip
def test_rule_writer_distills_facts(text, expected):
    assert list(notes(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Hey Bo! How's it going?",  # greeting / question
        "Wow, that sounds amazing!",  # reaction
        "That's so cool, I'm a bit jealous.",  # first person, but chatter only
        "My sister works as a chef, she loves it.",  # a third party's attribute, not the speaker's
        "A friend of mine just got back from Osaka.",
        "Have you ever been to Oslo?",
    ],
)
def test_rule_writer_drops_small_talk_and_third_parties(text):
    assert notes(text) == ()


PARAPHRASES = [  # English constructions no generator template uses (issue 23: roles read language)
    ("I'm a nurse at the children's hospital.", ("Ana/job", "Ana's job: nurse")),
    ("Sushi is my favourite food.", ("Ana/food", "Ana's favourite food: Sushi")),
    ("The show I'm watching right now is Severance.", ("Ana/show", "Ana's show: Severance")),
    ("I've been learning Spanish since June.", ("Ana/learning", "Ana's subject being learned: Spanish")),
    ("I practise the cello every evening.", ("Ana/instrument", "Ana's instrument: cello")),
    ("I switched my go-to drink from espresso to iced coffee.", ("Ana/drink", "Ana's go-to drink: iced coffee")),
    ("You'd like my partner, Quinn, they're hilarious.", ("Ana/partner", "Ana's partner: Quinn")),
    ("I have a new cat named Pixel.", ("Ana/cat", "Ana's cat: Pixel")),
    ("My flat in Oslo is tiny but I love it.", ("Ana/city", "Ana's home city: Oslo")),  # where one's home is
    # constructions around an attribute noun (NOUN_PATTERNS), a tag question, more occupation verbs
    ("Nothing beats my usual drink, a flat white.", ("Ana/drink", "Ana's go-to drink: flat white")),
    ("I start every day with matcha, my drink of choice.", ("Ana/drink", "Ana's go-to drink: matcha")),
    ("The language I'm most proud of is Finnish.", ("Ana/language", "Ana's language: Finnish")),
    ("Paella is now the dish I cook most.", ("Ana/food", "Ana's favourite food: Paella")),
    ("Lately paella has taken over as my top dish.", ("Ana/food", "Ana's favourite food: paella")),
    ("Big news on the car front for me: a Volvo XC40.", ("Ana/car", "Ana's car: Volvo XC40")),
    ("I'm a pharmacist by training, you know?", ("Ana/job", "Ana's job: pharmacist")),
    ("Last spring I was hired as a paramedic.", ("Ana/job", "Ana's job: paramedic")),
    ("Being a welder keeps me busy.", ("Ana/job", "Ana's job: welder")),
    ("I'm on a hockey team at work.", ("Ana/sport", "Ana's sport: hockey")),
    ("I take Greek lessons on Saturdays.", ("Ana/learning", "Ana's subject being learned: Greek")),
    ("We made Porto our home in the spring.", ("Ana/city", "Ana's home city: Porto")),
]


@pytest.mark.parametrize("text, expected", PARAPHRASES)
def test_rule_writer_reads_paraphrased_attributes(text, expected):
    key, prefix = expected
    profile = [n for n in notes(text) if n.layer == "profile"]
    assert [n.key for n in profile] == [key] and profile[0].text.startswith(prefix + " (as of "), profile


@pytest.mark.parametrize(
    "text",
    [
        "We bought a house in Denver.",  # a purchase, not a car, not a home city
        "I'm a bit tired today.",  # a degree word, not a job
        "My guess is that it rains.",  # "my guess is" names no attribute
        "I sold my Kia Soul and bought a Jeep Wrangler!",  # a capitalized make is no attribute noun
        "My sister Maya is a chef.",  # a relative's attribute
        "My best mate is opening a bakery.",  # a friend's news
        "Someone on my street is selling a Kia Soul.",  # "my street is selling": a verb, not a value
    ],
)
def test_rule_writer_writes_no_profile_note_for_look_alikes(text):
    assert [n for n in notes(text) if n.layer == "profile"] == []


@pytest.mark.parametrize(
    "text, expected",
    [  # a past-tense predicate of any verb; the date from any clause of the sentence; the event's own clause
        ("Quick news: I repainted the kitchen three nights ago.", "On 5 May 2023, Ana repainted the kitchen."),
        ("On Saturday, can you believe it, I swam across the lake, and I'm still buzzing.",
         "On 6 May 2023, Ana swam across the lake."),
        ("The night before last I finally fixed the fence and painted it.",
         "On 6 May 2023, Ana finally fixed the fence and painted it."),
        ("I passed my driving test a full week ago.", "On 1 May 2023, Ana passed Ana's driving test."),
        ("The previous week I volunteered at the food bank.", "In the week before 8 May 2023, Ana volunteered at the food bank."),
    ],
)  # fmt: skip
def test_rule_writer_dates_events_in_any_english(text, expected):
    assert [n.text for n in notes(text)] == [expected]


def test_first_person_resolution_and_no_copy_of_the_turn():
    assert resolve_first_person("I'm sure my dog likes me", "Ana") == "Ana is sure Ana's dog likes Ana"
    turn = "I adopted a kitten named Mochi two days ago, I'd totally do it again."
    (note,) = notes(turn)
    assert note.text == "On 6 May 2023, Ana adopted a kitten named Mochi." and note.text != f"Ana: {turn}"


def test_oracle_writer_uses_annotations():
    t = Turn("D1:1", "Ana", "raw", 1, facts=(Fact("Ana works as a nurse.", "D1:1", "Ana", "job", "nurse"),
                                           Fact("On 7 May 2023, Ana ran.", "D1:1", "Ana", "event:marathon")))  # fmt: skip
    assert OracleNoteWriter().notes(t, SAID) == (
        Note("profile", "Ana/job", "Ana's job: nurse (as of 8 May 2023)"),
        Note("event", "", "On 7 May 2023, Ana ran."),
    )


def test_llm_writer_parses_and_counts_failures():
    from helpers.fakes import FakeClient

    from memprm.llm.endpoint import Failure

    ok = {"notes": [{"layer": "profile", "key": "job", "text": "Ana's job: nurse"}]}
    writer = LLMNoteWriter(FakeClient([ok, Failure("down", None, "transport")]))
    t = Turn("D1:1", "Ana", "I work as a nurse", 1)
    assert writer.notes(t, SAID) == (Note("profile", "job", "Ana's job: nurse"),)
    assert writer.notes(t, SAID) == () and writer.failed == 1


# ------------------------------------------------------------------------------------------------ reader
def q(text):
    return Question("q1", text, "", "multi-hop")


@pytest.mark.parametrize(
    "question, event",
    [
        ("What is the name of the partner of the person who organised a charity bake sale?",
         "On 7 May 2023, Mei organised a charity bake sale."),
        # other relative clauses, and the bridge name opening its sentence (no date lead)
        ("Who is the partner of the woman who organised a charity bake sale?",
         "Mei organised a charity bake sale."),
        ("Which partner does someone who organised a charity bake sale have?",
         "Mei organised a charity bake sale."),
    ],
)  # fmt: skip
def test_reader_joins_two_facts_through_a_shared_name(question, event):
    emb = HashingEmbedder(dim=1024)
    bank = MemoryBank()
    a = bank.write("event", event, timestamp="2023-05-08").entry_id
    b = bank.write("profile", "Mei's partner: Quinn (as of 1 May 2023)", timestamp="2023-05-01").entry_id
    bank.merge(b, "Mei's partner: Jamie (as of 8 May 2023)", timestamp="2023-05-08")
    bank.write("profile", "Kenji's partner: Riley (as of 1 May 2023)", timestamp="2023-05-01")
    reader = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.0))
    ans = reader.answer(q(question), Retriever(emb).retrieve(bank, question))
    assert ans.answer == "Jamie" and ans.cited == (a, b)  # the bridge entry and the joined chain's newest value
    assert names_in("On 7 May 2023, Mei organised it") == {"Mei"}


def test_names_come_from_capitalization_not_a_list_of_openers():
    assert names_in("Guess what? Meet Quinn, my partner.") == {"Quinn"}  # openers are not names
    assert names_in("Switched jobs! Plot twist: Ana is a chef now.") == {"Ana"}
    assert names_in("Mei's partner: Quinn (as of 1 May 2023)") == {"Mei", "Quinn"}  # possessive, after a colon
    assert names_in("Kenji: I went hiking on Friday in May.") == {"Kenji"}  # a speaker label; no calendar words
    assert names_in("Riley baked bread.") == set() and names_in("Riley baked bread.", {"Riley"}) == {"Riley"}


# ------------------------------------------------------------------------------------------------ calibration
def test_choose_threshold_by_hand():
    scores = [0.9, 0.8, 0.3, 0.2]
    answered = [True, True, False, False]  # the two low-support questions are unanswerable ...
    abstain = [False, False, True, True]  # ... where abstaining is right
    assert choose_threshold(scores, answered, abstain) == (0.8, 1.0)  # abstain below 0.8: all four right
    # abstaining never helps: keep answering (ties go to the lowest threshold, "never")
    assert choose_threshold([0.5, 0.4], [True, True], [False, False]) == (NEVER, 1.0)
    assert choose_threshold([], [], []) == (NEVER, 0.0)
    t, acc = choose_threshold([0.5, 0.5], [True, False], [False, True])  # a tie in scores: one of two either way
    assert acc == 0.5 and t == NEVER


def test_calibration_reads_the_banks_reader_calibrate_with_names(monkeypatch):
    """``reader.calibrate_with``: the teacher's banks by default, the verbatim-only banks of the Noop manager
    with ``verbatim`` (the same for every manager); the choice is logged and an unknown value is refused."""
    from memprm.config import load_config
    from memprm.data.synthetic import SyntheticConfig, generate_synthetic
    from memprm.env.calibration import calibrate_abstention
    from memprm.env.managers import noop_manager
    from memprm.env.stack import build_stack
    from memprm.stages import reader_calibration

    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2))
    used = []

    def spy(env, dialogues, manager):
        used.append(manager)
        return calibrate_abstention(env, dialogues, manager)

    monkeypatch.setattr(reader_calibration, "calibrate_abstention", spy)
    tiny = ["embedder.kind=hashing", "embedder.dim=256"]
    cals = {}
    for mode in ("teacher", "verbatim"):
        cfg = load_config(None, [*tiny, f"reader.calibrate_with={mode}"])
        stack = build_stack(cfg)
        cals[mode] = reader_calibration.calibrate_reader(cfg, stack, data)
        assert used[-1] is (stack.teacher if mode == "teacher" else noop_manager)
        assert stack.env.reader.abstain_threshold == cals[mode].threshold
    # the verbatim banks hold only raw turns: no managed entry, so fewer answers than the teacher's notes
    assert cals["verbatim"].accuracy_never <= cals["teacher"].accuracy_never
    with pytest.raises(ValueError, match="reader.calibrate_with must be 'teacher' or 'verbatim'"):
        load_config(None, ["reader.calibrate_with=oracle"])


def test_managers_writing_notes_get_more_flips_than_raw_copies():
    """A copy of a turn duplicates its verbatim entry, so deleting it never flips an answer; notes do."""
    from helpers.tools_loader import load_tool

    from memprm.config import load_config
    from memprm.data.synthetic import SyntheticConfig, generate_synthetic
    from memprm.env.managers import write_all_manager
    from memprm.env.stack import build_stack

    policy_gap = load_tool("policy_gap")
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=3))
    stack = build_stack(load_config(None, []))
    raw = policy_gap.measure(stack, data["test"], write_all_manager, "raw")
    noted = policy_gap.measure(stack, data["test"], stack.teacher, "teacher")
    assert raw["tested"] > 0 and noted["tested"] > 0
    assert raw["flips"] / raw["tested"] < noted["flips"] / noted["tested"]
    assert noted["accuracy"] > raw["accuracy"]
    assert np.isclose(raw["versions_per_entry"], 1.0)


def test_earlier_version_walks_back_over_restatements():
    from memprm.llm.reader_text import earlier_version
    from memprm.memory.bank import Version

    chain = [Version(f"Mei's instrument: {v}", None, ("D1:1",), f"op{i}")
             for i, v in enumerate(["trumpet", "cello", "violin", "violin"])]  # fmt: skip
    assert earlier_version(chain, "the violin?").content.endswith("cello")  # not the restated violin
    assert earlier_version(chain, "the cello?").content.endswith("trumpet")
    assert earlier_version(chain, "the banjo?").content.endswith("violin")  # unnamed: the second-to-last
    assert earlier_version(chain[:2], "the trumpet?").content.endswith("trumpet")  # nothing before the first


@pytest.mark.parametrize("per_manager", [False, True], ids=["one-calibration", "per-manager-calibration"])
def test_policy_gap_tool_writes_its_table_and_json(tmp_path, capsys, per_manager):
    import json

    from helpers.tools_loader import load_tool

    out = tmp_path / "gap.json"
    tiny = ["data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
            "data.synthetic.sessions_per_dialogue=2", "embedder.kind=hashing", "embedder.dim=256"]  # fmt: skip
    flags = ["--per-manager-calibration", "reader.time_order=true"] if per_manager else []
    assert load_tool("policy_gap").main(["--json", str(out), *flags, *tiny]) == 0
    got = json.loads(out.read_text())
    names = {"Noop-only", "Write-all (raw turns)", "heuristic teacher", "oracle (annotations)",
             "gold decisions (real notes)", "teacher, merge by key"}
    assert names | {f"random (seed {s})" for s in range(3)} == set(got["managers"])
    noop = got["managers"]["Noop-only"]
    assert noop["entries"] == 0 and noop["tested"] == 0 and noop["n_questions"] > 0
    assert 0.0 <= got["tie_rate"] <= 1.0 and got["groups"] == 2  # one group per window of the test dialogue
    assert got["managers"]["oracle (annotations)"]["entries"] > 0  # it found the annotations in the dialogues
    # one test dialogue: the between-dialogue spread is unknown, so the interval is undefined, not invented
    assert all(math.isnan(r["ci95"][0]) and r["ci95_text"] == "–" for r in got["managers"].values())
    printed = capsys.readouterr().out
    assert "| heuristic teacher |" in printed and got["time_order"] is per_manager
    if per_manager:  # each manager's own threshold, in the JSON and as a table column; none run-wide
        assert got["abstain_threshold"] is None and got["calibration"].startswith("per manager")
        assert all(-1.0 <= r["abstain_threshold"] <= 1.0 for r in got["managers"].values())
        assert "| manager | accuracy | 95% CI | threshold |" in printed and "time-ordered" in printed
    else:
        assert got["calibration"] == "on the teacher banks" and isinstance(got["abstain_threshold"], float)
        assert all("abstain_threshold" not in r for r in got["managers"].values())
        assert "| manager | accuracy | 95% CI | " in printed and "chain-aware" in printed


# ------------------------------------------------------------------------------------------------ leak guards
@pytest.fixture(scope="module")
def annotated_play():
    """A synthetic dialogue and every observation the environment builds over it (Noop at each gate), once
    with the default rule notes and once with ``notes.kind=oracle`` (policy_gap's analysis setting)."""
    from memprm.config import load_config
    from memprm.data.synthetic import SyntheticConfig, generate_dialogue
    from memprm.env.gates import Action
    from memprm.env.stack import build_stack

    d = generate_dialogue(SyntheticConfig(sessions_per_dialogue=2), 0)
    seen = {}
    for kind in ("rules", "oracle"):
        cfg = load_config(None, ["embedder.kind=hashing", "embedder.dim=64", f"notes.kind={kind}"])
        env = build_stack(cfg).env
        seen[kind], bank = [], MemoryBank()
        for s in d.sessions:
            env.play_window(d, s.index, bank, lambda obs, out=seen[kind]: out.append(obs) or Action.noop())
    return d, seen


def test_observations_built_by_the_environment_carry_no_fact_annotations(annotated_play):
    from dataclasses import replace

    d, seen = annotated_play
    turns = d.turn_index()
    annotated = {t.id for t in d.turns() if t.facts}
    for kind, observations in seen.items():
        assert annotated & {o.turn.id for o in observations}, kind  # annotated turns do open gates...
        assert all(o.turn.facts == () for o in observations), kind  # ...and their observations carry none
        # the rest of the turn is the dialogue's
        assert all(o.turn == replace(turns[o.turn.id], facts=()) for o in observations), kind
    # the env's oracle note writer (policy_gap only) reads the dialogue's turn, so its notes still arrive
    assert {o.turn.id for o in seen["oracle"] if o.notes} == annotated & {o.turn.id for o in seen["oracle"]}


def test_an_observation_built_anywhere_drops_the_turns_facts():
    from memprm.env.gates import Observation

    fact = Fact("Ana works as a nurse.", "D1:1", "Ana", "job", "nurse")
    t = Turn("D1:1", "Ana", "I work as a nurse.", 1, facts=(fact,))
    obs = Observation("D1", 1, t, "2023-05-08T14:00:00", "profile", (), ())
    assert obs.turn.facts == () and obs.turn.render == t.render and obs.turn.id == t.id
    assert t.facts  # the dialogue's own turn keeps its annotations


def test_oracle_manager_reads_annotations_from_its_dialogues_not_the_observation(annotated_play):
    from memprm.env.managers import OracleManager

    d, seen = annotated_play
    observations = seen["rules"]
    oracle = OracleManager([d])
    acted = {o.turn.id for o in observations if oracle(o).kind != "noop"}
    annotated = {t.id for t in d.turns() if t.facts}
    assert acted == annotated & {o.turn.id for o in observations}  # every gated annotated turn, nothing else
    with pytest.raises(ValueError, match="not in the dialogues it was given"):
        OracleManager([])(observations[0])


def test_gold_decision_manager_decides_by_annotation_and_writes_the_note_writers_content():
    """Noop without an annotated fact for the layer (even with a note on offer); the note (or, without one, the
    turn) written; a later value of the same person's attribute merged into the shown entry holding an earlier
    one, and written when that entry is not among the first m shown."""
    from memprm.credit.tiers import Neighbour
    from memprm.data.records import Dialogue, Session
    from memprm.env.gates import Observation
    from memprm.env.managers import GoldDecisionManager

    ts = "2023-05-08T14:00:00"
    nurse = Turn("D1:1", "Ana", "I work as a nurse.", 1, facts=(Fact("Ana is a nurse.", "D1:1", "Ana", "job", "nurse"),))
    chat = Turn("D1:2", "Ana", "Lovely weather we are having today.", 1)
    teacher = Turn("D1:3", "Ana", "I switched jobs and teach now.", 1,
                   facts=(Fact("Ana is a teacher.", "D1:3", "Ana", "job", "teacher"),))  # fmt: skip
    d = Dialogue("D1", ("Ana",), (Session(1, None, (nurse, chat, teacher)),))
    gold = GoldDecisionManager([d], merge_candidates=2)
    note = Note("profile", "Ana/job", "Ana's job: nurse")
    obs = lambda turn, layer, notes=(), shown=(): Observation("D1", 1, turn, ts, layer, (), shown, notes)  # noqa: E731

    a = gold(obs(nurse, "profile", (note,)))
    assert (a.kind, a.content, a.key) == ("write", "Ana's job: nurse", "Ana/job")
    assert gold(obs(nurse, "event", (Note("event", "", "Ana works as a nurse"),))).kind == "noop"  # no event fact
    assert gold(obs(chat, "profile", (Note("profile", "Ana/mood", "Ana's mood: fine"),))).kind == "noop"
    other = Neighbour("e2", "profile", "(2023-05-08) Bo's job: pilot")
    held = Neighbour("e1", "profile", "(2023-05-08) Ana's job: nurse")
    a = gold(obs(teacher, "profile", (), (other, held)))  # no note: the turn, into the entry with the old value
    assert (a.kind, a.content, a.entry_id) == ("merge", teacher.render, "e1")
    a = gold(obs(teacher, "profile", (), (other, other, held)))  # the held entry is third: not a candidate (m = 2)
    assert (a.kind, a.content) == ("write", teacher.render)
    with pytest.raises(ValueError, match="not in its dialogues"):
        GoldDecisionManager([])(obs(nurse, "profile"))
    # merge=key, store=notes: no annotation read (no dialogues given); a note goes into the first of the m shown
    # entries carrying its key, else it is written; no note, no action
    by_key = GoldDecisionManager([], merge_candidates=2, store="notes", merge="key")
    keyed = Neighbour("e3", "profile", "(2023-05-08) Ana's job: nurse", key="Ana/job")
    switched = Note("profile", "Ana/job", "Ana's job: teacher")
    a = by_key(obs(teacher, "profile", (switched,), (other, keyed)))
    assert (a.kind, a.content, a.entry_id) == ("merge", "Ana's job: teacher", "e3")
    assert by_key(obs(teacher, "profile", (switched,), (other, other, keyed))).kind == "write"  # third: not shown
    unkeyed = Note("event", "", "Ana started teaching")
    a = by_key(obs(teacher, "event", (unkeyed,), (Neighbour("e4", "event", "x", key=""),)))
    assert (a.kind, a.content) == ("write", "Ana started teaching")  # an empty key matches nothing
    assert by_key(obs(chat, "profile")).kind == "noop"


def test_gold_decision_manager_with_both_rules_of_the_teacher_is_the_teacher(annotated_play):
    """store=notes, merge=cosine takes every decision by the heuristic teacher's rule: the same actions at every
    gate the environment built; store=gold acts exactly on the annotated turns."""
    from memprm.config import load_config
    from memprm.env.managers import GoldDecisionManager
    from memprm.env.stack import build_stack

    d, seen = annotated_play
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=64"]))
    as_teacher = GoldDecisionManager([d], store="notes", merge="cosine", embedder=stack.embedder)
    observations = seen["rules"]
    assert [as_teacher(o) for o in observations] == [stack.teacher(o) for o in observations]
    assert any(stack.teacher(o).kind != "noop" for o in observations)
    gold = GoldDecisionManager([d], store="gold", merge="cosine", embedder=stack.embedder)
    acted = {o.turn.id for o in observations if gold(o).kind != "noop"}
    assert acted == {t.id for t in d.turns() if t.facts} & {o.turn.id for o in observations}
    with pytest.raises(ValueError, match="needs the embedder"):
        GoldDecisionManager([d], merge="cosine")
