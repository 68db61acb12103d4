"""The candidate actions at a gate: what the scoring policy chooses among and the random manager samples.

In this fixed order (``memprm.models.scoring_policy`` documents how teacher actions map onto them):

0. ``Noop``;
1. ``Write(layer, content=turn)`` — the turn word for word (a copy of its verbatim entry);
2. ``Write(layer, content=note_i, key=note_i.key)`` for each note of ``Observation.notes``, in order;
3. ``Merge(entry_id=n_j, content=c)`` for each of the first ``merge_candidates`` (m) neighbours shown, best first,
   where ``c`` is the first note (kind ``merge``), or the turn when there is none (kind ``merge_turn``: as
   ``write_turn`` is to ``write_note``, so that a scorer can tell merging a raw turn from merging a note).

Each candidate carries the text the pair scorer reads for it and a :class:`CandidateView` (kind, rank,
content, Merge target) that the two-tower scorer reads; :func:`gate_view` bundles a gate's views with its
*query*: the date, turn and preceding turns, without layer or shown entries, so every fork of a group and
both layers of a turn share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memprm.env.gates import Action, Observation

CandidateKind = Literal["noop", "write_turn", "write_note", "merge", "merge_turn"]
CANDIDATE_KINDS: tuple[str, ...] = ("noop", "write_turn", "write_note", "merge", "merge_turn")


@dataclass(frozen=True)
class CandidateView:
    kind: CandidateKind
    #: the note's index for ``write_note``, the shown neighbour's index for ``merge`` and ``merge_turn``, else 0.
    rank: int = 0
    #: the text written or merged ("" for Noop).
    content: str = ""
    #: the Merge target's text as shown at the gate ("" for the other kinds).
    target: str = ""
    #: a ``merge`` whose note's key is the target entry's key (both non-empty: the same person's same
    #: attribute, as the note writer keyed it); False for every other candidate.
    same_key: bool = False


@dataclass(frozen=True)
class GateView:
    layer: str
    query: str
    candidates: tuple[CandidateView, ...]


@dataclass(frozen=True)
class Candidate:
    action: Action
    text: str
    view: CandidateView


def gate_query(obs: Observation) -> str:
    """The layer-free part of the gate: date, turn, preceding turns latest first."""
    parts = [f"date: {(obs.timestamp or 'unknown')[:10]}", f"turn: {obs.turn.render}"]
    if obs.context:
        parts.append("recent turns, latest first: " + " / ".join(reversed(obs.context)))
    return " | ".join(parts)


def gate_candidates(obs: Observation, merge_candidates: int) -> tuple[Candidate, ...]:
    """The candidates at ``obs``: Noop, Write turn, Write note × #notes, Merge × min(m, shown)."""
    turn = obs.turn.render
    out = [
        Candidate(Action.noop(), f"noop: keep nothing of this turn in the {obs.layer} layer", CandidateView("noop")),
        Candidate(
            Action("write", turn, ""),
            f"write: this turn word for word as a new {obs.layer} entry",
            CandidateView("write_turn", 0, turn),
        ),
    ]
    out += [
        Candidate(
            Action("write", n.text, n.key),
            f"write: the note '{n.text}' as a new {obs.layer} entry",
            CandidateView("write_note", i, n.text),
        )
        for i, n in enumerate(obs.notes)
    ]
    if obs.notes:
        content, what, kind = obs.notes[0].text, f"the note '{obs.notes[0].text}'", "merge"
        key = obs.notes[0].key
    else:
        content, what, kind, key = turn, "this turn", "merge_turn", ""
    for j, n in enumerate(obs.neighbours[:merge_candidates]):
        out.append(
            Candidate(
                Action("merge", content, entry_id=n.entry_id),
                f"merge: {what} into shown entry {j + 1}: {n.text}",
                CandidateView(kind, j, content, n.text, same_key=bool(key) and key == n.key),
            )
        )
    return tuple(out)


def gate_view(obs: Observation, candidates: tuple[Candidate, ...]) -> GateView:
    return GateView(obs.layer, gate_query(obs), tuple(c.view for c in candidates))
