"""Typed records shared by every data source (LoCoMo, LongMemEval, synthetic).

Every loader returns the same shapes, so everything downstream (the memory environment, the exam, the
relabeler) is written once. Records are frozen dataclasses: a dialogue is data, never mutated after loading.

Ids:
- ``Turn.id`` is unique within its dialogue. LoCoMo keeps its own ``D<session>:<turn>`` ids (``D3:7`` is
  session 3, turn 7 — *not* dialogue 3); LongMemEval and the synthetic generator use the same form.
- ``Question.evidence`` lists turn ids of the same dialogue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Fact:
    """One atomic fact annotated on a turn (LoCoMo ``observation`` item, synthetic fact).

    Facts anchor offline probes: a probe built from a fact names the turn the fact came from.
    """

    text: str
    turn_id: str
    speaker: str = ""
    #: the attribute a profile fact states ("job"), or "event:<activity>"; empty when the source has none.
    key: str = ""
    #: a profile fact's (new) value ("nurse"); empty for events and sources without one.
    value: str = ""

    @property
    def is_profile(self) -> bool:
        """A profile fact: an attribute key (not ``event:…``) and its value."""
        return bool(self.key and self.value) and not self.key.startswith("event")


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str
    text: str
    session_index: int
    image_caption: str | None = None
    facts: tuple[Fact, ...] = ()

    @property
    def render(self) -> str:
        """The turn as the memory sees it: ``speaker: text`` plus the image caption when present."""
        base = f"{self.speaker}: {self.text}"
        if self.image_caption:
            base += f" [shares an image: {self.image_caption}]"
        return base


@dataclass(frozen=True)
class Session:
    index: int
    datetime: datetime | None
    turns: tuple[Turn, ...]
    datetime_text: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answer: str
    category: str
    evidence: tuple[str, ...] = ()
    date: datetime | None = None
    #: LoCoMo official category number (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    #: 5 adversarial); 0 for sources without one.
    category_id: int = 0
    #: True when the correct response is to say the information is not available.
    unanswerable: bool = False


@dataclass(frozen=True)
class Dialogue:
    id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = ()
    source: str = ""

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def turn_index(self) -> dict[str, Turn]:
        return {t.id: t for t in self.turns()}

    @property
    def n_turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass
class LoadReport:
    """Everything a loader repaired or skipped, by kind, with the first examples of each.

    Nothing is dropped silently: a loader records each repair and skip here, and ``python -m memprm data``
    prints the report.
    """

    source: str
    path: str = ""
    repairs: dict[str, int] = field(default_factory=dict)
    skips: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    max_examples: int = 3

    def _note(self, table: dict[str, int], kind: str, example: str) -> None:
        table[kind] = table.get(kind, 0) + 1
        ex = self.examples.setdefault(kind, [])
        if len(ex) < self.max_examples:
            ex.append(example)

    def repair(self, kind: str, example: str) -> None:
        self._note(self.repairs, kind, example)

    def skip(self, kind: str, example: str) -> None:
        self._note(self.skips, kind, example)

    def format(self) -> str:
        lines = [f"load report: {self.source} ({self.path})"]
        for title, table in (("repaired", self.repairs), ("skipped", self.skips)):
            if not table:
                lines.append(f"  {title}: none")
                continue
            lines.append(f"  {title}:")
            for kind, n in sorted(table.items()):
                ex = "; ".join(self.examples.get(kind, []))
                lines.append(f"    {kind}: {n}  (e.g. {ex})")
        return "\n".join(lines)


class DataFormatError(ValueError):
    """A data file is malformed. The message names the file, the record and the field."""

    def __init__(self, path: str, record: str, field_name: str, problem: str):
        self.path, self.record, self.field, self.problem = path, record, field_name, problem
        super().__init__(f"{path}: record {record!r}, field {field_name!r}: {problem}")


def read_json(path: Path) -> Any:
    """A JSON data file, or a one-line :class:`DataFormatError` naming the file: bytes that are not UTF-8
    (with their offset) or text that is not JSON."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.end].hex(" ")
        raise DataFormatError(
            str(path),
            "<file>",
            "<encoding>",
            f"byte(s) {bad} at offset {exc.start} are not UTF-8; the file must be UTF-8 encoded",
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(str(path), "<file>", "<json>", f"not valid JSON: {exc}") from None


@dataclass(frozen=True)
class DataSplits:
    """Named lists of dialogues (``train``, ``dev``, ``test`` and source-specific extras)."""

    source: str
    splits: dict[str, tuple[Dialogue, ...]]
    report: LoadReport

    def __getitem__(self, name: str) -> tuple[Dialogue, ...]:
        if name not in self.splits:
            raise KeyError(f"{self.source} has no split {name!r}; splits: {sorted(self.splits)}")
        return self.splits[name]

    def sizes(self) -> dict[str, tuple[int, int]]:
        """split -> (dialogues, questions)."""
        return {k: (len(v), sum(len(d.questions) for d in v)) for k, v in self.splits.items()}
