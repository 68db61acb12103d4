"""The synthetic generator: determinism, ids, dates, facts, and that every question kind is what it claims.

Checks recompute things independently of the generator where they can: temporal answers from the turn's
relative expression and the session date, knowledge-update and previous-value answers from a timeline parsed
out of the canonical fact texts, distractor exchanges and third-party statements from the template texts.
The checks on generated data run on every phrasing family (``standard``, ``tuning``, ``heldout`` and ``blind``).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import replace
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memprm.data.records import Dialogue
from memprm.data.synthetic import (
    CATEGORIES,
    SyntheticConfig,
    attributes,
    format_date,
    format_session_datetime,
    generate_dialogue,
    generate_synthetic,
    resolve_relative_time,
    split_questions,
    vocabulary,
)
from memprm.data.synthetic.phrasing import PHRASING_NAMES, Phrasing, phrasing_tables

DEFAULT = SyntheticConfig()
GROWN = "sessions grown beyond turns_per_session"
GROWN_TOTAL = "turns added beyond turns_per_session (all dialogues)"
GROWN_EXAMPLE = r"(syn-\d{3}) session (\d+): (\d+) turns \(\+(\d+)\)"


@pytest.fixture(scope="module", params=PHRASING_NAMES)
def family(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def cfg(family) -> SyntheticConfig:
    return replace(DEFAULT, phrasing=family)


@pytest.fixture(scope="module")
def say(family) -> Phrasing:
    return phrasing_tables(family)


@pytest.fixture(scope="module")
def reading(family) -> Reading:
    return READINGS[family]


@pytest.fixture(scope="module")
def data(cfg):
    return generate_synthetic(cfg)


def dialogues(data) -> list[Dialogue]:
    return [*data["train"], *data["dev"], *data["test"]]


def word_in(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, flags=re.IGNORECASE) is not None


# --- an independent reading of the texts ----------------------------------------------------------------

MONTH = {m: i for i, m in enumerate(vocabulary.MONTHS, start=1)}
WEEKDAY = {
    w: i for i, w in enumerate(("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"))
}


class Reading:
    """One family's relative time expressions, written out here rather than read from the generator:
    ``day_offsets`` (expression -> days back), ``<weekday_prefix> <Weekday> <weekday_suffix>`` (either may be
    empty) and the ``week`` expression."""

    def __init__(self, day_offsets: dict[str, int], weekday_prefix: str, week: str, weekday_suffix: str = ""):
        self.day_offsets, self.weekday_prefix, self.week = day_offsets, weekday_prefix, week
        weekdays = " ".join(p for p in (weekday_prefix, f"(?:{'|'.join(WEEKDAY)})", weekday_suffix) if p)
        alternatives = [*(re.escape(k) for k in sorted(day_offsets, key=len, reverse=True)), weekdays, week]
        self.regex = re.compile("|".join(alternatives), re.IGNORECASE)

    def expected(self, expression: str, day: date) -> str:
        """The answer to a temporal question about an event told with ``expression`` on ``day``."""
        expression = expression.lower()
        if expression == self.week:
            return f"the week before {day.day} {vocabulary.MONTHS[day.month - 1]} {day.year}"
        if expression in self.day_offsets:
            d = day - timedelta(days=self.day_offsets[expression])
        else:
            (target,) = [WEEKDAY[w.capitalize()] for w in expression.split() if w.capitalize() in WEEKDAY]
            d = day - timedelta(days=1)
            while d.weekday() != target:
                d -= timedelta(days=1)
        return f"{d.day} {vocabulary.MONTHS[d.month - 1]} {d.year}"


READINGS = {
    "standard": Reading(
        {"this morning": 0, "yesterday": 1, "two days ago": 2, "three days ago": 3, "four days ago": 4,
         "five days ago": 5, "a week ago": 7},
        "last",
        "last week",
    ),
    "heldout": Reading(
        {"earlier today": 0, "yesterday evening": 1, "the day before yesterday": 2, "three days back": 3,
         "four days back": 4, "five days back": 5, "this time last week": 7},
        "this past",
        "over the past week",
    ),
    "tuning": Reading(
        {"today": 0, "last night": 1, "the night before last": 2, "three nights ago": 3, "four nights ago": 4,
         "five nights ago": 5, "a full week ago": 7},
        "on",
        "the previous week",
    ),
    "blind": Reading(
        {"a few hours ago": 0, "last evening": 1, "a couple of days ago": 2, "3 days ago": 3, "4 days ago": 4,
         "5 days ago": 5, "seven days ago": 7},
        "",
        "the week just gone",
        weekday_suffix="just gone",
    ),
}  # fmt: skip


def _fact_regex(template: str) -> re.Pattern[str]:
    out = re.escape(template)
    for slot, group in (
        ("{name}", r"(?P<name>\w+)"), ("{a_v}", r"an? (?P<v>.+?)"), ("{v}", r"(?P<v>.+?)"),
        ("{a_old}", r"an? .+?"), ("{old}", r".+?"), ("{poss}", r"(?:his|her)"),
    ):  # fmt: skip
        out = out.replace(re.escape(slot), group)
    return re.compile(f"^{out}$")


FACT_PATTERNS = [(a.key, _fact_regex(t)) for a in attributes.ATTRIBUTES for t in (a.fact, a.fact_change)]


def parse_profile_fact(text: str) -> tuple[str, str, str] | None:
    """(speaker, attribute key, value) of a canonical profile fact; None for an event fact."""
    hits = [(key, m) for key, p in FACT_PATTERNS if (m := p.match(text))]
    if text.startswith(("On ", "In the week before ")):
        assert not hits, text
        return None
    assert len({k for k, _ in hits}) == 1, f"fact {text!r} matches {[k for k, _ in hits]}"
    key, m = hits[0]
    return m["name"], key, m["v"]


def timelines(d: Dialogue) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(speaker, attribute) -> [(turn id, value)] in dialogue order, from the fact annotations alone."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for t in d.turns():
        for f in t.facts:
            parsed = parse_profile_fact(f.text)
            if parsed:
                out.setdefault(parsed[:2], []).append((t.id, parsed[2]))
    return out


# --- determinism ----------------------------------------------------------------------------------------


def test_same_config_gives_identical_data(data, cfg):
    again = generate_synthetic(cfg)
    assert again.splits == data.splits
    assert (again.report.skips, again.report.repairs) == (data.report.skips, data.report.repairs)


def test_standard_default_data_is_pinned():
    """The standard family's default data, byte for byte: every result on the synthetic data depends on it,
    so adding a phrasing family (or any refactor) must leave it alone. Update the digest only on a deliberate
    change of the standard data, and say so where results are recorded."""
    d, h = generate_synthetic(SyntheticConfig(n_dialogues=16)), hashlib.sha256()  # 10 test: the ladder's size
    for split in ("train", "dev", "test"):
        for dl in d[split]:
            for s in dl.sessions:
                for t in s.turns:
                    h.update((t.id + t.speaker + t.text + repr(t.facts)).encode())
            for q in dl.questions:
                h.update((q.id + q.text + q.answer + q.category).encode())
    assert h.hexdigest() == "fa737bc4b1892984ac390649401951a8e99e5672954889960822677ceca5e830"


def test_seed_and_index_change_the_data(data, cfg):
    other = generate_synthetic(replace(cfg, seed=1))
    texts = [[t.text for t in d.turns()] for d in dialogues(data)]
    other_texts = [[t.text for t in d.turns()] for d in dialogues(other)]
    assert all(a != b for a, b in zip(texts, other_texts, strict=True))
    assert len({tuple(t) for t in texts}) == len(texts), "two dialogues of one run are identical"


def test_a_dialogue_depends_only_on_config_and_index(data, cfg):
    assert generate_dialogue(cfg, 7) == data["test"][1]
    more = replace(cfg, n_dialogues=20, n_train=10)
    assert generate_dialogue(more, 3) == data["train"][3]
    with pytest.raises(ValueError, match="index"):
        generate_dialogue(DEFAULT, -1)


# --- structure ------------------------------------------------------------------------------------------


def test_ids_and_evidence(data):
    ids = [d.id for d in dialogues(data)]
    assert ids == [f"syn-{i:03d}" for i in range(DEFAULT.n_dialogues)]
    for d in dialogues(data):
        assert d.source == "synthetic" and len(set(d.speakers)) == 2
        for s, session in enumerate(d.sessions, start=1):
            assert session.index == s
            assert [t.id for t in session.turns] == [f"D{s}:{i}" for i in range(1, len(session.turns) + 1)]
            assert all(t.session_index == s and t.speaker in d.speakers for t in session.turns)
        order = {t.id: i for i, t in enumerate(d.turns())}
        assert [q.id for q in d.questions] == [f"{d.id}/q{i:02d}" for i in range(1, len(d.questions) + 1)]
        assert len({q.text for q in d.questions}) == len(d.questions), "a question is asked twice"
        for q in d.questions:
            assert q.category in CATEGORIES and q.category_id == 0
            assert all(e in order for e in q.evidence), (q.id, q.evidence)
            positions = [order[e] for e in q.evidence]
            assert positions == sorted(set(positions))
            assert q.unanswerable == (q.category == "unanswerable")
            assert bool(q.evidence) != q.unanswerable


def test_sessions_dated_increasing_within_the_gap_bounds(data):
    for d in dialogues(data):
        times = [s.datetime for s in d.sessions]
        assert all(a < b for a, b in zip(times, times[1:], strict=False))
        gaps = [(b.date() - a.date()).days for a, b in zip(times, times[1:], strict=False)]
        assert all(DEFAULT.min_gap_days <= g <= DEFAULT.max_gap_days for g in gaps), gaps
        assert all(s.datetime_text == format_session_datetime(s.datetime) for s in d.sessions)
        assert all(q.date == times[-1] for q in d.questions)


def test_session_header_and_date_format():
    from datetime import datetime

    assert format_session_datetime(datetime(2023, 5, 8, 13, 56)) == "1:56 pm on 8 May, 2023"
    assert format_session_datetime(datetime(2023, 5, 8, 0, 5)) == "12:05 am on 8 May, 2023"
    assert format_session_datetime(datetime(2023, 5, 8, 12, 0)) == "12:00 pm on 8 May, 2023"
    assert format_date(date(2024, 2, 29)) == "29 February 2024"


def test_speakers_alternate_and_sessions_have_the_target_length(data):
    longer = 0
    for d in dialogues(data):
        for s in d.sessions:
            speakers = [t.speaker for t in s.turns]
            assert all(a != b for a, b in zip(speakers, speakers[1:], strict=False)), (d.id, s.index)
            assert len(s.turns) >= DEFAULT.turns_per_session
            longer += len(s.turns) > DEFAULT.turns_per_session
    assert data.report.repairs.get(GROWN, 0) == longer


def test_every_kind_present_and_shortfalls_reported(data):
    counts = Counter(q.category for d in dialogues(data) for q in d.questions)
    assert set(counts) == set(CATEGORIES)
    for category, n in DEFAULT.questions_requested.items():
        skipped = data.report.skips.get(f"{category} question not formed (too few candidates)", 0)
        assert counts[category] + skipped == n * DEFAULT.n_dialogues, category
    assert 50 <= sum(counts.values()) / DEFAULT.n_dialogues <= 54
    assert sum(data.report.skips.values()) <= DEFAULT.n_dialogues // 2, data.report.skips


# --- facts and distractors ------------------------------------------------------------------------------


def test_fact_turns_carry_one_canonical_fact(data, reading):
    for d in dialogues(data):
        day_of = {s.index: s.datetime.date() for s in d.sessions}
        for t in d.turns():
            assert len(t.facts) <= 1
            for f in t.facts:
                assert (f.turn_id, f.speaker) == (t.id, t.speaker)
                assert word_in(t.speaker, f.text), f.text
                if parse_profile_fact(f.text) is None:  # an event: date resolved from the one expression
                    found = reading.regex.findall(t.text)
                    assert len(found) == 1, t.text
                    answer = reading.expected(found[0], day_of[t.session_index])
                    assert f.text.startswith((f"On {answer}, ", f"In {answer}, ")), (f.text, t.text)


def _filler_turns(d: Dialogue, session, say: Phrasing) -> list:
    """Fact-less turns of ``session`` that are neither greeting, closing, prompt nor reaction."""
    prompts = {p.format(other=n) for p in say.prompts for n in d.speakers}
    turns = list(session.turns)
    body = turns[2 : len(turns) - (3 if turns[-1].text in say.closing_tails else 2)]
    out = []
    for i, t in enumerate(body):
        after_fact = i > 0 and bool(body[i - 1].facts)  # a fact turn is always followed by a reaction
        if not t.facts and not after_fact and t.text not in prompts:
            out.append(t)
    return out


@pytest.mark.parametrize("turns", [None, 8])
def test_every_session_has_its_distractor_exchanges_and_growth_is_reported(data, cfg, say, turns):
    dense = replace(cfg, n_dialogues=3, n_train=1, n_dev=1, turns_per_session=turns or 22)
    cfg, splits = (cfg, data) if turns is None else (dense, generate_synthetic(dense))
    grown, extra, lengths = 0, 0, []
    for d in dialogues(splits):
        for s in d.sessions:
            fillers = _filler_turns(d, s, say)
            assert len(fillers) % 2 == 0 and len(fillers) >= 2 * cfg.min_filler_exchanges, (d.id, s.index)
            lengths.append(len(s.turns))
            if len(s.turns) > cfg.turns_per_session:
                grown += 1
                extra += len(s.turns) - cfg.turns_per_session
    report = splits.report
    assert grown > 0 and report.repairs[GROWN] == grown
    for example in report.examples[GROWN]:
        did, index, n, plus = re.fullmatch(GROWN_EXAMPLE, example).groups()
        (d,) = [d for d in dialogues(splits) if d.id == did]
        assert len(d.sessions[int(index) - 1].turns) == int(n) == cfg.turns_per_session + int(plus)
    (summary,) = report.examples[GROWN_TOTAL]
    assert report.repairs[GROWN_TOTAL] == 1 and summary.startswith(f"+{extra} turns ")
    assert f"in {grown} of {len(lengths)} sessions" in summary and f"max {max(lengths)} turns" in summary
    assert GROWN_TOTAL in report.format()


def test_no_growth_no_growth_report():
    cfg = SyntheticConfig(n_dialogues=1, n_train=0, n_dev=0, sessions_per_dialogue=2, events_per_session=1,
                          profile_attributes=1, turns_per_session=30)  # fmt: skip
    splits = generate_synthetic(cfg)
    assert all(len(s.turns) == 30 for d in splits["test"] for s in d.sessions)
    assert GROWN not in splits.report.repairs and GROWN_TOTAL not in splits.report.repairs


def _slot_regex(template: str) -> re.Pattern[str]:
    out = re.escape(template)
    out = out.replace(re.escape("{a_v}"), r"an? (?P<v>.+?)").replace(re.escape("{v}"), r"(?P<v>.+?)")
    return re.compile(f"^{out}$")


def test_third_party_distractors_never_state_a_speakers_value(data, say):
    third_party = [(a, _slot_regex(t)) for a in say.attributes for t in a.third_party]
    n, kinds = 0, set()
    for d in dialogues(data):
        lines = timelines(d)
        held = {(key, v) for (_, key), line in lines.items() for _, v in line}
        stated_types = {key for _, key in lines}
        for t in d.turns():
            hits = [(a, m["v"]) for a, p in third_party if (m := p.match(t.text))]
            if not hits:
                continue
            (a, v), *_ = hits
            n += 1
            kinds.add(a.key)
            assert not t.facts, t.text
            assert v in a.values and a.key in stated_types, t.text
            assert (a.key, v) not in held, (d.id, t.id, t.text)
    assert n >= 2 * DEFAULT.n_dialogues and len(kinds) >= len(attributes.ATTRIBUTES) // 2, (n, kinds)


def test_distractor_turns_state_nothing(data, reading):
    for d in dialogues(data):
        answers = {
            q.answer
            for q in d.questions
            if q.category in ("single-hop", "multi-hop", "knowledge-update", "previous-value")
        }
        values = {v for line in timelines(d).values() for _, v in line}
        for t in d.turns():
            if t.facts:
                continue
            assert not reading.regex.search(t.text), t.text
            assert not any(word_in(v, t.text) for v in answers | values), (d.id, t.id, t.text)
        n_facts = sum(bool(t.facts) for t in d.turns())
        assert 0.2 < n_facts / d.n_turns < 0.5, "fact/distractor balance out of the intended range"


# --- the six kinds --------------------------------------------------------------------------------------


def test_single_hop_answers_appear_in_their_evidence(data):
    for d in dialogues(data):
        turns, lines = d.turn_index(), timelines(d)
        for q in (q for q in d.questions if q.category == "single-hop"):
            assert len(q.evidence) == 1
            turn = turns[q.evidence[0]]
            assert q.answer in turn.text and turn.facts, (q.text, turn.text)
            parsed = parse_profile_fact(turn.facts[0].text)
            if parsed:  # an attribute that was never overturned: its one value is the answer
                assert {v for _, v in lines[parsed[:2]]} == {q.answer}


def test_knowledge_update_answer_is_the_last_stated_value(data):
    n = 0
    for d in dialogues(data):
        turns, lines = d.turn_index(), timelines(d)
        for q in (q for q in d.questions if q.category == "knowledge-update"):
            n += 1
            speaker, key, _ = parse_profile_fact(turns[q.evidence[-1]].facts[0].text)
            line = lines[(speaker, key)]
            assert len({v for _, v in line}) >= 2, "a knowledge-update question about an unchanged value"
            assert q.answer == line[-1][1]
            first_of_last = next(tid for tid, v in line if v == q.answer)
            assert q.evidence[-1] == first_of_last, "evidence must end at the overturning turn"
            assert q.evidence[0] == line[0][0], "evidence must start at the original statement"
            assert q.answer in turns[q.evidence[-1]].text
    assert n >= DEFAULT.n_dialogues


def test_previous_value_is_the_value_right_before_the_named_one(data):
    n = 0
    for d in dialogues(data):
        turns, lines = d.turn_index(), timelines(d)
        for q in (q for q in d.questions if q.category == "previous-value"):
            n += 1
            assert len(q.evidence) == 2
            speaker, key, new = parse_profile_fact(turns[q.evidence[1]].facts[0].text)
            assert word_in(speaker, q.text) and word_in(new, q.text), q.text
            line = lines[(speaker, key)]
            distinct = [v for i, (_, v) in enumerate(line) if i == 0 or v != line[i - 1][1]]
            k = distinct.index(new)
            assert k >= 1, "the named value must be an overturn"
            assert q.answer == distinct[k - 1]
            first_turn = {v: next(tid for tid, w in line if w == v) for v in distinct}
            assert q.evidence == (first_turn[q.answer], first_turn[new])
            assert q.answer in turns[q.evidence[0]].text and new in turns[q.evidence[1]].text
    skipped = data.report.skips.get("previous-value question not formed (too few candidates)", 0)
    assert n + skipped == DEFAULT.n_previous_value * DEFAULT.n_dialogues and n >= 0.9 * (n + skipped)


def test_multi_hop_joins_two_facts_of_one_speaker_from_two_sessions(data):
    n = 0
    for d in dialogues(data):
        turns = d.turn_index()
        for q in (q for q in d.questions if q.category == "multi-hop"):
            n += 1
            assert len(q.evidence) == 2
            ev = [turns[e] for e in q.evidence]
            assert all(t.facts for t in ev) and ev[0].speaker == ev[1].speaker
            assert ev[0].session_index != ev[1].session_index, (d.id, q.text, q.evidence)
            assert any(q.answer in t.text for t in ev), q.text
            assert not word_in(ev[0].speaker, q.text), q.text
    assert n == DEFAULT.n_multi_hop * DEFAULT.n_dialogues


def test_temporal_answers_recomputed_from_the_turn_and_session_date(data, reading):
    n = 0
    for d in dialogues(data):
        turns = d.turn_index()
        day_of = {s.index: s.datetime.date() for s in d.sessions}
        for q in (q for q in d.questions if q.category == "temporal"):
            (e,) = q.evidence
            turn = turns[e]
            (expression,) = reading.regex.findall(turn.text)
            assert q.answer == reading.expected(expression, day_of[turn.session_index]), (
                turn.text,
                q.answer,
            )
            assert q.answer not in turn.text, "the turn must not give the absolute date away"
            n += 1
    assert n == DEFAULT.n_temporal * DEFAULT.n_dialogues


@pytest.mark.parametrize(
    ("text", "day", "answer"),
    [
        ("yesterday", date(2023, 5, 8), "7 May 2023"),
        ("this morning", date(2023, 5, 8), "8 May 2023"),
        ("a week ago", date(2023, 5, 8), "1 May 2023"),
        ("last Monday", date(2023, 5, 8), "1 May 2023"),  # 8 May 2023 is a Monday: a week back, not today
        ("last Sunday", date(2023, 5, 8), "7 May 2023"),
        ("last Saturday", date(2023, 5, 8), "6 May 2023"),
        ("last Tuesday", date(2023, 5, 8), "2 May 2023"),
        ("three days ago", date(2024, 3, 2), "28 February 2024"),
        ("two days ago", date(2024, 3, 1), "28 February 2024"),
        ("two days ago", date(2023, 3, 1), "27 February 2023"),
        ("yesterday", date(2023, 1, 1), "31 December 2022"),
        ("last Friday", date(2023, 1, 1), "30 December 2022"),
        ("last week", date(2023, 5, 8), "the week before 8 May 2023"),
    ],
)
def test_resolve_relative_time_hand_cases(text, day, answer):
    (when,) = [r for r in vocabulary.RELATIVE_TIMES if r.text == text]
    assert resolve_relative_time(when, day) == answer
    assert READINGS["standard"].expected(text, day) == answer


def test_unanswerable_questions_ask_about_what_is_never_said(data, say):
    n = 0
    for d in dialogues(data):
        text = "\n".join(t.text for t in d.turns())
        for q in (q for q in d.questions if q.category == "unanswerable"):
            n += 1
            assert q.evidence == () and q.answer == "Not mentioned in the conversation"
            topics = [
                (a.keywords, a.values) for a in say.attributes if any(word_in(k, q.text) for k in a.keywords)
            ]
            topics += [
                (a.keywords, ()) for a in say.activities if any(word_in(k, q.text) for k in a.keywords)
            ]
            assert topics, f"no topic recognised in {q.text!r}"
            for keywords, values in topics:
                assert not any(word_in(w, text) for w in (*keywords, *values)), (d.id, q.text)
    assert n == DEFAULT.n_unanswerable * DEFAULT.n_dialogues


# --- splits ---------------------------------------------------------------------------------------------


def test_split_sizes_and_dev_halves(data):
    assert {k: v[0] for k, v in data.sizes().items()} == {
        "train": 4, "dev": 2, "dev_calibration": 2, "dev_selection": 2, "test": 5, "rl": 0,
    }  # fmt: skip
    for dev, cal, sel in zip(data["dev"], data["dev_calibration"], data["dev_selection"], strict=True):
        assert cal.sessions == dev.sessions == sel.sessions and cal.id == sel.id == dev.id
        cal_ids, sel_ids = {q.id for q in cal.questions}, {q.id for q in sel.questions}
        assert not cal_ids & sel_ids and cal_ids | sel_ids == {q.id for q in dev.questions}
        assert abs(len(cal_ids) - len(sel_ids)) <= 1
        for c in CATEGORIES:
            a = sum(q.category == c for q in cal.questions)
            b = sum(q.category == c for q in sel.questions)
            assert abs(a - b) <= 1, c
    with pytest.raises(KeyError, match="no split"):
        data["validation"]


def test_default_splits_hold_enough_questions(data):
    def n_questions(split: str) -> int:
        return sum(len(d.questions) for d in data[split])

    assert n_questions("test") >= 250
    assert n_questions("dev_selection") >= 50 and n_questions("dev_calibration") >= 50
    for split in ("train", "dev_selection", "test"):  # every kind in every split an experiment reads
        assert {q.category for d in data[split] for q in d.questions} == set(CATEGORIES), split


def test_custom_split_counts():
    splits = generate_synthetic(replace(DEFAULT, n_dialogues=3, n_train=1, n_dev=2, n_single_hop=3))
    assert {k: v[0] for k, v in splits.sizes().items()} == {
        "train": 1, "dev": 2, "dev_calibration": 2, "dev_selection": 2, "test": 0, "rl": 0,
    }  # fmt: skip
    assert [d.id for d in splits["dev"]] == ["syn-001", "syn-002"]


def test_rl_split_adds_dialogues_after_the_test_ones_and_changes_no_other_split():
    small = replace(DEFAULT, n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2, turns_per_session=8)
    without, with_rl = generate_synthetic(small), generate_synthetic(replace(small, n_rl=2))
    assert [d.id for d in with_rl["rl"]] == ["syn-003", "syn-004"] and without["rl"] == ()
    for split in ("train", "dev", "dev_calibration", "dev_selection", "test"):
        assert with_rl[split] == without[split], split
    assert with_rl["rl"][1] == generate_dialogue(small, 4)  # generated per index, like every other split
    assert "n_rl=2" in with_rl.report.path


def test_select_split_comes_from_its_own_indices_and_moves_nothing():
    small = replace(DEFAULT, n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2, turns_per_session=8)
    base, sel = generate_synthetic(replace(small, n_rl=1)), generate_synthetic(replace(small, n_rl=1, n_select=2))
    assert [d.id for d in sel["select"]] == ["syn-10000", "syn-10001"] and "select" not in base.splits
    for split in ("train", "dev", "dev_calibration", "dev_selection", "test", "rl"):
        assert sel[split] == base[split], split
    assert generate_synthetic(replace(small, n_rl=3, n_select=2))["select"] == sel["select"]  # n_rl moves none
    assert sel["select"][1] == generate_dialogue(small, 10_001) and "n_select=2" in sel.report.path
    with pytest.raises(ValueError, match="would reach the select split"):
        replace(small, n_rl=10_000)


def test_split_questions_deals_by_category():
    d = generate_dialogue(DEFAULT, 0)
    cal, sel = split_questions(d)
    ordered = sorted(d.questions, key=lambda q: (CATEGORIES.index(q.category), q.id))
    assert [q.id for q in cal.questions] == sorted(q.id for q in ordered[0::2])
    assert [q.id for q in sel.questions] == sorted(q.id for q in ordered[1::2])


# --- config ---------------------------------------------------------------------------------------------


def test_no_overturns_means_no_knowledge_update_and_it_is_reported():
    cfg = replace(DEFAULT, n_dialogues=2, n_train=1, n_dev=0, overturn_prob=0.0)
    splits = generate_synthetic(cfg)
    ds = [*splits["train"], *splits["test"]]
    assert not any(q.category in ("knowledge-update", "previous-value") for d in ds for q in d.questions)
    for category in ("knowledge-update", "previous-value"):
        skips = splits.report.skips[f"{category} question not formed (too few candidates)"]
        assert skips == 2 * DEFAULT.questions_requested[category]
    assert all(len({v for _, v in line}) == 1 for d in ds for line in timelines(d).values())


def test_certain_overturns_give_full_chains():
    cfg = replace(DEFAULT, n_dialogues=2, n_train=1, n_dev=0, overturn_prob=1.0, max_overturns=2)
    for d in generate_synthetic(cfg)["train"] + generate_synthetic(cfg)["test"]:
        lines = timelines(d)
        assert len(lines) == cfg.profile_attributes
        assert all(len({v for _, v in line}) == 3 for line in lines.values())  # first half of 6 -> 2 more
        assert all(len(q.evidence) == 3 for q in d.questions if q.category == "knowledge-update")
        assert all(len(q.evidence) == 2 for q in d.questions if q.category == "previous-value")


@pytest.mark.parametrize(("fillers", "length"), [(0, 4), (3, 10)])
def test_degenerate_config_forms_only_unanswerable_questions(fillers, length):
    cfg = SyntheticConfig(n_dialogues=1, n_train=0, n_dev=0, sessions_per_dialogue=1, events_per_session=0,
                          profile_attributes=0, turns_per_session=4, min_filler_exchanges=fillers)  # fmt: skip
    splits = generate_synthetic(cfg)
    (d,) = splits["test"]
    assert [len(s.turns) for s in d.sessions] == [length] and not any(t.facts for t in d.turns())
    assert {q.category for q in d.questions} == {"unanswerable"} and len(d.questions) == cfg.n_unanswerable
    answerable = sum(n for c, n in cfg.questions_requested.items() if c != "unanswerable")
    assert sum(splits.report.skips.values()) == answerable
    assert splits.report.repairs.get(GROWN, 0) == (length > 4)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"n_dialogues": 0}, "n_dialogues"),
        ({"sessions_per_dialogue": 0}, "sessions_per_dialogue"),
        ({"events_per_session": -1}, "events_per_session"),
        ({"n_temporal": -2}, "n_temporal"),
        ({"overturn_prob": 1.5}, "overturn_prob"),
        ({"restate_prob": -0.1}, "restate_prob"),
        ({"topical_distractor_frac": 2.0}, "topical_distractor_frac"),
        ({"near_miss_frac": -0.5}, "near_miss_frac"),
        ({"near_miss_frac": 0.7, "topical_distractor_frac": 0.4}, "near_miss_frac"),
        ({"min_filler_exchanges": -1}, "min_filler_exchanges"),
        ({"n_previous_value": -1}, "n_previous_value"),
        ({"n_rl": -1}, "n_rl"),
        ({"n_train": 9, "n_dev": 3}, "n_train"),
        ({"turns_per_session": 3}, "turns_per_session"),
        ({"min_gap_days": 5, "max_gap_days": 4}, "max_gap_days"),
        ({"events_per_session": 10}, "events_per_session"),
        ({"profile_attributes": 23}, "profile_attributes"),
        ({"max_overturns": 5}, "max_overturns"),
        ({"n_dialogues": 2.5}, "n_dialogues"),
        ({"seed": True}, "seed"),
    ],
)
def test_config_validation(change, field):
    with pytest.raises(ValueError, match=field):
        SyntheticConfig(**change)


# --- templates ------------------------------------------------------------------------------------------


def distractor_templates(say: Phrasing) -> list[str]:
    """The lines that are never about a planned fact (event tells and comments included: their only
    relative time expression and keywords come from the placeholders)."""
    return [
        *say.greetings, *say.greeting_replies, *say.prompts, *(r for rs in say.reactions.values() for r in rs),
        *(x for pair in (*say.small_talk, *say.topical, *say.closings) for x in pair), *say.near_miss_replies,
        *say.closing_tails, *say.comments, *say.event_tells, *say.third_party_replies,
    ]  # fmt: skip


def test_templates_are_consistent(say, reading):
    keywords = [k for a in (*say.attributes, *say.activities) for k in a.keywords]
    for text in distractor_templates(say):
        assert not reading.regex.search(text), text
        assert not any(word_in(k, text) for k in keywords), text
    names = {p.name for p in vocabulary.PEOPLE}
    for a in say.attributes:
        assert len(set(a.values)) == len(a.values) and not names & set(a.values)
        assert all(any(word_in(k, t) for k in a.keywords) for t in a.ask), a.key
        foreign = [k for k in keywords if k not in a.keywords]
        assert len(a.third_party) >= 2, a.key
        for text in (*a.near_miss, *a.third_party):
            assert not reading.regex.search(text) and not any(word_in(n, text) for n in names), text
            assert (text.count("{v}") + text.count("{a_v}")) == 1 and not text.startswith("{"), text
        for text in a.third_party:  # first person about someone else, no other type's or activity's words
            assert text.startswith("My ") and not any(word_in(k, text) for k in foreign), text
        for text in (*a.state, *a.change, *a.restate):  # first person, the value never first
            assert not text.startswith(("{v}", "{a_v}")) and not reading.regex.search(text), text
    for act in say.activities:
        assert any(word_in(k, act.base) for k in act.keywords), act.key
        assert bool(act.details) == ("{d}" in act.past) == ("{d}" in act.spoken) == bool(act.ask_detail), (
            act.key
        )
        assert not reading.regex.search(act.spoken), act.key
    assert len({a.key for a in say.activities}) == len(say.activities)
    values = [v for a in say.attributes for v in a.values]
    # a value inside another ("tennis" in "table tennis") would make one holder's answer appear elsewhere
    assert not [(u, v) for u in values for v in values if u != v and word_in(u, v)]


# --- properties over small configs ----------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    sessions=st.integers(1, 8),
    events=st.integers(0, 4),
    attrs=st.integers(0, 12),
    turns=st.integers(4, 30),
    overturn=st.floats(0, 1),
    family=st.sampled_from(PHRASING_NAMES),
)
def test_invariants_hold_for_small_configs(seed, sessions, events, attrs, turns, overturn, family):
    cfg = SyntheticConfig(seed=seed, n_dialogues=2, n_train=1, n_dev=1, sessions_per_dialogue=sessions,
                          events_per_session=events, profile_attributes=attrs, turns_per_session=turns,
                          overturn_prob=overturn, phrasing=family)  # fmt: skip
    reading = READINGS[family]
    splits = generate_synthetic(cfg)
    longer = 0
    for d in (*splits["train"], *splits["dev"]):
        turns_by_id = d.turn_index()
        assert sum(bool(t.facts) for t in d.turns()) == sessions * events + sum(
            map(len, timelines(d).values())
        )
        for s in d.sessions:
            assert len(s.turns) >= turns
            longer += len(s.turns) > turns
        for q in d.questions:
            ev = [turns_by_id[e] for e in q.evidence]
            if q.category in ("single-hop", "knowledge-update"):
                assert q.answer in ev[-1].text
            if q.category == "previous-value":
                assert q.answer in ev[0].text and len(ev) == 2
            if q.category == "multi-hop":
                assert ev[0].session_index != ev[1].session_index
            if q.category == "temporal":
                (expression,) = reading.regex.findall(ev[0].text)
                day = d.sessions[ev[0].session_index - 1].datetime.date()
                assert q.answer == reading.expected(expression, day)
    assert splits.report.repairs.get(GROWN, 0) == longer
