"""Precision and recall of a note writer against the data's fact annotations (issue 23).

Every turn of the given dialogues goes through the writer (with its session date); its notes are matched
one-to-one, greedily by score, to the facts annotated on the same turn:

- a **profile fact** (an attribute ``key`` and a ``value``, e.g. the synthetic generator's ``job = nurse``)
  is matched by a profile note whose value (the text between ``": "`` and ``" (as of"``) has token F1 ≥
  ``threshold`` with the fact's value (the writer names attributes its own way: the key is not compared);
- any other fact (events; LoCoMo's ``observation`` items, which carry no key) is matched by a note of either
  layer whose whole text has token F1 ≥ ``threshold`` with the fact's text (stemmed tokens, articles and
  punctuation dropped: :func:`memprm.llm.text.answer_tokens`), dates included: a note dated wrongly loses the
  date's tokens.

Precision = matched notes / notes written (a note on a turn with no fact counts against it); recall =
matched facts / facts annotated. Only as good as the annotations: LoCoMo's observations paraphrase.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memprm.data.records import Dialogue, Fact
from memprm.llm.judge import token_f1
from memprm.llm.notes import Note, NoteWriter


def _profile_value(note: Note) -> str:
    """``"Ana's job: nurse (as of 7 May 2023)"`` → ``"nurse"``."""
    value = note.text.split(": ", 1)[1] if ": " in note.text else note.text
    return value.rsplit(" (as of ", 1)[0]


def match_score(note: Note, fact: Fact) -> float:
    """How well ``note`` states ``fact`` (module docstring): value F1 for profile facts, text F1 otherwise."""
    if fact.is_profile:
        if note.layer != "profile":
            return 0.0
        return token_f1(_profile_value(note), fact.value)
    return token_f1(note.text, fact.text)


def match_turn(notes: Iterable[Note], facts: Iterable[Fact], threshold: float) -> list[tuple[int, int]]:
    """One-to-one (note index, fact index) matches of one turn, greedily by descending score ≥ threshold."""
    notes, facts = list(notes), list(facts)
    scored = sorted(((match_score(n, f), i, j) for i, n in enumerate(notes) for j, f in enumerate(facts)),
                    key=lambda x: (-x[0], x[1], x[2]))  # fmt: skip
    used_n, used_f, out = set(), set(), []
    for s, i, j in scored:
        if s >= threshold and i not in used_n and j not in used_f:
            used_n.add(i), used_f.add(j), out.append((i, j))
    return out


@dataclass
class NoteQuality:
    turns: int = 0
    turns_with_facts: int = 0
    turns_with_notes: int = 0
    notes: int = 0
    facts: int = 0
    matched: int = 0
    #: per fact kind (the attribute, "event" or "unkeyed"): [facts, matched]
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    #: a few (turn text, notes, facts) of turns with an unmatched note or fact, for reading
    examples: list[dict] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.notes if self.notes else float("nan")

    @property
    def recall(self) -> float:
        return self.matched / self.facts if self.facts else float("nan")

    def as_dict(self) -> dict:
        keys = ("turns", "turns_with_facts", "turns_with_notes", "notes", "facts", "matched")
        return {k: getattr(self, k) for k in keys} | {
            "precision": self.precision, "recall": self.recall, "by_kind": self.by_kind, "examples": self.examples,
        }  # fmt: skip


def _kind(fact: Fact) -> str:
    if not fact.key:
        return "unkeyed"
    return "event" if fact.key.startswith("event") else fact.key


def note_quality(
    writer: NoteWriter, dialogues: Iterable[Dialogue], threshold: float = 0.5, max_examples: int = 20
) -> NoteQuality:
    """Precision and recall of ``writer`` on every turn of ``dialogues`` (module docstring)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"note_quality: threshold must lie in (0, 1], got {threshold}")
    q = NoteQuality()
    for d in dialogues:
        for s in d.sessions:
            for t in s.turns:
                notes = tuple(writer.notes(t, s.datetime))
                pairs = match_turn(notes, t.facts, threshold)
                q.turns += 1
                q.turns_with_facts += bool(t.facts)
                q.turns_with_notes += bool(notes)
                q.notes, q.facts, q.matched = (
                    q.notes + len(notes),
                    q.facts + len(t.facts),
                    q.matched + len(pairs),
                )
                hit = {j for _, j in pairs}
                for j, f in enumerate(t.facts):
                    counts = q.by_kind.setdefault(_kind(f), [0, 0])
                    counts[0] += 1
                    counts[1] += j in hit
                if (len(pairs) < len(notes) or len(pairs) < len(t.facts)) and len(q.examples) < max_examples:
                    q.examples.append({"turn": t.id, "text": t.text, "notes": [n.text for n in notes],
                                       "facts": [f.text for f in t.facts]})  # fmt: skip
    return q
