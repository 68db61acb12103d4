"""The candidate actions at a gate: what the scoring policy chooses among and the random manager samples.

In this fixed order (``memprm.models.scoring_policy`` documents how teacher actions map onto them):

0. ``Noop``;
1. ``Write(layer, content=turn)`` — the turn word for word (a copy of its verbatim entry);
2. ``Write(layer, content=note_i, key=note_i.key)`` for each note of ``Observation.notes``, in order;
3. ``Merge(entry_id=n_j, content=c)`` for each of the first ``merge_candidates`` (m) neighbours shown, best first,
   where ``c`` is the first note, or the turn when there is none.

Each candidate carries the text the scoring policy's encoder reads for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memprm.env.gates import Action, Observation


@dataclass(frozen=True)
class Candidate:
    action: Action
    text: str


def gate_candidates(obs: Observation, merge_candidates: int) -> tuple[Candidate, ...]:
    """The candidates at ``obs``: Noop, Write turn, Write note × #notes, Merge × min(m, shown)."""
    turn = obs.turn.render
    out = [
        Candidate(Action.noop(), f"noop: keep nothing of this turn in the {obs.layer} layer"),
        Candidate(Action("write", turn, ""), f"write: this turn word for word as a new {obs.layer} entry"),
    ]
    out += [
        Candidate(Action("write", n.text, n.key), f"write: the note '{n.text}' as a new {obs.layer} entry")
        for n in obs.notes
    ]
    content, what = (obs.notes[0].text, f"the note '{obs.notes[0].text}'") if obs.notes else (turn, "this turn")
    for j, n in enumerate(obs.neighbours[:merge_candidates]):
        out.append(
            Candidate(
                Action("merge", content, entry_id=n.entry_id),
                f"merge: {what} into shown entry {j + 1}: {n.text}",
            )
        )
    return tuple(out)
