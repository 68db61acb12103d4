"""LoCoMo loader: the README's counts on the real file, every quirk's repair, malformed tiny files."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from memprm.data.dates import parse_locomo_datetime
from memprm.data.locomo import UNANSWERABLE_ANSWER, load_locomo, split_questions
from memprm.data.records import DataFormatError, DataSplits, Question

# ---------------------------------------------------------------- real file (parsed once per variant)
# Expected counts come from the data README (shared/data/README.md) or are counted in the raw JSON by the plain
# helpers below (``raw``), never copied from the loader's output.


@pytest.fixture(scope="module")
def locomo_path(data_root: Path) -> Path:
    return data_root / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def locomo(locomo_path: Path) -> DataSplits:
    return load_locomo(locomo_path)


@pytest.fixture(scope="module")
def locomo_with_dups(locomo_path: Path) -> DataSplits:
    return load_locomo(locomo_path, drop_duplicates=False)


@pytest.fixture(scope="module")
def raw(locomo_path: Path) -> list[dict]:
    """The file as plain JSON, the ten samples in file order (D1..D10)."""
    return json.loads(locomo_path.read_text(encoding="utf-8"))


def _raw_sessions(sample: dict) -> list[list[dict]]:
    """The sample's sessions: the ``session_N`` keys that hold a list of turns (not the ``_date_time`` keys)."""
    conv = sample["conversation"]
    return [v for k, v in conv.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v]


def _raw_turn_ids(sample: dict) -> set[str]:
    return {t["dia_id"] for session in _raw_sessions(sample) for t in session}


def _raw_qa(sample: dict, drop_duplicates: bool = True) -> list[dict]:
    """The sample's QA items; with ``drop_duplicates``, an item identical to an earlier one is left out."""
    out, seen = [], set()
    for item in sample["qa"]:
        key = json.dumps(item, sort_keys=True)
        if not (drop_duplicates and key in seen):
            out.append(item)
        seen.add(key)
    return out


def _all(s: DataSplits):
    return [d for name in ("train", "dev", "test") for d in s[name]]


def _questions(s: DataSplits, split: str) -> dict[str, Question]:
    return {q.id: q for d in s[split] for q in d.questions}


def test_dialogues_sessions_turns_match_readme(locomo: DataSplits, raw: list[dict]) -> None:
    dialogues = _all(locomo)
    assert [d.id for d in dialogues] == [
        "D1/conv-26", "D2/conv-30", "D3/conv-41", "D4/conv-42", "D5/conv-43",
        "D6/conv-44", "D7/conv-47", "D8/conv-48", "D9/conv-49", "D10/conv-50",
    ]  # fmt: skip
    assert [d.id for d in dialogues] == [f"D{i + 1}/{s['sample_id']}" for i, s in enumerate(raw)]
    # the README's table, and the same counted in the raw file
    assert [len(d.sessions) for d in dialogues] == [19, 19, 32, 29, 29, 28, 31, 30, 25, 30]
    assert [len(d.sessions) for d in dialogues] == [len(_raw_sessions(s)) for s in raw]
    assert [d.n_turns for d in dialogues] == [419, 369, 663, 629, 680, 675, 689, 681, 509, 568]
    assert [d.n_turns for d in dialogues] == [sum(map(len, _raw_sessions(s))) for s in raw]
    assert sum(len(d.sessions) for d in dialogues) == 272
    assert sum(d.n_turns for d in dialogues) == 5882
    assert sum(t.image_caption is not None for d in dialogues for t in d.turns()) == 1226
    # every turn as written in the file: id, speaker, text and caption, in order
    for d, sample in zip(dialogues, raw, strict=True):
        expected = [(t["dia_id"], t["speaker"], t["text"], t.get("blip_caption"))
                    for session in _raw_sessions(sample) for t in session]  # fmt: skip
        assert [(t.id, t.speaker, t.text, t.image_caption) for t in d.turns()] == expected, d.id
    assert dialogues[0].speakers == ("Caroline", "Melanie")
    assert all(d.source == "locomo" for d in dialogues)


def test_split_sizes_with_and_without_duplicates(
    locomo: DataSplits, locomo_with_dups: DataSplits, raw: list[dict]
) -> None:
    n_qa = [len(s["qa"]) for s in raw]
    # the README's split table
    assert {k: v[1] for k, v in locomo_with_dups.sizes().items()} == {
        "train": 757, "dev": 242, "dev_calibration": 121, "dev_selection": 121, "test": 987,
    }  # fmt: skip
    assert (sum(n_qa[:4]), n_qa[4], sum(n_qa[5:])) == (757, 242, 987)
    # the 11 conv-48 duplicates (the README's quirks) are dropped by default: 987 - 11
    deduped = [len(_raw_qa(s)) for s in raw]
    assert sum(n_qa) - sum(deduped) == 11 and n_qa[7] - deduped[7] == 11  # all in conv-48 (D8)
    assert locomo.sizes()["test"] == (5, sum(deduped[5:])) == (5, 976)
    assert locomo.sizes()["train"] == (4, sum(deduped[:4])) and locomo.sizes()["dev"] == (1, deduped[4])
    cats = Counter(q.category_id for d in locomo_with_dups["test"] for q in d.questions)
    assert [cats[c] for c in (1, 2, 3, 4, 5)] == [140, 165, 50, 423, 209]
    assert cats == Counter(item["category"] for s in raw[5:] for item in s["qa"])
    conv48 = {q.id for q in locomo["test"][2].questions}
    assert "conv-48/q016" in conv48 and "conv-48/q089" not in conv48
    assert "conv-48/q089" in {q.id for q in locomo_with_dups["test"][2].questions}
    assert raw[7]["qa"][89] in raw[7]["qa"][:89]  # q089 repeats an earlier item of the file


def test_category_filter_counts_and_report(locomo_path: Path, raw: list[dict]) -> None:
    s = load_locomo(locomo_path, categories=[1, 2, 3, 4], drop_duplicates=False)

    def no_cat5(samples):
        return sum(item["category"] != 5 for sample in samples for item in sample["qa"])

    expected = {"train": no_cat5(raw[:4]), "dev": no_cat5(raw[4:5]), "test": no_cat5(raw[5:])}
    assert expected == {"train": 584, "dev": 178, "test": 778}  # the README's split table
    assert {k: v[1] for k, v in s.sizes().items() if k in ("train", "dev", "test")} == expected
    cat5 = sum(item["category"] == 5 for x in raw for item in x["qa"])
    assert s.report.skips["filtered_category_5"] == cat5 == 446
    assert not any(q.category_id == 5 for d in _all(s) for q in d.questions)
    only5 = load_locomo(locomo_path, categories=(5,))
    assert {q.category for d in _all(only5) for q in d.questions} == {"adversarial"}
    cat4 = sum(item["category"] == 4 for x in raw for item in _raw_qa(x))
    assert only5.report.skips["filtered_category_4"] == cat4 == 841 - 11  # duplicates go before filtering
    with pytest.raises(ValueError, match="unknown LoCoMo categories"):
        load_locomo(locomo_path, categories=[0, 1])


def _raw_quirks(raw: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    """(repairs, skips) counted in the raw file, by the rules stated in the README's quirks and the loader's
    docs: int answers; category 5 with and without an ``answer``; evidence strings that are not a turn id of
    the sample (several ids in one string; a malformed id naming a real turn; a well-formed id of no turn;
    no id at all), ids repeated within a question; fact references that are lists or comma-joined strings;
    date keys of sessions without turns; exact duplicate QA items."""
    repairs: Counter[str] = Counter()
    skips: Counter[str] = Counter()
    for sample in raw:
        known = _raw_turn_ids(sample)
        skips["duplicate_question"] += len(sample["qa"]) - len(_raw_qa(sample))
        for item in _raw_qa(sample):
            if item["category"] == 5:
                repairs["cat5_answer_replaced" if "answer" in item else "cat5_answer_missing"] += 1
            elif isinstance(item["answer"], int):
                repairs["answer_int_to_str"] += 1
            skips["evidence_empty"] += item["evidence"] == []
            ids = []
            for e in item["evidence"]:
                parts = re.split(r"[;,\s]+", e.strip())
                if e not in known and len(parts) > 1:
                    repairs["evidence_split"] += 1
                for p in parts:
                    loose = re.fullmatch(r"D:?(\d+):(\d+)", p)
                    tid = f"D{int(loose[1])}:{int(loose[2])}" if loose else None
                    if p in known:
                        ids.append(p)
                    elif loose is None:
                        skips["evidence_unparseable"] += 1
                    elif tid in known:
                        repairs["evidence_normalized"] += 1
                        ids.append(tid)
                    else:
                        skips["evidence_unknown_turn"] += 1
            skips["evidence_duplicate"] += len(ids) - len(set(ids))
        for per_speaker in sample["observation"].values():
            for items in per_speaker.values():
                for _, ref in items:
                    repairs["fact_turn_list"] += isinstance(ref, list)
                    repairs["fact_turn_split"] += isinstance(ref, str) and "," in ref
        conv = sample["conversation"]
        for key in conv:
            m = re.fullmatch(r"session_(\d+)_date_time", key)
            skips["orphan_session_date"] += bool(m) and not isinstance(conv.get(f"session_{m[1]}"), list)
    return +repairs, +skips


def test_quirks_are_reported_with_counts(locomo: DataSplits, raw: list[dict]) -> None:
    repairs, skips = _raw_quirks(raw)
    # the README's quirks: 444 + 2 category-5 items, 6 int answers, 11 duplicates, 4 empty evidence lists,
    # 9 malformed or dangling evidence strings, conv-26's session_20..35 dates, 10 list-valued fact references
    readme_repairs = {"cat5_answer_missing": 444, "cat5_answer_replaced": 2, "answer_int_to_str": 6}
    readme_skips = {"duplicate_question": 11, "evidence_empty": 4, "orphan_session_date": 35 - 19}
    assert {k: repairs[k] for k in readme_repairs} == readme_repairs
    assert {k: skips[k] for k in readme_skips} == readme_skips
    malformed = ("evidence_split", "evidence_normalized", "evidence_unparseable", "evidence_unknown_turn")
    assert sum({**repairs, **skips}[k] for k in malformed) == 9 and repairs["fact_turn_list"] == 10
    r = locomo.report
    assert r.repairs == repairs
    assert r.skips == skips
    assert "conv-26: session_20_date_time=" in r.examples["orphan_session_date"][0]
    assert "duplicate_question: 11" in r.format()


def test_repaired_questions(locomo: DataSplits) -> None:
    qs = {q.id: q for d in _all(locomo) for q in d.questions}
    assert qs["conv-26/q037"].evidence == ("D8:6", "D9:17")
    assert qs["conv-49/q031"].evidence == ("D9:1", "D4:4", "D4:6")
    assert "D30:5" in qs["conv-50/q069"].evidence
    assert "D11:26" in qs["conv-43/q018"].evidence
    assert qs["conv-42/q088"].evidence == ("D1:18", "D1:20")
    assert "D10:19" not in qs["conv-42/q058"].evidence and len(qs["conv-42/q058"].evidence) == 6
    assert qs["conv-50/q005"].evidence == ("D4:5", "D5:5")
    assert qs["conv-26/q030"].evidence == ()
    assert qs["conv-26/q001"].answer == "2022"
    cat5 = qs["conv-26/q167"]
    assert (cat5.answer, cat5.unanswerable, cat5.category, cat5.category_id) == (
        UNANSWERABLE_ANSWER, True, "adversarial", 5,
    )  # fmt: skip
    assert qs["conv-26/q000"].category == "temporal" and not qs["conv-26/q000"].unanswerable
    for d in _all(locomo):
        ids = d.turn_index()
        assert all(e in ids for q in d.questions for e in q.evidence), d.id


def test_turns_dates_and_facts(locomo: DataSplits, raw: list[dict]) -> None:
    d1 = locomo["train"][0]
    s1 = d1.sessions[0]
    assert (s1.index, s1.datetime, s1.datetime_text) == (
        1,
        datetime(2023, 5, 8, 13, 56),
        "1:56 pm on 8 May, 2023",
    )
    turn = d1.turn_index()["D1:5"]
    assert turn.session_index == 1 and turn.speaker == "Caroline"
    assert turn.image_caption is not None and turn.image_caption.startswith("a photo of")
    assert all(q.date == datetime(2023, 10, 22, 9, 55) for q in d1.questions)  # last session, 19
    # each observation item (2,541 in the README) is a fact of every turn it names: a list of ids, or ids
    # joined by commas; counted in the raw file, then compared turn by turn with the loader's
    expected: dict[tuple[str, str], Counter] = {}
    n_items = 0
    for sample in raw:
        for per_speaker in sample["observation"].values():
            for speaker, items in per_speaker.items():
                for text, ref in items:
                    n_items += 1
                    named = ref if isinstance(ref, list) else ref.split(",")
                    for tid in {r.strip() for r in named}:
                        expected.setdefault((sample["sample_id"], tid), Counter())[(text, speaker)] += 1
    assert n_items == 2541
    got = {
        (d.id.split("/")[1], t.id): Counter((f.text, f.speaker) for f in t.facts)
        for d in _all(locomo)
        for t in d.turns()
        if t.facts
    }
    assert got == expected
    facts = [f for d in _all(locomo) for t in d.turns() for f in t.facts]
    # an item naming several turns is a fact of each
    assert len(facts) == sum(sum(c.values()) for c in expected.values()) > n_items
    d2 = locomo["train"][1].turn_index()
    shared = {(f.text, f.speaker) for f in d2["D15:3"].facts} & {
        (f.text, f.speaker) for f in d2["D15:5"].facts
    }
    assert len(shared) == 1 and next(iter(shared))[1] == "Jon"
    for d in _all(locomo):
        for t in d.turns():
            assert all(f.turn_id == t.id for f in t.facts)


def test_dev_halves_are_disjoint_stratified_and_cover_dev(locomo: DataSplits) -> None:
    dev = locomo["dev"][0]
    cal, sel = locomo["dev_calibration"][0], locomo["dev_selection"][0]
    a, b = {q.id for q in cal.questions}, {q.id for q in sel.questions}
    assert not a & b and a | b == {q.id for q in dev.questions}
    assert cal.sessions is dev.sessions and sel.sessions is dev.sessions and cal.id == dev.id == "D5/conv-43"
    ca, cb = Counter(q.category for q in cal.questions), Counter(q.category for q in sel.questions)
    assert all(abs(ca[c] - cb[c]) <= 1 for c in ca | cb)


def test_split_questions_is_seeded_and_stratified() -> None:
    qs = tuple(Question(f"q{i}", "?", "a", "x" if i < 3 else "y") for i in range(5))
    first, second = split_questions(qs, seed=0)
    # 3 "x" + 2 "y" dealt alternately over the concatenated category lists: halves of 3 and 2
    assert (len(first), len(second)) == (3, 2)
    assert Counter(q.category for q in first) == Counter({"x": 2, "y": 1})
    assert [q.id for q in first] == sorted(q.id for q in first)  # original order kept
    assert split_questions(qs, seed=0) == (first, second)
    seeds = {split_questions(qs, seed=s)[0] for s in range(10)}
    assert len(seeds) > 1


# ---------------------------------------------------------------- dates


def test_parse_locomo_datetime() -> None:
    assert parse_locomo_datetime("12:28 am on 8 November, 2023") == datetime(2023, 11, 8, 0, 28)
    assert parse_locomo_datetime("12:05 pm on 1 Jan 2024") == datetime(2024, 1, 1, 12, 5)
    assert parse_locomo_datetime("9:55 AM on 22 October, 2023") == datetime(2023, 10, 22, 9, 55)
    for bad in (
        "13:00 pm on 1 May, 2023",
        "1:00 pm on 31 June, 2023",
        "1:00 pm on 1 Mayo, 2023",
        "8 May 2023",
    ):
        with pytest.raises(ValueError):
            parse_locomo_datetime(bad)


# ---------------------------------------------------------------- tiny hand-made files


def _sample(sid: str, qa: list | None = None, observation: dict | None = None, **conv_extra) -> dict:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "look", "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "bye"}],
    }
    conv.update(conv_extra)
    qa = [{"question": "q?", "answer": "a", "evidence": ["D1:1"], "category": 4}] if qa is None else qa
    obs = (
        {"session_1_observation": {"Ann": [["Ann says hi", "D1:1"]]}} if observation is None else observation
    )
    return {"sample_id": sid, "conversation": conv, "qa": qa, "observation": obs}


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _ten(first: dict) -> list[dict]:
    return [first] + [_sample(f"conv-{k}") for k in range(1, 10)]


def test_tiny_file_quirks(tmp_path: Path) -> None:
    qa = [
        {
            "question": "q0",
            "answer": 7,
            "evidence": ["D1:1; D2:1", "D:1:2", "D2:01", "D9:9", "D"],
            "category": 1,
        },
        {"question": "q1", "adversarial_answer": "x", "evidence": [], "category": 5},
        {
            "question": "q0",
            "answer": 7,
            "evidence": ["D1:1; D2:1", "D:1:2", "D2:01", "D9:9", "D"],
            "category": 1,
        },
        {"question": "q3", "answer": "a", "evidence": ["D2:10"], "category": 2},
    ]
    obs = {"session_1_observation": {"Ann": [["both", ["D1:1", "D2:1"]], ["nowhere", "D7:1"]]}}
    first = _sample("conv-0", qa, obs, session_3_date_time="1:00 pm on 1 June, 2023")
    s = load_locomo(_write(tmp_path, _ten(first)), dev_split_seed=3)
    d = s["train"][0]
    assert d.id == "D1/conv-0" and [x.index for x in d.sessions] == [1, 2]
    q0, q1, q3 = d.questions
    assert (q0.id, q0.answer, q0.evidence) == ("conv-0/q000", "7", ("D1:1", "D2:1", "D1:2"))
    assert (q1.answer, q1.unanswerable, q1.evidence, q1.date) == (
        UNANSWERABLE_ANSWER,
        True,
        (),
        datetime(2023, 5, 9, 9),
    )
    assert q3.id == "conv-0/q003" and q3.evidence == ()
    turns = d.turn_index()
    assert [f.text for f in turns["D1:1"].facts] == ["both"] and [f.text for f in turns["D2:1"].facts] == [
        "both"
    ]
    assert turns["D1:2"].image_caption == "a photo of a cat" and turns["D1:1"].image_caption is None
    r = s.report
    assert r.repairs == {
        "answer_int_to_str": 1, "evidence_split": 1, "evidence_normalized": 2,
        "cat5_answer_missing": 1, "fact_turn_list": 1,
    }  # fmt: skip
    assert r.skips == {
        "evidence_unknown_turn": 2, "evidence_unparseable": 1, "evidence_empty": 2, "evidence_duplicate": 1,
        "duplicate_question": 1, "fact_turn_unknown_turn": 1, "orphan_session_date": 1,
    }  # fmt: skip
    assert r.examples["evidence_normalized"] == [
        "conv-0/q000: 'D:1:2' -> 'D1:2'",
        "conv-0/q000: 'D2:01' -> 'D2:1'",
    ]


BAD_CASES = [
    ("not json", "{oops", "<file>", "<json>"),
    ("top level", {"a": 1}, "<file>", "<top level>"),
    ("no sample_id", [{"conversation": {}, "qa": []}], "#0", "sample_id"),
    ("no conversation", [{"sample_id": "conv-0", "qa": []}], "conv-0", "conversation"),
    ("no qa", [{"sample_id": "conv-0", "conversation": {}}], "conv-0", "qa"),
    ("qa not list", [dict(_sample("conv-0"), qa={"x": 1})], "conv-0", "qa"),
    (
        "turn without text",
        [_sample("conv-0", session_1=[{"speaker": "Ann", "dia_id": "D1:1"}])],
        "conv-0/D1:1",
        "text",
    ),
    ("session not list", [_sample("conv-0", session_2="x")], "conv-0", "session_2"),
    (
        "bad dia_id",
        [_sample("conv-0", session_2=[{"speaker": "A", "dia_id": "D1:9", "text": "t"}])],
        "conv-0/session_2[0]",
        "dia_id",
    ),  # noqa: E501
    (
        "dup dia_id",
        [_sample("conv-0", session_2=[{"speaker": "A", "dia_id": "D2:1", "text": "t"}] * 2)],
        "conv-0/D2:1",
        "dia_id",
    ),  # noqa: E501
    ("no date", [_sample("conv-0", session_2_date_time=5)], "conv-0", "session_2_date_time"),
    ("bad date", [_sample("conv-0", session_2_date_time="soon")], "conv-0", "session_2_date_time"),
    (
        "bad category",
        [_sample("conv-0", [{"question": "q", "answer": "a", "evidence": [], "category": 7}])],
        "conv-0/q000",
        "category",
    ),  # noqa: E501
    (
        "no answer",
        [_sample("conv-0", [{"question": "q", "evidence": [], "category": 1}])],
        "conv-0/q000",
        "answer",
    ),
    (
        "evidence type",
        [_sample("conv-0", [{"question": "q", "answer": "a", "evidence": [3], "category": 1}])],
        "conv-0/q000",
        "evidence[0]",
    ),  # noqa: E501
    (
        "bad fact",
        [_sample("conv-0", observation={"s": {"Ann": [["only text"]]}})],
        "conv-0",
        "observation.s.Ann[0]",
    ),
    ("dup sample", [_sample("conv-0")] * 10, "conv-0", "sample_id"),
    ("empty conversation", [_sample("conv-0", session_1=[], session_2=[])], "conv-0", "conversation"),
    ("empty qa", [_sample("conv-0", qa=[])], "conv-0", "qa"),
    ("identical speakers", [_sample("conv-0", speaker_b="Ann")], "conv-0", "conversation.speaker_b"),
    (
        "unknown speaker",
        [_sample("conv-0", session_2=[{"speaker": "Cy", "dia_id": "D2:1", "text": "t"}])],
        "conv-0/D2:1",
        "speaker",
    ),
    (
        "dates out of order",
        [_sample("conv-0", session_2_date_time="9:00 am on 1 May, 2023")],
        "conv-0",
        "session_2_date_time",
    ),
    (
        "full-width digit in dia_id",
        [_sample("conv-0", session_2=[{"speaker": "Ann", "dia_id": "D2:\uff11", "text": "t"}])],
        "conv-0/session_2[0]",
        "dia_id",
    ),
    ("nine samples", [_sample(f"conv-{k}") for k in range(9)], "<file>", "<top level>"),
]


def test_empty_session_and_empty_answer_are_counted(tmp_path: Path) -> None:
    qa = [{"question": "q0", "answer": " ", "evidence": ["D1:1"], "category": 4},
          {"question": "q1", "answer": "a", "evidence": ["D1:1"], "category": 4}]  # fmt: skip
    first = _sample("conv-0", qa, session_3=[], session_3_date_time="1:00 pm on 1 June, 2023")
    d = load_locomo(_write(tmp_path, _ten(first)))
    assert [s.index for s in d["train"][0].sessions] == [1, 2]
    assert [q.id for q in d["train"][0].questions] == ["conv-0/q001"]
    assert d.report.skips["session_empty"] == 1 and d.report.skips["answer_empty"] == 1
    assert "conv-0/q000" in d.report.examples["answer_empty"][0]


def test_non_utf8_bytes_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_bytes(json.dumps(_ten(_sample("conv-0"))).encode().replace(b"hi", b"h\xff"))
    with pytest.raises(DataFormatError) as info:
        load_locomo(path)
    assert (info.value.path, info.value.field) == (str(path), "<encoding>")
    assert "ff" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("name", "data", "record", "field"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_malformed_file_names_file_record_field(
    tmp_path: Path, name: str, data, record: str, field: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(DataFormatError) as info:
        load_locomo(path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), record, field)
    assert str(path) in str(info.value)
