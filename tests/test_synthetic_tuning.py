"""The tuning phrasing family: new sentences the offline roles may be developed against, the same dialogues.

``SyntheticConfig.phrasing="tuning"`` must share no template (nor any run of four literal words) with the
standard family and no template with the held-out one (checked here, so nobody has to read it), keep every
template convention, and give a line-by-line paraphrase of the standard data: the same plan, turn ids, fact
annotations, questions' answers and evidence. The generic invariants run on every family in
``test_synthetic.py``, the data-level paraphrase checks on every reworded family in ``test_synthetic_heldout.py``
(whose helpers this file uses too).
"""

from __future__ import annotations

import string
from datetime import date

import pytest
from test_synthetic import READINGS, distractor_templates, word_in
from test_synthetic_heldout import surface_templates, word_runs

from memprm.config import ConfigError, load_config
from memprm.data.synthetic import SyntheticConfig, resolve_relative_time
from memprm.data.synthetic.attributes import ATTRIBUTES
from memprm.data.synthetic.phrasing import HELDOUT, PHRASING_NAMES, STANDARD, TUNING, phrasing_tables
from memprm.data.synthetic.tuning_vocabulary import reword
from memprm.data.synthetic.vocabulary import PEOPLE

pytestmark = pytest.mark.timeout(300)

DEFAULT = SyntheticConfig()


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}


# --- the templates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("across", [False, True], ids=["placeholders-end-runs", "placeholders-dropped"])
def test_tuning_shares_no_template_and_no_four_word_run_with_standard(across):
    standard, tuning = surface_templates(STANDARD), surface_templates(TUNING)
    shared = {t for _, _, t in standard} & {t for _, _, t in tuning}
    assert not shared, shared
    standard_runs: dict[tuple[str, ...], str] = {}
    for _, _, text in standard:
        standard_runs.update(dict.fromkeys(word_runs(text, across_placeholders=across), text))
    overlaps = [(where, text, " ".join(r), standard_runs[r]) for where, _, text in tuning
                for r in word_runs(text, across_placeholders=across) if r in standard_runs]  # fmt: skip
    assert not overlaps, overlaps


def test_tuning_shares_no_template_with_heldout():
    """Only the tuning side of a collision is reported: the held-out sentences stay unread."""
    heldout = {t for _, _, t in surface_templates(HELDOUT)}
    shared = [(where, text) for where, _, text in surface_templates(TUNING) if text in heldout]
    assert not shared, shared


def test_tuning_relative_times_are_new():
    """No other family's reading finds a tuning expression, so tuning really exercises new date phrases."""
    for when in TUNING.relative_times:
        for family in ("standard", "heldout"):
            assert not READINGS[family].regex.search(when.text), (family, when.text)


def test_tuning_tables_pair_with_the_standard_ones():
    """Same lengths everywhere (so both families make the same random draws), the same placeholders entry by
    entry, same attribute keys, values, keywords and fact templates, same activities (keys, details, keywords,
    canonical ``past``), same kinds of relative time."""
    standard, tuning = surface_templates(STANDARD), surface_templates(TUNING)
    assert [t for t, _, _ in tuning] == [t for t, _, _ in standard]
    assert TUNING.reactions.keys() == STANDARD.reactions.keys()
    for (where, _, s), (_, _, t) in zip(standard, tuning, strict=True):
        assert fields(t) == fields(s), (where, s, t)
    for s, t in zip(STANDARD.attributes, TUNING.attributes, strict=True):
        assert (t.key, t.values, t.fact, t.fact_change, t.keywords) == (
            s.key, s.values, s.fact, s.fact_change, s.keywords,
        )  # fmt: skip
    for s, t in zip(STANDARD.activities, TUNING.activities, strict=True):
        assert (t.key, t.details, t.past, t.keywords) == (s.key, s.details, s.past, s.keywords)
        assert t.said and not s.said
    for s, t in zip(STANDARD.relative_times, TUNING.relative_times, strict=True):
        assert (t.days, t.weekday, t.week) == (s.days, s.weekday, s.week)


def test_reword_keeps_table_lengths():
    with pytest.raises(ValueError, match=r"job\.state: 1 entries, the standard family has 4"):
        reword(ATTRIBUTES[0], state=("I work as {a_v}.",))


def test_tuning_keywords_and_values_stay_where_they_belong():
    """A keyword of one attribute type or activity, or any attribute value, said anywhere else would make an
    unanswerable question's topic look mentioned (and break the pairing with the standard family)."""
    owners = {k: f"{a.key}" for a in (*TUNING.attributes, *TUNING.activities) for k in a.keywords}
    values = [v for a in TUNING.attributes for v in a.values]
    names = [p.name for p in PEOPLE]
    for where, _, text in surface_templates(TUNING):
        owner = where.split(".")[0]
        foreign = [k for k, o in owners.items() if o != owner and word_in(k, text)]
        assert not foreign, (where, text, foreign)
        assert not [v for v in (*values, *names) if word_in(v, text)], (where, text)
    for text in distractor_templates(TUNING):
        assert not [k for k in owners if word_in(k, text)], text


def test_tuning_first_person_statements_never_start_with_a_value():
    for a in TUNING.attributes:
        for text in (*a.state, *a.change, *a.restate):
            assert not text.startswith("{"), text


# --- the data --------------------------------------------------------------------------------------------


# --- relative times --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "day", "answer"),
    [
        ("today", date(2023, 5, 8), "8 May 2023"),
        ("last night", date(2023, 1, 1), "31 December 2022"),
        ("the night before last", date(2024, 3, 1), "28 February 2024"),
        ("three nights ago", date(2024, 3, 2), "28 February 2024"),
        ("five nights ago", date(2023, 5, 8), "3 May 2023"),
        ("a full week ago", date(2023, 5, 8), "1 May 2023"),
        ("on Monday", date(2023, 5, 8), "1 May 2023"),  # 8 May 2023 is a Monday: a week back
        ("on Sunday", date(2023, 5, 8), "7 May 2023"),
        ("on Friday", date(2023, 1, 1), "30 December 2022"),
        ("the previous week", date(2023, 5, 8), "the week before 8 May 2023"),
    ],
)
def test_tuning_relative_times_hand_cases(text, day, answer):
    (when,) = [r for r in TUNING.relative_times if r.text == text]
    assert resolve_relative_time(when, day) == answer == READINGS["tuning"].expected(text, day)


# --- selecting the family --------------------------------------------------------------------------------


def test_tuning_is_selected_by_name_and_on_the_command_line():
    assert "tuning" in PHRASING_NAMES and phrasing_tables("tuning") is TUNING
    assert load_config(None, ["data.synthetic.phrasing=tuning"]).data.synthetic.phrasing == "tuning"


@pytest.mark.parametrize("name", ["Tuning", "tune", "dev"])
def test_an_unknown_phrasing_names_tuning_among_the_families(name):
    with pytest.raises(ValueError, match=r"must be one of \(.*'tuning'.*\).*'tuning': new sentences"):
        SyntheticConfig(phrasing=name)
    with pytest.raises(ConfigError, match=r"phrasing"):
        load_config(None, [f"data.synthetic.phrasing={name}"])
