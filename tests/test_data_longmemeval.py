"""LongMemEval loader: oracle counts and MemBuilder splits, the S sample, session sorting, malformed files."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from memprm.data.dates import parse_longmemeval_datetime
from memprm.data.longmemeval import load_longmemeval
from memprm.data.records import DataFormatError, DataSplits

# ---------------------------------------------------------------- real files (parsed once)


@pytest.fixture(scope="module")
def lme_dir(data_root: Path) -> Path:
    return data_root / "longmemeval"


@pytest.fixture(scope="module")
def splits_file(lme_dir: Path) -> Path:
    return lme_dir / "splits" / "membuilder_longmemeval_splits.json"


@pytest.fixture(scope="module")
def oracle(lme_dir: Path, splits_file: Path) -> DataSplits:
    return load_longmemeval(lme_dir / "longmemeval_oracle.json", splits_file)


def _every(s: DataSplits):
    return [d for part in s.splits.values() for d in part]


def test_oracle_counts(oracle: DataSplits) -> None:
    dialogues = _every(oracle)
    assert len(dialogues) == 500 and len({d.id for d in dialogues}) == 500
    types = Counter(d.questions[0].category for d in dialogues)
    assert types == {
        "temporal-reasoning": 133, "multi-session": 133, "knowledge-update": 78,
        "single-session-user": 70, "single-session-assistant": 56, "single-session-preference": 30,
    }  # fmt: skip
    abstention = Counter(d.questions[0].category for d in dialogues if d.questions[0].unanswerable)
    assert abstention == {
        "multi-session": 12,
        "single-session-user": 6,
        "temporal-reasoning": 6,
        "knowledge-update": 6,
    }
    assert Counter(len(d.sessions) for d in dialogues) == {1: 176, 2: 250, 3: 41, 4: 19, 5: 11, 6: 3}
    assert sum(d.n_turns for d in dialogues) == 10960
    assert sum(len(d.questions[0].evidence) for d in dialogues) == 896
    assert oracle.report.repairs == {"answer_int_to_str": 32, "sessions_reordered": 34}
    assert oracle.report.skips == {}


def test_oracle_splits_follow_membuilder_file(oracle: DataSplits, splits_file: Path) -> None:
    assert {k: v[0] for k, v in oracle.sizes().items()} == {"sft": 50, "rl": 40, "dev": 10, "test": 400}
    raw = json.loads(splits_file.read_text())
    assert [d.id for d in oracle["rl"]] == raw["rl"][:40]
    assert [d.id for d in oracle["dev"]] == raw["rl"][40:]
    assert [d.id for d in oracle["test"]] == raw["test"]
    test_types = Counter(d.questions[0].category for d in oracle["test"])
    assert [test_types[t] for t in ("temporal-reasoning", "multi-session", "knowledge-update")] == [
        114,
        94,
        61,
    ]
    assert sum(d.questions[0].unanswerable for d in oracle["test"]) == 22


def test_oracle_evidence_sorting_and_fields(oracle: DataSplits) -> None:
    for d in _every(oracle):
        q = d.questions[0]
        assert q.evidence or q.unanswerable, d.id
        ids = d.turn_index()
        assert all(e in ids for e in q.evidence)
        dates = [s.datetime for s in d.sessions]
        # asked on or after the last session's *day*; 43 questions are asked earlier that same day
        assert dates == sorted(dates) and q.date is not None and q.date.date() >= dates[-1].date(), d.id
        assert [s.index for s in d.sessions] == list(range(1, len(d.sessions) + 1))
        assert all(t.speaker in ("user", "assistant") for t in d.turns())
    assert sum(d.questions[0].date < d.sessions[-1].datetime for d in _every(oracle)) == 43
    d = {x.id: x for x in oracle["test"]}["001be529"]
    q = d.questions[0]
    assert (q.evidence, q.date, q.category_id, q.unanswerable) == (
        ("D1:5",),
        datetime(2023, 5, 28, 19, 47),
        0,
        False,
    )
    assert d.sessions[0].datetime_text == "2023/05/21 (Sun) 19:50" and d.speakers == ("user", "assistant")
    assert d.source == "longmemeval" and d.sessions[0].turns[0].id == "D1:1"


def test_s_sample_with_and_without_splits(lme_dir: Path, splits_file: Path) -> None:
    s = load_longmemeval(lme_dir / "longmemeval_s_sample.json", splits_file)
    assert {k: v[0] for k, v in s.sizes().items()} == {"sft": 0, "rl": 0, "dev": 0, "test": 7}
    assert s.report.skips == {"split_id_missing": 493}
    assert all(38 <= len(d.sessions) <= 58 for d in s["test"])
    assert {d.id for d in s["test"] if not d.questions[0].evidence} <= {"eeda8a6d_abs"}
    assert sum(d.questions[0].unanswerable for d in s["test"]) == 1
    for d in s["test"]:
        dates = [x.datetime for x in d.sessions]
        assert dates == sorted(dates)
    plain = load_longmemeval(lme_dir / "longmemeval_s_sample.json")
    assert list(plain.splits) == ["all"] and len(plain["all"]) == 7 and plain.report.skips == {}


# ---------------------------------------------------------------- dates


def test_parse_longmemeval_datetime() -> None:
    assert parse_longmemeval_datetime("2023/05/28 (Sun) 19:47") == datetime(2023, 5, 28, 19, 47)
    assert parse_longmemeval_datetime("2023/05/28 00:05") == datetime(2023, 5, 28, 0, 5)
    for bad in ("2023-05-28 19:47", "2023/02/30 (Thu) 10:00", "2023/05/28 (Sun) 25:00", ""):
        with pytest.raises(ValueError):
            parse_longmemeval_datetime(bad)


# ---------------------------------------------------------------- tiny hand-made files


def _item(qid: str, **over) -> dict:
    item = {
        "question_id": qid,
        "question_type": "multi-session",
        "question": "what?",
        "answer": "x",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": ["2023/05/03 (Wed) 09:00", "2023/05/01 (Mon) 12:00", "2023/05/03 (Wed) 09:00"],
        "haystack_session_ids": ["s0", "s1", "s2"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "late a", "has_answer": True},
                {"role": "assistant", "content": "ok"},
            ],
            [{"role": "user", "content": "early", "has_answer": False}],
            [
                {"role": "user", "content": "late b"},
                {"role": "assistant", "content": "yes", "has_answer": True},
            ],
        ],
        "answer_session_ids": ["s0", "s2"],
    }
    item.update(over)
    return item


def _write(tmp_path: Path, data, name: str = "lme.json") -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_tiny_sort_is_chronological_and_stable(tmp_path: Path) -> None:
    s = load_longmemeval(
        _write(tmp_path, [_item("a1", answer=3), _item("b_abs", haystack_sessions=[[], [], []])])
    )
    d = s["all"][0]
    # session 1 (May 1) first; sessions 0 and 2 share a timestamp and keep file order
    assert [x.turns[0].text if x.turns else "" for x in d.sessions] == ["early", "late a", "late b"]
    assert [t.id for t in d.sessions[2].turns] == ["D3:1", "D3:2"] and d.sessions[2].turns[
        1
    ].session_index == 3
    q = d.questions[0]
    assert (q.answer, q.evidence, q.unanswerable) == ("3", ("D2:1", "D3:2"), False)
    abs_q = s["all"][1].questions[0]
    assert abs_q.unanswerable and abs_q.evidence == ()
    assert s.report.repairs == {"answer_int_to_str": 1, "sessions_reordered": 2}
    assert s.report.skips == {}  # an abstention question without evidence is expected


def test_tiny_splits_missing_unsplit_and_dev_cut(tmp_path: Path) -> None:
    data = _write(tmp_path, [_item(q) for q in ("a", "b", "c", "d", "e")])
    splits = _write(tmp_path, {"sft": ["a", "zz"], "rl": ["b", "c", "d"], "test": []}, "splits.json")
    s = load_longmemeval(data, splits, rl_dev_size=1)
    assert {k: [d.id for d in v] for k, v in s.splits.items()} == {
        "sft": ["a"], "rl": ["b", "c"], "dev": ["d"], "test": [], "unsplit": ["e"],
    }  # fmt: skip
    assert s.report.skips == {"split_id_missing": 1, "not_in_splits": 1}
    no_ev = load_longmemeval(_write(tmp_path, [_item("n", haystack_sessions=[[], [], []])]))
    assert no_ev.report.skips == {"evidence_empty": 1}


BAD_DATA = [
    ("not json", "[{", "<file>", "<json>"),
    ("top level", {"x": 1}, "<file>", "<top level>"),
    ("no id", [{"question": "q"}], "#0", "question_id"),
    (
        "no sessions",
        [{k: v for k, v in _item("q1").items() if k != "haystack_sessions"}],
        "q1",
        "haystack_sessions",
    ),
    ("answer list", [_item("q1", answer=["x"])], "q1", "answer"),
    ("bad question date", [_item("q1", question_date="yesterday")], "q1", "question_date"),
    ("bad session date", [_item("q1", haystack_dates=["x", "y", "z"])], "q1", "haystack_dates[0]"),
    ("dates length", [_item("q1", haystack_dates=["2023/05/01 (Mon) 12:00"])], "q1", "haystack_dates"),
    ("session not list", [_item("q1", haystack_sessions=[{}, [], []])], "q1", "haystack_sessions[0]"),
    (
        "role",
        [_item("q1", haystack_sessions=[[{"role": "bot", "content": "c"}], [], []])],
        "q1",
        "haystack_sessions[0][0].role",
    ),  # noqa: E501
    (
        "content",
        [_item("q1", haystack_sessions=[[], [{"role": "user"}], []])],
        "q1",
        "haystack_sessions[1][0].content",
    ),  # noqa: E501
    (
        "has_answer",
        [_item("q1", haystack_sessions=[[], [], [{"role": "user", "content": "c", "has_answer": 1}]])],
        "q1",
        "haystack_sessions[2][0].has_answer",
    ),  # noqa: E501
    ("duplicate id", [_item("q1"), _item("q1")], "q1", "question_id"),
    ("empty file", [], "<file>", "<top level>"),
    ("unknown question type", [_item("q1", question_type="trivia")], "q1", "question_type"),
    ("not utf-8", b'[{"question_id": "q\xe9"}]', "<file>", "<encoding>"),
]


@pytest.mark.parametrize(("name", "data", "record", "field"), BAD_DATA, ids=[c[0] for c in BAD_DATA])
def test_malformed_data_file(tmp_path: Path, name: str, data, record: str, field: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(DataFormatError) as info:
        load_longmemeval(path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), record, field)


BAD_SPLITS = [
    ("not object", ["a"], "<file>", "<top level>"),
    ("missing rl", {"sft": [], "test": []}, "<splits>", "rl"),
    ("id type", {"sft": [1], "rl": [], "test": []}, "<splits>", "sft[0]"),
    ("twice", {"sft": ["a"], "rl": [], "test": ["a"]}, "a", "test"),
    ("rl too short", {"sft": [], "rl": ["a"], "test": []}, "<splits>", "rl"),
]


@pytest.mark.parametrize(("name", "splits", "record", "field"), BAD_SPLITS, ids=[c[0] for c in BAD_SPLITS])
def test_malformed_splits_file(tmp_path: Path, name: str, splits, record: str, field: str) -> None:
    data = _write(tmp_path, [_item("a")])
    path = _write(tmp_path, splits, "splits.json")
    with pytest.raises(DataFormatError) as info:
        load_longmemeval(data, path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), record, field)
