"""Note writers: a turn → short, self-contained notes, the content a manager's Write / Merge stores.

The verbatim layer keeps every turn word for word; the managed layers are an index and a compressed
organization on top of it (paper §2, §4.8). A note is what a managed entry should hold instead of a copy of
the turn: one fact, the speaker named, the date absolute. Every writer returns ``Note(layer, key, text)``
tuples in the order the turn states them; ``layer`` says which gate (event / profile) the note is for.

Writers: :class:`~memprm.llm.rule_notes.RuleNoteWriter` (offline, deterministic; :mod:`memprm.llm.rule_notes`),
:class:`OracleNoteWriter` (the data's fact annotations; analysis only, never a default) and
:class:`LLMNoteWriter` (an OpenAI-compatible model).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, Protocol

from memprm.configtools import ConfigError
from memprm.data.records import Turn
from memprm.data.synthetic.phrasing import PHRASING_NAMES
from memprm.llm.relative_time import format_date

NOTE_LAYERS = ("event", "profile")


@dataclass(frozen=True)
class Note:
    layer: str  # "event" | "profile": the gate this note is written at
    key: str  # profile: "<person>/<attribute>" ("Ana/job"); events: ""
    text: str


class NoteWriter(Protocol):
    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        """The notes of ``turn``, said on ``said_on`` (the session date; None when unknown)."""
        ...


@dataclass(frozen=True)
class NoteWriterConfig:
    #: ``rules`` (offline :class:`RuleNoteWriter`), ``tagged`` (the rules plus the learned profile tagger of
    #: :mod:`memprm.llm.profile_tagger` for turns the rules find no profile fact in), ``llm`` (an endpoint,
    #: ``llm.notes``) or ``oracle`` (the data's fact annotations; analysis only, never a default: ``fit``
    #: refuses it, see :func:`refuse_oracle_notes`).
    kind: str = "rules"
    #: ``tagged``: the synthetic phrasing families whose train splits' fact annotations train the tagger
    #: (generated with the run's ``data.synthetic`` settings, the phrasing swapped). Never the run's own
    #: phrasing: the tagger would learn the measured family's templates.
    tagger_phrasings: tuple[str, ...] = ("tuning", "heldout")
    #: ``tagged``: the tagger writes a profile note only when its attribute's probability is at least this.
    tagger_threshold: float = 0.5
    #: ``tagged``: the loss weight of the "no profile fact" class (the other classes weigh 1); lower finds
    #: more facts and writes more spurious notes.
    tagger_none_weight: float = 0.3
    #: ``tagged``: the value is the last candidate span whose similarity to the attribute's prototype is
    #: within this of the best span's.
    tagger_margin: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in ("rules", "tagged", "llm", "oracle"):
            raise ValueError(f"notes.kind must be 'rules', 'tagged', 'llm' or 'oracle', got {self.kind!r}")
        if self.kind == "tagged" and not self.tagger_phrasings:
            raise ValueError("notes.tagger_phrasings is empty: notes.kind=tagged needs a family to train on")
        unknown = [p for p in self.tagger_phrasings if p not in PHRASING_NAMES]
        if unknown:
            raise ValueError(f"notes.tagger_phrasings: unknown {unknown}; phrasings are {list(PHRASING_NAMES)}")
        if not 0.0 <= self.tagger_threshold <= 1.0:
            raise ValueError(f"notes.tagger_threshold must be in [0, 1], got {self.tagger_threshold}")
        if not 0.0 < self.tagger_none_weight <= 1.0:
            raise ValueError(f"notes.tagger_none_weight must be in (0, 1], got {self.tagger_none_weight}")
        if self.tagger_margin < 0.0:
            raise ValueError(f"notes.tagger_margin must be >= 0, got {self.tagger_margin}")


def refuse_oracle_notes(cfg: NoteWriterConfig) -> None:
    """Raises :class:`~memprm.configtools.ConfigError` (one line) when ``cfg.kind`` is ``oracle``: the oracle
    writer reads the data's fact annotations, so it may serve ``tools/policy_gap.py``'s analysis but never a
    run that trains, reports or measures a manager's training signal (``fit``, ``tools/reward_alignment.py``)."""
    if cfg.kind == "oracle":
        raise ConfigError(
            "notes.kind=oracle writes the data's fact annotations as notes and is only for tools/policy_gap.py; "
            "use notes.kind=rules or notes.kind=llm to train, test or measure a manager"
        )


def notes_for(writer: NoteWriter, turn: Turn, timestamp: str | None, layer: str) -> tuple[Note, ...]:
    """The notes ``writer`` gives ``turn`` for one gate's ``layer`` (``timestamp``: the session's ISO date)."""
    said_on = datetime.fromisoformat(timestamp) if timestamp else None
    return tuple(n for n in writer.notes(turn, said_on) if n.layer == layer)


class CachedNotes:
    """Memoizes a writer on (turn id, text, date): a turn opens one gate per layer, and forks replay it."""

    def __init__(self, writer: NoteWriter, max_size: int = 100_000):
        self.writer, self.max_size = writer, max_size
        self._memo: dict[tuple[str, str, str], tuple[Note, ...]] = {}

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        key = (turn.id, turn.render, said_on.isoformat() if said_on else "")
        out = self._memo.get(key)
        if out is None:
            if len(self._memo) >= self.max_size:
                self._memo.clear()
            out = self._memo[key] = tuple(self.writer.notes(turn, said_on))
        return out


#: how a profile note names its attribute when the pattern did not say it (default: the key itself).
ATTRIBUTE_NAMES = {
    "city": "home city",
    "food": "favourite food",
    "drink": "go-to drink",
    "book": "current book",
    "learning": "subject being learned",
}


def profile_note(
    speaker: str, attribute: str, value: str, said_on: datetime | None, *, name: str | None = None
) -> Note:
    """The current-state form ``"Ana's job: nurse (as of 7 May 2023)"``, keyed ``"Ana/job"``: one key per
    (person, attribute), so a second Write of the same key is a contradictory copy that should have merged."""
    when = f" (as of {format_date(said_on)})" if said_on else ""
    text = f"{speaker}'s {name or ATTRIBUTE_NAMES.get(attribute, attribute)}: {value}{when}"
    return Note("profile", f"{speaker}/{attribute}", text)


class OracleNoteWriter:
    """The data's fact annotations as notes (analysis only, never a default).

    It writes the data's own fact annotations (:class:`~memprm.data.records.Fact`: the synthetic generator's
    facts, LoCoMo's ``observation`` lists) as notes; a fact with an attribute ``key`` and ``value`` becomes a
    current-state profile note.
    """

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        out = []
        for f in turn.facts:
            if f.is_profile:
                out.append(profile_note(f.speaker or turn.speaker, f.key, f.value, said_on))
            else:
                out.append(Note("event", "", f.text))
        return tuple(out)


class LLMNoteWriter:
    """Notes from an OpenAI-compatible model (``complete_json``); failures yield no notes, counted.

    The prompt is ``memprm/prompts/note_writer.txt``; the reply is
    ``{"notes": [{"layer": "event"|"profile", "key": str, "text": str}, ...]}``. A failed call yields no notes
    and is counted in ``failed``.
    """

    def __init__(self, client: Any):
        self.client = client
        self.template = (
            resources.files("memprm.prompts").joinpath("note_writer.txt").read_text(encoding="utf-8")
        )
        self.failed = 0

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        date = format_date(said_on) if said_on else "unknown"
        prompt = self.template.format(turn=turn.render, date=date, speaker=turn.speaker)
        result = self.client.complete_json([{"role": "user", "content": prompt}], validate_notes)
        if not isinstance(result, tuple):
            self.failed += 1
            return ()
        return result


def validate_notes(obj: dict) -> tuple[Note, ...]:
    notes = obj.get("notes") if isinstance(obj, dict) else None
    if not isinstance(notes, list):
        raise ValueError(f"expected {{'notes': [...]}}, got {json.dumps(obj)[:200]}")
    out = []
    for i, n in enumerate(notes):
        if not isinstance(n, dict) or n.get("layer") not in NOTE_LAYERS or not str(n.get("text", "")).strip():
            raise ValueError(f"notes[{i}] must be {{'layer': 'event'|'profile', 'key': str, 'text': str}}")
        out.append(Note(n["layer"], str(n.get("key", "")), str(n["text"]).strip()))
    return tuple(out)
