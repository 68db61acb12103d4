"""The held-out and blind phrasing families: new sentences, the same dialogues.

``SyntheticConfig.phrasing="heldout"`` (and ``"blind"``) must share no template (nor any run of four literal
words) with the standard family, keep every template convention, and give a line-by-line paraphrase of the
standard data: the same plan, turn ids, fact annotations, questions' answers and evidence. ``blind`` shares no
run of four literal words with any other family either. The generic invariants of the generator run on every
family in ``test_synthetic.py``; this file checks what is specific to the reworded families.
"""

from __future__ import annotations

import itertools
import re
import string
from collections import Counter
from dataclasses import replace
from datetime import date, timedelta

import pytest
from test_synthetic import READINGS, dialogues, distractor_templates, parse_profile_fact, word_in

from memprm.config import ConfigError, load_config
from memprm.data.synthetic import CATEGORIES, SyntheticConfig, generate_synthetic, resolve_relative_time
from memprm.data.synthetic.phrasing import BLIND, HELDOUT, PHRASING_NAMES, STANDARD, Phrasing, phrasing_tables
from memprm.data.synthetic.vocabulary import PEOPLE

pytestmark = pytest.mark.timeout(300)

DEFAULT = SyntheticConfig()
#: the families that reword the standard one line by line; the template and data-level checks below run on each
REWORDED = ("heldout", "tuning", "blind")
#: pairs of families that share no run of four literal words: every reworded family and the standard one, and
#: ``blind`` and every other (``tuning`` and ``heldout``, written before, share a few runs with each other)
RUN_FREE_PAIRS = [*((name, "standard") for name in REWORDED), ("blind", "tuning"), ("blind", "heldout")]


@pytest.fixture(scope="module")
def standard():
    return generate_synthetic(DEFAULT)


@pytest.fixture(scope="module", params=REWORDED)
def reworded(request):
    """(family name, its data on the default config), once per family."""
    return request.param, generate_synthetic(replace(DEFAULT, phrasing=request.param))


# --- the templates ---------------------------------------------------------------------------------------

# the placeholders the generator fills for each kind of template
SLOTS = {
    "statement": {"v", "a_v", "old", "a_old", "poss"},
    "ask": {"who"},
    "ask_before": {"who", "new", "a_new"},
    "value_phrase": {"v", "a_v"},
    "said": {"poss", "d"},
    "base": {"poss"},
    "ask_detail": {"who", "poss"},
    "event_tell": {"rel", "Rel", "past", "comment", "Comment"},
    "line": {"other"},
    "topical": {"topic"},
    "temporal_ask": {"who", "base"},
    "event_ident": {"past"},
    "plain": set(),
}


def surface_templates(say: Phrasing) -> list[tuple[str, str, str]]:
    """(table, slot kind, text) of every template the generator says; fact annotations excluded."""
    out: list[tuple[str, str, str]] = []
    for a in say.attributes:
        for table, kind in (("state", "statement"), ("change", "statement"), ("restate", "statement"),
                            ("ask", "ask"), ("ask_now", "ask"), ("ask_before", "ask_before"),
                            ("near_miss", "value_phrase"), ("third_party", "value_phrase")):  # fmt: skip
            out += [(f"{a.key}.{table}", kind, t) for t in getattr(a, table)]
        out.append((f"{a.key}.ident", "value_phrase", a.ident))
    for act in say.activities:
        out += [(f"{act.key}.said", "said", act.spoken), (f"{act.key}.base", "base", act.base)]
        out.append((f"{act.key}.topic", "plain", act.topic))
        if act.ask_detail:
            out.append((f"{act.key}.ask_detail", "ask_detail", act.ask_detail))
    out += [("relative_times", "plain", r.text) for r in say.relative_times]
    out += [("event_tells", "event_tell", t) for t in say.event_tells]
    out += [("comments", "plain", t) for t in say.comments]
    for table in ("greetings", "greeting_replies", "prompts", "near_miss_replies", "third_party_replies",
                  "closing_tails"):  # fmt: skip
        out += [(table, "line", t) for t in getattr(say, table)]
    out += [(f"reactions.{k}", "plain", t) for k, ts in say.reactions.items() for t in ts]
    out += [("small_talk", "plain", t) for pair in say.small_talk for t in pair]
    out += [("topical", "topical", t) for pair in say.topical for t in pair]
    out += [("closings", "line", t) for pair in say.closings for t in pair]
    out += [("temporal_ask", "temporal_ask", t) for t in say.temporal_ask]
    out.append(("event_ident", "event_ident", say.event_ident))
    return out


PLACEHOLDER = re.compile(r"\{[^}]*\}")
WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def word_runs(text: str, n: int = 4, across_placeholders: bool = False) -> set[tuple[str, ...]]:
    """Runs of ``n`` consecutive literal words (case-insensitive); a placeholder ends a run, or with
    ``across_placeholders`` is dropped, so the words either side of it join into one run."""
    runs = set()
    chunks = [PLACEHOLDER.sub(" ", text.lower())] if across_placeholders else PLACEHOLDER.split(text.lower())
    for chunk in chunks:
        words = WORD.findall(chunk)
        runs |= {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}
    return runs


def test_word_runs_hand_cases():
    assert word_runs("I work as {a_v}, and I honestly love it.") == {
        ("and", "i", "honestly", "love"), ("i", "honestly", "love", "it"),
    }  # fmt: skip
    assert word_runs("My cousin is thinking about {v}") == {("my", "cousin", "is", "thinking"),
                                                            ("cousin", "is", "thinking", "about")}  # fmt: skip
    assert word_runs("Don't be {v} at all, ok") == set()
    assert word_runs("Don't be {v} at all, ok", across_placeholders=True) == {
        ("don't", "be", "at", "all"), ("be", "at", "all", "ok"),
    }  # fmt: skip


@pytest.mark.parametrize(("name", "other"), list(itertools.combinations(PHRASING_NAMES, 2)))
def test_no_two_families_share_a_template(name, other):
    """Only ``name``'s side of a collision is reported, so a failure shows no more of ``other``."""
    others = {t for _, _, t in surface_templates(phrasing_tables(other))}
    shared = [(where, text) for where, _, text in surface_templates(phrasing_tables(name)) if text in others]
    assert not shared, shared


@pytest.mark.parametrize("across", [False, True], ids=["placeholders-end-runs", "placeholders-dropped"])
@pytest.mark.parametrize(("name", "other"), RUN_FREE_PAIRS, ids=lambda n: n)
def test_the_families_share_no_four_word_run(name, other, across):
    """Reported as ``name``'s template and the shared run, without ``other``'s template."""
    other_runs = {r for _, _, text in surface_templates(phrasing_tables(other))
                  for r in word_runs(text, across_placeholders=across)}  # fmt: skip
    overlaps = [(where, text, " ".join(r)) for where, _, text in surface_templates(phrasing_tables(name))
                for r in word_runs(text, across_placeholders=across) if r in other_runs]  # fmt: skip
    assert not overlaps, overlaps


@pytest.mark.parametrize("name", REWORDED)
def test_reworded_tables_pair_with_the_standard_ones(name):
    """Same lengths everywhere (so both families make the same random draws), same attribute keys, values
    and fact templates, same activities (keys, details, canonical ``past``), same kinds of relative time."""
    say = phrasing_tables(name)
    assert [t for t, _, _ in surface_templates(say)] == [t for t, _, _ in surface_templates(STANDARD)]
    assert say.reactions.keys() == STANDARD.reactions.keys()
    for s, h in zip(STANDARD.attributes, say.attributes, strict=True):
        assert (h.key, h.values, h.fact, h.fact_change) == (s.key, s.values, s.fact, s.fact_change)
    for s, h in zip(STANDARD.activities, say.activities, strict=True):
        assert (h.key, h.details, h.past) == (s.key, s.details, s.past) and h.said and not s.said
    for s, h in zip(STANDARD.relative_times, say.relative_times, strict=True):
        assert (h.days, h.weekday, h.week) == (s.days, s.weekday, s.week)


@pytest.mark.parametrize("name", ["standard", *REWORDED])
def test_templates_use_only_the_slots_the_generator_fills(name):
    for where, kind, text in surface_templates(phrasing_tables(name)):
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
        assert fields <= SLOTS[kind], (where, text, fields - SLOTS[kind])


@pytest.mark.parametrize("name", REWORDED)
def test_reworded_keywords_and_values_stay_where_they_belong(name):
    """A keyword of one attribute type or activity, or any attribute value, said anywhere else would make an
    unanswerable question's topic look mentioned (and break the pairing with the standard family)."""
    say = phrasing_tables(name)
    owners = {k: f"{a.key}" for a in (*say.attributes, *say.activities) for k in a.keywords}
    values = [v for a in say.attributes for v in a.values]
    names = [p.name for p in PEOPLE]
    for where, _, text in surface_templates(say):
        owner = where.split(".")[0]
        foreign = [k for k, o in owners.items() if o != owner and word_in(k, text)]
        assert not foreign, (where, text, foreign)
        assert not [v for v in (*values, *names) if word_in(v, text)], (where, text)
    for text in distractor_templates(say):
        assert not [k for k in owners if word_in(k, text)], text


@pytest.mark.parametrize("name", REWORDED)
def test_reworded_first_person_statements_never_start_with_a_value(name):
    for a in phrasing_tables(name).attributes:
        for text in (*a.state, *a.change, *a.restate):
            assert not text.startswith("{"), text


# --- the data --------------------------------------------------------------------------------------------


def test_reworded_data_is_a_paraphrase_of_the_standard_data(standard, reworded):
    name, heldout = reworded
    assert {k: v[0] for k, v in heldout.sizes().items()} == {k: v[0] for k, v in standard.sizes().items()}
    assert (heldout.report.skips, heldout.report.repairs) == (standard.report.skips, standard.report.repairs)
    assert heldout.report.path.endswith(f", phrasing={name}") and "phrasing" not in standard.report.path
    for split in ("train", "dev", "dev_calibration", "dev_selection", "test"):
        for s, h in zip(standard[split], heldout[split], strict=True):
            assert (h.id, h.speakers) == (s.id, s.speakers)
            assert [x.datetime for x in h.sessions] == [x.datetime for x in s.sessions]
            assert [(t.id, t.speaker, t.facts) for t in h.turns()] == [
                (t.id, t.speaker, t.facts) for t in s.turns()
            ]
            key = [(q.id, q.category, q.answer, q.evidence, q.date, q.unanswerable) for q in s.questions]
            assert [
                (q.id, q.category, q.answer, q.evidence, q.date, q.unanswerable) for q in h.questions
            ] == key
            assert not {t.text for t in h.turns()} & {t.text for t in s.turns()}, h.id
            assert not {q.text for q in h.questions} & {q.text for q in s.questions}, h.id


def test_reworded_question_kinds_and_counts(reworded):
    _, heldout = reworded
    counts = Counter(q.category for d in dialogues(heldout) for q in d.questions)
    assert set(counts) == set(CATEGORIES)
    for category, n in DEFAULT.questions_requested.items():
        skipped = heldout.report.skips.get(f"{category} question not formed (too few candidates)", 0)
        assert counts[category] + skipped == n * DEFAULT.n_dialogues, category
    assert 50 <= sum(counts.values()) / DEFAULT.n_dialogues <= 54
    assert sum(heldout.report.skips.values()) <= DEFAULT.n_dialogues // 2, heldout.report.skips


def test_reworded_answers_appear_in_their_evidence_turns(reworded):
    """As written (case included) in the turn the evidence points to; temporal answers never in the turn."""
    _, heldout = reworded
    for d in dialogues(heldout):
        turns = d.turn_index()
        for q in d.questions:
            ev = [turns[e].text for e in q.evidence]
            if q.category in ("single-hop", "knowledge-update"):
                assert q.answer in ev[-1], (q.text, ev)
            elif q.category == "previous-value":
                assert q.answer in ev[0], (q.text, ev)
            elif q.category == "multi-hop":
                assert any(q.answer in t for t in ev) and not word_in(turns[q.evidence[0]].speaker, q.text)
            elif q.category == "temporal":
                assert q.answer not in ev[0], (q.text, ev)
            else:
                assert not ev and q.unanswerable


# --- relative times --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "day", "answer"),
    [
        ("earlier today", date(2023, 5, 8), "8 May 2023"),
        ("yesterday evening", date(2023, 1, 1), "31 December 2022"),
        ("the day before yesterday", date(2024, 3, 1), "28 February 2024"),
        ("three days back", date(2024, 3, 2), "28 February 2024"),
        ("five days back", date(2023, 5, 8), "3 May 2023"),
        ("this time last week", date(2023, 5, 8), "1 May 2023"),
        ("this past Monday", date(2023, 5, 8), "1 May 2023"),  # 8 May 2023 is a Monday: a week back
        ("this past Sunday", date(2023, 5, 8), "7 May 2023"),
        ("this past Friday", date(2023, 1, 1), "30 December 2022"),
        ("over the past week", date(2023, 5, 8), "the week before 8 May 2023"),
    ],
)
def test_heldout_relative_times_hand_cases(text, day, answer):
    (when,) = [r for r in HELDOUT.relative_times if r.text == text]
    assert resolve_relative_time(when, day) == answer == READINGS["heldout"].expected(text, day)


@pytest.mark.parametrize(
    ("text", "day", "answer"),
    [
        ("a few hours ago", date(2023, 5, 8), "8 May 2023"),
        ("last evening", date(2023, 1, 1), "31 December 2022"),
        ("a couple of days ago", date(2024, 3, 1), "28 February 2024"),
        ("3 days ago", date(2024, 3, 2), "28 February 2024"),
        ("5 days ago", date(2023, 5, 8), "3 May 2023"),
        ("seven days ago", date(2023, 5, 8), "1 May 2023"),
        ("Monday just gone", date(2023, 5, 8), "1 May 2023"),  # 8 May 2023 is a Monday: a week back
        ("Sunday just gone", date(2023, 5, 8), "7 May 2023"),
        ("Friday just gone", date(2023, 1, 1), "30 December 2022"),
        ("the week just gone", date(2023, 5, 8), "the week before 8 May 2023"),
    ],
)
def test_blind_relative_times_hand_cases(text, day, answer):
    (when,) = [r for r in BLIND.relative_times if r.text == text]
    assert resolve_relative_time(when, day) == answer == READINGS["blind"].expected(text, day)


def test_blind_relative_times_are_new():
    """No other family's reading finds a blind expression, so blind really exercises new date phrases."""
    for when in BLIND.relative_times:
        for family in ("standard", "tuning", "heldout"):
            assert not READINGS[family].regex.search(when.text), (family, when.text)


@pytest.mark.parametrize("name", REWORDED)
def test_every_reworded_expression_is_read_and_resolved_alike(name):
    reading = READINGS[name]
    for when in phrasing_tables(name).relative_times:
        assert reading.regex.fullmatch(when.text), when.text
        for k in range(14):  # every weekday twice
            day = date(2023, 5, 1) + timedelta(days=k)
            assert resolve_relative_time(when, day) == reading.expected(when.text, day), (when.text, day)


def test_reworded_event_turns_resolve_to_the_date_of_their_fact(reworded):
    name, heldout = reworded
    reading, n = READINGS[name], 0
    for d in dialogues(heldout):
        day_of = {s.index: s.datetime.date() for s in d.sessions}
        for t in d.turns():
            for f in t.facts:
                if parse_profile_fact(f.text) is None:
                    (expression,) = reading.regex.findall(t.text)
                    answer = reading.expected(expression, day_of[t.session_index])
                    assert f.text.startswith((f"On {answer}, ", f"In {answer}, ")), (t.text, f.text)
                    n += 1
            if not t.facts:
                assert not reading.regex.search(t.text), t.text
    assert n == DEFAULT.n_dialogues * DEFAULT.sessions_per_dialogue * DEFAULT.events_per_session


# --- selecting a family ----------------------------------------------------------------------------------


def test_phrasing_is_selected_by_name_and_on_the_command_line():
    assert PHRASING_NAMES == ("standard", "tuning", "heldout", "blind")
    assert phrasing_tables("standard") is STANDARD and phrasing_tables("heldout") is HELDOUT
    assert phrasing_tables("blind") is BLIND
    assert SyntheticConfig().phrasing == "standard"
    assert load_config(None, ["data.synthetic.phrasing=heldout"]).data.synthetic.phrasing == "heldout"
    assert load_config(None, ["data.synthetic.phrasing=blind"]).data.synthetic.phrasing == "blind"


@pytest.mark.parametrize("name", ["held-out", "Heldout", "", "paraphrase", "Blind"])
def test_an_unknown_phrasing_fails_clearly(name):
    with pytest.raises(
        ValueError,
        match=r"SyntheticConfig\.phrasing must be one of \('standard', 'tuning', 'heldout', 'blind'\)",
    ):
        SyntheticConfig(phrasing=name)
    with pytest.raises(ValueError, match="unknown phrasing"):
        phrasing_tables(name)
    with pytest.raises(ConfigError, match=r"phrasing"):  # "" reads as null on the command line
        load_config(None, [f"data.synthetic.phrasing={name}"])
