"""LoCoMo loader: ``locomo10.json`` -> typed dialogues, the D1-D4 / D5 / D6-D10 split, a load report.

D1..D10 are the ten samples in file order; ``train`` = D1-D4, ``dev`` = D5 (also dealt into the
``dev_calibration`` / ``dev_selection`` halves by :func:`split_questions`), ``test`` = D6-D10. The file's
quirks are repaired or skipped, never silently: each one is counted by kind in the ``LoadReport``.
Every choice (ids, sessions, turns, category 5, repairs, duplicates) is recorded in ``docs/design/locomo.md``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memprm.data.dates import parse_locomo_datetime
from memprm.data.records import (
    DataFormatError,
    DataSplits,
    Dialogue,
    Fact,
    LoadReport,
    Question,
    Session,
    Turn,
    read_json,
)

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
UNANSWERABLE_ANSWER = "Not mentioned in the conversation"
N_DIALOGUES = 10

# ASCII digits only: ``\d`` would accept full-width and other Unicode digits in keys and turn ids.
_SESSION_KEY = re.compile(r"session_([0-9]+)")
_DATE_KEY = re.compile(r"session_([0-9]+)_date_time")
_TURN_ID = re.compile(r"D([0-9]+):([0-9]+)")
_LOOSE_ID = re.compile(r"D:?([0-9]+):([0-9]+)")
_ID_SEP = re.compile(r"[;,\s]+")


class _Ctx:
    """The file being read and its report, so helpers can raise precise errors."""

    def __init__(self, path: Path, report: LoadReport):
        self.path, self.report = str(path), report

    def fail(self, record: str, field: str, problem: str) -> DataFormatError:
        return DataFormatError(self.path, record, field, problem)

    def get(self, obj: dict, key: str, kind: type | tuple[type, ...], record: str, field: str = "") -> Any:
        if key not in obj:
            raise self.fail(record, field or key, "missing")
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(record, field or key, f"expected {_type_name(kind)}, got {type(value).__name__}")
        return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


def load_locomo(
    path: str | Path,
    categories: Iterable[int] | None = None,
    dev_split_seed: int = 0,
    *,
    drop_duplicates: bool = True,
) -> DataSplits:
    """Load ``locomo10.json`` into ``train``/``dev``/``dev_calibration``/``dev_selection``/``test``.

    ``categories``: official category numbers to keep (None = all five). Raises ``DataFormatError`` for a
    malformed file and ``ValueError`` for an unknown category number.
    """
    keep = None if categories is None else frozenset(categories)
    if keep is not None and not keep <= CATEGORY_NAMES.keys():
        raise ValueError(f"unknown LoCoMo categories {sorted(keep - CATEGORY_NAMES.keys())}; known 1-5")
    path = Path(path)
    ctx = _Ctx(path, LoadReport(source="locomo", path=str(path)))
    raw = read_json(path)
    if not isinstance(raw, list):
        raise ctx.fail("<file>", "<top level>", f"expected a list of samples, got {type(raw).__name__}")
    dialogues = [_dialogue(ctx, i, s, keep, drop_duplicates) for i, s in enumerate(raw)]
    sample_ids = [d.id.split("/", 1)[1] for d in dialogues]
    for k, sid in enumerate(sample_ids):
        if sid in sample_ids[:k]:
            raise ctx.fail(sid, "sample_id", "occurs twice in the file")
    if len(dialogues) != N_DIALOGUES:
        raise ctx.fail("<file>", "<top level>", f"expected {N_DIALOGUES} samples, found {len(dialogues)}")
    dev = dialogues[4]
    calibration, selection = split_questions(dev.questions, dev_split_seed)
    splits = {
        "train": tuple(dialogues[:4]),
        "dev": (dev,),
        "dev_calibration": (replace(dev, questions=calibration),),
        "dev_selection": (replace(dev, questions=selection),),
        "test": tuple(dialogues[5:]),
    }
    return DataSplits(source="locomo", splits=splits, report=ctx.report)


def split_questions(questions: tuple[Question, ...], seed: int) -> tuple[tuple[Question, ...], ...]:
    """Deal questions into two halves, stratified by category.

    Per category (in category order) the question ids are shuffled with ``random.Random(seed)``, the
    per-category lists are concatenated and dealt alternately, so the halves differ by at most one question
    overall and per category. Both halves keep the questions' original order.
    """
    by_cat: dict[str, list[str]] = {}
    for q in questions:
        by_cat.setdefault(q.category, []).append(q.id)
    rng = random.Random(seed)
    order: list[str] = []
    for cat in sorted(by_cat):
        ids = sorted(by_cat[cat])
        rng.shuffle(ids)
        order.extend(ids)
    first = set(order[0::2])
    return tuple(q for q in questions if q.id in first), tuple(q for q in questions if q.id not in first)


def _dialogue(ctx: _Ctx, i: int, sample: Any, keep: frozenset[int] | None, drop_dups: bool) -> Dialogue:
    if not isinstance(sample, dict):
        raise ctx.fail(f"#{i}", "<sample>", f"expected an object, got {type(sample).__name__}")
    sid = ctx.get(sample, "sample_id", str, f"#{i}")
    conv = ctx.get(sample, "conversation", dict, sid)
    qa = ctx.get(sample, "qa", list, sid)
    speakers = (ctx.get(conv, "speaker_a", str, sid), ctx.get(conv, "speaker_b", str, sid))
    if not all(sp.strip() for sp in speakers):
        raise ctx.fail(sid, "conversation.speaker_a/speaker_b", f"empty speaker name in {speakers}")
    if speakers[0] == speakers[1]:
        raise ctx.fail(
            sid, "conversation.speaker_b", f"same as speaker_a ({speakers[0]!r}): turns cannot be told apart"
        )
    if not qa:
        raise ctx.fail(sid, "qa", "empty: the conversation has no questions")
    raw_sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_KEY.fullmatch(key)) and _is_list(ctx, conv, sid, key)
    )
    session_numbers = {n for n, _ in raw_sessions}
    for key in conv:
        if (m := _DATE_KEY.fullmatch(key)) and int(m.group(1)) not in session_numbers:
            ctx.report.skip("orphan_session_date", f"{sid}: {key}={conv[key]!r}")
    raw_turns: list[tuple[int, str, dict]] = []
    known: set[str] = set()
    for n, key in raw_sessions:
        if not conv[key]:
            ctx.report.skip("session_empty", f"{sid}: {key} has no turns (session left out)")
        for j, t in enumerate(conv[key]):
            tid = _turn_id(ctx, sid, key, j, t, n)
            if tid in known:
                raise ctx.fail(f"{sid}/{tid}", "dia_id", "turn id occurs twice")
            known.add(tid)
            raw_turns.append((n, tid, t))
    facts = _facts(ctx, sid, sample, known)
    turns_of: dict[int, list[Turn]] = {n: [] for n, _ in raw_sessions}
    for n, tid, t in raw_turns:
        rec = f"{sid}/{tid}"
        speaker, text = ctx.get(t, "speaker", str, rec), ctx.get(t, "text", str, rec)
        if speaker not in speakers:
            raise ctx.fail(rec, "speaker", f"{speaker!r} is neither speaker_a nor speaker_b {speakers}")
        caption = ctx.get(t, "blip_caption", str, rec) if "blip_caption" in t else None
        turns_of[n].append(Turn(tid, speaker, text, n, caption, tuple(facts.get(tid, ()))))
    sessions = tuple(_session(ctx, conv, sid, n, tuple(turns_of[n])) for n, _ in raw_sessions if turns_of[n])
    if not sessions:
        raise ctx.fail(
            sid, "conversation", f"no turns in any session: its {len(qa)} questions could never be asked"
        )
    for a, b in zip(sessions, sessions[1:], strict=False):
        if a.datetime is not None and b.datetime is not None and b.datetime < a.datetime:
            raise ctx.fail(
                sid,
                f"session_{b.index}_date_time",
                f"{b.datetime_text!r} is before session "
                f"{a.index}'s {a.datetime_text!r}: sessions must be in time order",
            )
    last = sessions[-1].datetime
    questions = _questions(ctx, sid, qa, known, last, keep, drop_dups)
    return Dialogue(f"D{i + 1}/{sid}", speakers, sessions, questions, source="locomo")


def _is_list(ctx: _Ctx, conv: dict, sid: str, key: str) -> bool:
    if not isinstance(conv[key], list):
        raise ctx.fail(sid, key, f"expected a list of turns, got {type(conv[key]).__name__}")
    return True


def _session(ctx: _Ctx, conv: dict, sid: str, n: int, turns: tuple[Turn, ...]) -> Session:
    text = ctx.get(conv, f"session_{n}_date_time", str, sid)
    try:
        return Session(n, parse_locomo_datetime(text), turns, datetime_text=text)
    except ValueError as exc:
        raise ctx.fail(sid, f"session_{n}_date_time", str(exc)) from None


def _turn_id(ctx: _Ctx, sid: str, key: str, j: int, turn: Any, n: int) -> str:
    if not isinstance(turn, dict):
        raise ctx.fail(f"{sid}/{key}[{j}]", "<turn>", f"expected an object, got {type(turn).__name__}")
    tid = ctx.get(turn, "dia_id", str, f"{sid}/{key}[{j}]")
    m = _TURN_ID.fullmatch(tid)
    if m is None or int(m.group(1)) != n:
        raise ctx.fail(f"{sid}/{key}[{j}]", "dia_id", f"{tid!r} is not of the form 'D{n}:<turn>'")
    return tid


def _resolve(ctx: _Ctx, raw: list[str], known: set[str], where: str, what: str) -> list[str]:
    """Map raw id strings to known turn ids, recording every split, normalisation and drop."""
    out: list[str] = []
    for value in raw:
        parts = [value] if value in known else [p for p in _ID_SEP.split(value.strip()) if p]
        if len(parts) > 1:
            ctx.report.repair(f"{what}_split", f"{where}: {value!r} -> {parts}")
        if not parts:
            ctx.report.skip(f"{what}_unparseable", f"{where}: {value!r}")
        for part in parts:
            tid = part
            if part not in known:
                m = _LOOSE_ID.fullmatch(part)
                if m is None:
                    ctx.report.skip(f"{what}_unparseable", f"{where}: {part!r}")
                    continue
                tid = f"D{int(m.group(1))}:{int(m.group(2))}"
                if tid not in known:
                    ctx.report.skip(f"{what}_unknown_turn", f"{where}: {part!r}")
                    continue
                ctx.report.repair(f"{what}_normalized", f"{where}: {part!r} -> {tid!r}")
            if tid in out:
                ctx.report.skip(f"{what}_duplicate", f"{where}: {tid!r}")
                continue
            out.append(tid)
    return out


def _facts(ctx: _Ctx, sid: str, sample: dict, known: set[str]) -> dict[str, list[Fact]]:
    if "observation" not in sample:
        ctx.report.skip("observation_missing", f"{sid}: no facts")
        return {}
    facts: dict[str, list[Fact]] = {}
    for skey, per_speaker in ctx.get(sample, "observation", dict, sid).items():
        if not isinstance(per_speaker, dict):
            raise ctx.fail(
                sid, f"observation.{skey}", f"expected an object, got {type(per_speaker).__name__}"
            )
        for speaker, items in per_speaker.items():
            field = f"observation.{skey}.{speaker}"
            if not isinstance(items, list):
                raise ctx.fail(sid, field, f"expected a list, got {type(items).__name__}")
            for k, item in enumerate(items):
                ok = isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                ref = item[1] if ok else None
                if isinstance(ref, list) and all(isinstance(r, str) for r in ref):
                    ctx.report.repair("fact_turn_list", f"{sid} {field}[{k}]: {ref}")
                elif isinstance(ref, str):
                    ref = [ref]
                else:
                    raise ctx.fail(sid, f"{field}[{k}]", "expected [fact_text, dia_id or list of dia_ids]")
                for tid in _resolve(ctx, ref, known, f"{sid} {field}[{k}]", "fact_turn"):
                    facts.setdefault(tid, []).append(Fact(item[0], tid, speaker))
    return facts


def _questions(
    ctx: _Ctx,
    sid: str,
    qa: list,
    known: set[str],
    date: datetime | None,
    keep: frozenset[int] | None,
    drop_dups: bool,
) -> tuple[Question, ...]:
    seen: dict[str, str] = {}
    out: list[Question] = []
    for k, item in enumerate(qa):
        qid = f"{sid}/q{k:03d}"
        if not isinstance(item, dict):
            raise ctx.fail(qid, "<qa item>", f"expected an object, got {type(item).__name__}")
        if drop_dups:
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                ctx.report.skip("duplicate_question", f"{qid} = {seen[key]}")
                continue
            seen[key] = qid
        cat = ctx.get(item, "category", int, qid)
        if cat not in CATEGORY_NAMES:
            raise ctx.fail(qid, "category", f"unknown category {cat}; known 1-5")
        text = ctx.get(item, "question", str, qid)
        evidence = ctx.get(item, "evidence", list, qid)
        for e, value in enumerate(evidence):
            if not isinstance(value, str):
                raise ctx.fail(qid, f"evidence[{e}]", f"expected str, got {type(value).__name__}")
        if cat == ADVERSARIAL:
            if "answer" in item:
                ctx.report.repair(
                    "cat5_answer_replaced", f"{qid}: {item['answer']!r} -> {UNANSWERABLE_ANSWER!r}"
                )
            else:
                ctx.report.repair("cat5_answer_missing", f"{qid}: -> {UNANSWERABLE_ANSWER!r}")
            answer = UNANSWERABLE_ANSWER
        else:
            answer = ctx.get(item, "answer", (str, int), qid)
            if isinstance(answer, int):
                ctx.report.repair("answer_int_to_str", f"{qid}: {answer}")
                answer = str(answer)
            if not answer.strip():
                ctx.report.skip("answer_empty", f"{qid} (no gold answer: it could never be judged correct)")
                continue
        ids = tuple(_resolve(ctx, evidence, known, qid, "evidence"))
        if not ids:
            ctx.report.skip("evidence_empty", f"{qid} (question kept)")
        q = Question(qid, text, answer, CATEGORY_NAMES[cat], ids, date, cat, unanswerable=cat == ADVERSARIAL)
        if keep is not None and cat not in keep:
            ctx.report.skip(f"filtered_category_{cat}", qid)
            continue
        out.append(q)
    return tuple(out)
