"""Generating dialogues and splitting them LoCoMo-style (design: ``docs/design/synthetic_data.md``)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta

from memprm.data.records import DataSplits, Dialogue, Fact, LoadReport, Question, Session, Turn
from memprm.data.synthetic.generator_config import CATEGORIES, SELECT_OFFSET, SyntheticConfig
from memprm.data.synthetic.phrasing import phrasing_tables
from memprm.data.synthetic.questions import Draft, draft_questions, round_robin
from memprm.data.synthetic.sessions import Renderer
from memprm.data.synthetic.storyline import (
    format_session_datetime,
    plan_events,
    plan_profile,
)
from memprm.data.synthetic.vocabulary import PEOPLE

SOURCE = "synthetic"
_FIRST_DAY = date(2022, 1, 1)  # dialogues start on a day drawn from the two years from here
_START_SPAN_DAYS = 730
#: LoadReport repair kinds: one entry per session longer than ``turns_per_session`` (its facts and the
#: ``min_filler_exchanges`` distractor exchanges did not fit), and one summary entry for the whole run.
GROWN = "sessions grown beyond turns_per_session"
GROWN_TOTAL = "turns added beyond turns_per_session (all dialogues)"


@dataclass(frozen=True)
class _Note:
    skip: bool  # True: LoadReport.skip; False: LoadReport.repair
    kind: str
    example: str


# --- public API -------------------------------------------------------------------------------------------


def _generate(cfg: SyntheticConfig, index: int) -> tuple[Dialogue, list[_Note]]:
    if index < 0:
        raise ValueError(f"dialogue index must be >= 0, got {index}")
    rng = random.Random(f"memprm-synthetic:{cfg.seed}:{index}")
    did = f"syn-{index:03d}"
    first, second = rng.sample(PEOPLE, 2)
    people = (first, second)
    day = _FIRST_DAY + timedelta(days=rng.randint(0, _START_SPAN_DAYS - 1))
    days = []
    for s in range(cfg.sessions_per_dialogue):
        if s:
            day += timedelta(days=rng.randint(cfg.min_gap_days, cfg.max_gap_days))
        days.append(day)
    phrasing = phrasing_tables(cfg.phrasing)
    serials: list[int] = []
    events = plan_events(cfg, rng, serials, phrasing)
    chains, unused_values = plan_profile(cfg, rng, serials, phrasing)
    renderer = Renderer(cfg, rng, people, events, chains, unused_values, phrasing)

    notes: list[_Note] = []
    sessions, turn_of = [], {}
    for s, d in enumerate(days, start=1):
        lines = renderer.session(s, d)
        if len(lines) > cfg.turns_per_session:
            notes.append(
                _Note(
                    False,
                    GROWN,
                    f"{did} session {s}: {len(lines)} turns (+{len(lines) - cfg.turns_per_session})",
                )
            )
        turns = []
        for t, line in enumerate(lines, start=1):
            tid, speaker = f"D{s}:{t}", people[line.speaker].name
            facts = (Fact(line.fact, tid, speaker, line.key, line.value),) if line.serial is not None else ()
            if line.serial is not None:
                turn_of[line.serial] = tid
            turns.append(Turn(tid, speaker, line.text, s, facts=facts))
        when = datetime.combine(d, time(rng.randint(9, 20), rng.randint(0, 59)))
        sessions.append(Session(s, when, tuple(turns), format_session_datetime(when)))
    assert len(turn_of) == len(serials), "every planned fact must be told in exactly one turn"

    text = "\n".join(t.text for sess in sessions for t in sess.turns)
    candidates = draft_questions(rng, people, events, chains, text, days, phrasing)
    drafts: list[Draft] = []
    for category, n in cfg.questions_requested.items():
        picked = round_robin(rng, candidates[category], n)
        n_cands = sum(len(g) for g in candidates[category])
        for _ in range(n - len(picked)):
            notes.append(
                _Note(
                    True,
                    f"{category} question not formed (too few candidates)",
                    f"{did}: {len(picked)} of {n} from {n_cands} candidates",
                )
            )
        drafts += picked
    rng.shuffle(drafts)
    order = {tid: i for i, tid in enumerate(t.id for sess in sessions for t in sess.turns)}
    last_date = sessions[-1].datetime
    questions = tuple(
        Question(
            id=f"{did}/q{i:02d}",
            text=q.text,
            answer=q.answer,
            category=q.category,
            evidence=tuple(sorted({turn_of[s] for s in q.evidence}, key=order.__getitem__)),
            date=last_date,
            unanswerable=q.unanswerable,
        )
        for i, q in enumerate(drafts, start=1)
    )
    names = tuple(p.name for p in people)
    return Dialogue(did, names, tuple(sessions), questions, source=SOURCE), notes


def generate_dialogue(cfg: SyntheticConfig, index: int) -> Dialogue:
    """Dialogue ``syn-<index>``; depends only on ``cfg`` and ``index``."""
    return _generate(cfg, index)[0]


def split_questions(dialogue: Dialogue) -> tuple[Dialogue, Dialogue]:
    """Two halves of a dev dialogue, same sessions: (calibration, selection).

    Questions are ordered by category (``CATEGORIES`` order) then id and dealt alternately, so the halves
    differ by at most one question overall and one per category.
    """
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    ordered = sorted(dialogue.questions, key=lambda q: (rank.get(q.category, len(rank)), q.id))
    calibration = tuple(sorted(ordered[0::2], key=lambda q: q.id))
    selection = tuple(sorted(ordered[1::2], key=lambda q: q.id))
    return replace(dialogue, questions=calibration), replace(dialogue, questions=selection)


def generate_synthetic(cfg: SyntheticConfig) -> DataSplits:
    """All dialogues, split LoCoMo-style: train, dev, dev_calibration, dev_selection, test; plus ``rl``
    (``cfg.n_rl`` dialogues after the test ones, empty by default: GRPO's unlabelled episodes) and, when
    ``cfg.n_select`` > 0, ``select`` (dialogues from index ``SELECT_OFFSET``: a dev-selection set)."""
    path = f"generated: seed={cfg.seed}, n_dialogues={cfg.n_dialogues}" + (f", n_rl={cfg.n_rl}" if cfg.n_rl else "")
    path += f", n_select={cfg.n_select}" if cfg.n_select else ""
    path += f", phrasing={cfg.phrasing}" if cfg.phrasing != "standard" else ""
    report = LoadReport(source=SOURCE, path=path)
    dialogues = []
    select = [SELECT_OFFSET + i for i in range(cfg.n_select)]
    for i in [*range(cfg.n_dialogues + cfg.n_rl), *select]:
        dialogue, notes = _generate(cfg, i)
        dialogues.append(dialogue)
        for note in notes:
            (report.skip if note.skip else report.repair)(note.kind, note.example)
    lengths = [len(s.turns) for d in dialogues for s in d.sessions]
    extra = sum(n - cfg.turns_per_session for n in lengths)  # sessions are never shorter than the target
    if extra:
        grown = sum(n > cfg.turns_per_session for n in lengths)
        report.repair(
            GROWN_TOTAL,
            f"+{extra} turns ({100 * extra / (cfg.turns_per_session * len(lengths)):.0f}%) "
            f"in {grown} of {len(lengths)} sessions; mean {sum(lengths) / len(lengths):.1f}, "
            f"max {max(lengths)} turns per session vs {cfg.turns_per_session}",
        )
    train = tuple(dialogues[: cfg.n_train])
    dev = tuple(dialogues[cfg.n_train : cfg.n_train + cfg.n_dev])
    halves = [split_questions(d) for d in dev]
    splits = {
        "train": train,
        "dev": dev,
        "dev_calibration": tuple(h[0] for h in halves),
        "dev_selection": tuple(h[1] for h in halves),
        "test": tuple(dialogues[cfg.n_train + cfg.n_dev : cfg.n_dialogues]),
        "rl": tuple(dialogues[cfg.n_dialogues : cfg.n_dialogues + cfg.n_rl]),
    }
    if cfg.n_select:
        splits["select"] = tuple(dialogues[cfg.n_dialogues + cfg.n_rl :])
    return DataSplits(source=SOURCE, splits=splits, report=report)
