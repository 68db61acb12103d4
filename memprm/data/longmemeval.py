"""LongMemEval loader (oracle and S layouts) with MemBuilder's question split.

Each question becomes its own dialogue (``speakers`` = ``("user", "assistant")``) holding that question's
haystack sessions, sorted by date; the turns flagged ``has_answer`` are the question's evidence. With a
MemBuilder split file the questions go to ``sft`` / ``rl`` / ``dev`` / ``test``, else to one ``all`` split.
Every choice (order, ids, evidence, splits) is recorded in ``docs/design/longmemeval.md``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from memprm.data.dates import parse_longmemeval_datetime
from memprm.data.records import (
    DataFormatError,
    DataSplits,
    Dialogue,
    LoadReport,
    Question,
    Session,
    Turn,
    read_json,
)

SPEAKERS = ("user", "assistant")
#: LongMemEval's question types (each has its judging template); any other value is a data error.
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
SPLIT_KEYS = ("sft", "rl", "test")
RL_DEV_SIZE = 10


def _get(obj: dict, key: str, kind: type | tuple[type, ...], path: str, record: str) -> Any:
    if key not in obj:
        raise DataFormatError(path, record, key, "missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataFormatError(path, record, key, f"wrong type {type(value).__name__}")
    return value


def _list_of(obj: dict, key: str, kind: type, path: str, record: str) -> list:
    values = _get(obj, key, list, path, record)
    for k, v in enumerate(values):
        if not isinstance(v, kind):
            raise DataFormatError(
                path, record, f"{key}[{k}]", f"expected {kind.__name__}, got {type(v).__name__}"
            )
    return values


def _date(text: str, path: str, record: str, field: str) -> datetime:
    try:
        return parse_longmemeval_datetime(text)
    except ValueError as exc:
        raise DataFormatError(path, record, field, str(exc)) from None


def _turn(raw: Any, tid: str, k: int, path: str, qid: str, field: str) -> tuple[Turn, bool]:
    if not isinstance(raw, dict):
        raise DataFormatError(path, qid, field, f"expected an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role not in SPEAKERS:
        raise DataFormatError(path, qid, f"{field}.role", f"expected 'user' or 'assistant', got {role!r}")
    content = raw.get("content")
    if not isinstance(content, str):
        raise DataFormatError(path, qid, f"{field}.content", f"expected str, got {type(content).__name__}")
    flag = raw.get("has_answer", False)
    if not isinstance(flag, bool):
        raise DataFormatError(path, qid, f"{field}.has_answer", f"expected bool, got {type(flag).__name__}")
    return Turn(tid, role, content, k), flag


def _dialogue(raw: Any, i: int, path: str, report: LoadReport) -> Dialogue:
    if not isinstance(raw, dict):
        raise DataFormatError(path, f"#{i}", "<instance>", f"expected an object, got {type(raw).__name__}")
    qid = _get(raw, "question_id", str, path, f"#{i}")
    qtype = _get(raw, "question_type", str, path, qid)
    if qtype not in QUESTION_TYPES:
        raise DataFormatError(
            path, qid, "question_type", f"unknown type {qtype!r}; known: {list(QUESTION_TYPES)}"
        )
    text = _get(raw, "question", str, path, qid)
    answer = _get(raw, "answer", (str, int), path, qid)
    if isinstance(answer, int):
        report.repair("answer_int_to_str", f"{qid}: {answer}")
        answer = str(answer)
    asked = _date(_get(raw, "question_date", str, path, qid), path, qid, "question_date")
    date_texts = _list_of(raw, "haystack_dates", str, path, qid)
    raw_sessions = _list_of(raw, "haystack_sessions", list, path, qid)
    if len(date_texts) != len(raw_sessions):
        problem = f"{len(date_texts)} dates for {len(raw_sessions)} haystack_sessions"
        raise DataFormatError(path, qid, "haystack_dates", problem)
    dates = [_date(t, path, qid, f"haystack_dates[{k}]") for k, t in enumerate(date_texts)]
    order = sorted(range(len(dates)), key=dates.__getitem__)  # stable: ties keep file order
    if order != list(range(len(dates))):
        moved = sum(src != k for k, src in enumerate(order))
        report.repair("sessions_reordered", f"{qid}: {moved} of {len(order)} sessions moved")
    sessions, evidence = [], []
    for k, src in enumerate(order, start=1):
        turns = []
        for j, raw_turn in enumerate(raw_sessions[src], start=1):
            field = f"haystack_sessions[{src}][{j - 1}]"
            turn, flag = _turn(raw_turn, f"D{k}:{j}", k, path, qid, field)
            turns.append(turn)
            if flag:
                evidence.append(turn.id)
        sessions.append(Session(k, dates[src], tuple(turns), datetime_text=date_texts[src]))
    unanswerable = qid.endswith("_abs")
    if not evidence and not unanswerable:
        report.skip("evidence_empty", f"{qid} (question kept)")
    question = Question(qid, text, answer, qtype, tuple(evidence), asked, 0, unanswerable)
    return Dialogue(qid, SPEAKERS, tuple(sessions), (question,), source="longmemeval")


def _read_splits(path: Path, rl_dev_size: int) -> dict[str, list[str]]:
    raw, p = read_json(path), str(path)
    if not isinstance(raw, dict):
        raise DataFormatError(p, "<file>", "<top level>", f"expected an object, got {type(raw).__name__}")
    lists = {key: _list_of(raw, key, str, p, "<splits>") for key in SPLIT_KEYS}
    seen: dict[str, str] = {}
    for key, ids in lists.items():
        for qid in ids:
            if qid in seen:
                raise DataFormatError(p, qid, key, f"question id already listed in {seen[qid]!r}")
            seen[qid] = key
    rl = lists["rl"]
    if not 0 <= rl_dev_size <= len(rl):
        raise DataFormatError(p, "<splits>", "rl", f"{len(rl)} ids cannot give a dev part of {rl_dev_size}")
    cut = len(rl) - rl_dev_size
    return {"sft": lists["sft"], "rl": rl[:cut], "dev": rl[cut:], "test": lists["test"]}


def load_longmemeval(
    path: str | Path,
    splits_path: str | Path | None = None,
    *,
    rl_dev_size: int = RL_DEV_SIZE,
) -> DataSplits:
    """Load a LongMemEval oracle or S file; split it by MemBuilder's ids when ``splits_path`` is given.

    Raises ``DataFormatError`` (file, question id, field) for a malformed data or split file.
    """
    path = Path(path)
    report = LoadReport(source="longmemeval", path=str(path))
    raw = read_json(path)
    if not isinstance(raw, list):
        raise DataFormatError(
            str(path), "<file>", "<top level>", f"expected a list, got {type(raw).__name__}"
        )
    if not raw:
        raise DataFormatError(
            str(path), "<file>", "<top level>", "an empty list: the file holds no questions"
        )
    by_id: dict[str, Dialogue] = {}
    for i, item in enumerate(raw):
        dialogue = _dialogue(item, i, str(path), report)
        if dialogue.id in by_id:
            raise DataFormatError(str(path), dialogue.id, "question_id", "occurs twice in the file")
        by_id[dialogue.id] = dialogue
    if splits_path is None:
        return DataSplits(source="longmemeval", splits={"all": tuple(by_id.values())}, report=report)
    splits: dict[str, tuple[Dialogue, ...]] = {}
    for name, ids in _read_splits(Path(splits_path), rl_dev_size).items():
        for qid in ids:
            if qid not in by_id:
                report.skip("split_id_missing", f"{name}: {qid}")
        splits[name] = tuple(by_id[qid] for qid in ids if qid in by_id)
    listed = {d.id for part in splits.values() for d in part}
    unsplit = tuple(d for qid, d in by_id.items() if qid not in listed)
    for d in unsplit:
        report.skip("not_in_splits", f"{d.id} (kept in 'unsplit')")
    if unsplit:
        splits["unsplit"] = unsplit
    return DataSplits(source="longmemeval", splits=splits, report=report)
