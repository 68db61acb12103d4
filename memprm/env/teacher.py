"""Teachers: memory managers whose trajectories train the critic and initialize the policy (SFT).

:class:`HeuristicTeacher` (offline; the paper's "heuristic teacher" row) applies a documented rule set per
gate over the turn's notes: skip what has no note, act on one fact per gate, merge into a close neighbour or
else write. It never writes the turn itself. :class:`LLMTeacher` asks an OpenAI-compatible model at every
gate and writes its own content.
"""

from __future__ import annotations

from dataclasses import dataclass

from memprm.env.gates import Action, Observation
from memprm.env.ops_format import gate_prompt, validate_operation
from memprm.memory.embedder import Embedder


@dataclass(frozen=True)
class TeacherConfig:
    #: ``heuristic`` (offline rule set) or ``llm`` (an OpenAI-compatible endpoint).
    kind: str = "heuristic"
    #: heuristic: merge into the nearest shown neighbour at or above this cosine with the note.
    merge_threshold: float = 0.6

    def __post_init__(self) -> None:
        if self.kind not in ("heuristic", "llm"):
            raise ValueError(f"teacher.kind must be 'heuristic' or 'llm', got {self.kind!r}")
        if not -1.0 <= self.merge_threshold <= 1.0:
            raise ValueError(f"teacher.merge_threshold must be in [-1, 1], got {self.merge_threshold}")


class HeuristicTeacher:
    """The offline teacher: a documented rule set per gate.

    It works over the notes the environment's :class:`~memprm.llm.notes.NoteWriter` (default: the offline rule
    writer) gives the turn (``Observation.notes``):

    1. *Skip what has no note.* The note writer drops small talk, questions, fillers and statements about
       third parties; a gate whose turn has no note for the gate's layer is a Noop.
    2. *One fact per gate.* The gate acts on the turn's first note for its layer (profile notes at the profile
       gate, event notes at the event gate).
    3. *Merge or write.* If the most similar neighbour shown at the gate has embedding cosine ≥
       ``merge_threshold`` with the note, merge the note into it (a new version); otherwise write the note as
       a new entry keyed by the note's key.

    The teacher never writes the turn itself: a copy of the turn duplicates its verbatim entry.
    """

    def __init__(self, embedder: Embedder, cfg: TeacherConfig | None = None):
        self.embedder, self.cfg = embedder, cfg or TeacherConfig()

    def __call__(self, obs: Observation) -> Action:
        if not obs.notes:
            return Action.noop()
        note = obs.notes[0]
        if obs.neighbours:
            vecs = self.embedder.embed([note.text, obs.neighbours[0].text])  # [2, dim]
            if float(vecs[0] @ vecs[1]) >= self.cfg.merge_threshold:
                return Action("merge", note.text, entry_id=obs.neighbours[0].entry_id)
        return Action("write", note.text, note.key)


class LLMTeacher:
    """The manager prompt at every gate; invalid or failed output → Noop, counted in ``invalid``.

    It asks an OpenAI-compatible model with the manager prompt and the strict JSON operation format
    (:mod:`memprm.env.ops_format`) and writes its own content.
    """

    def __init__(self, client):
        self.client = client
        self.invalid = 0

    def __call__(self, obs: Observation) -> Action:
        def validate(obj: dict) -> Action:
            action = validate_operation(obj, obs)
            if action is None:
                raise ValueError('expected {"op": "write"|"merge"|"noop", ...} valid for this gate')
            return action

        result = self.client.complete_json([{"role": "user", "content": gate_prompt(obs)}], validate)
        if isinstance(result, Action):
            return result
        self.invalid += 1
        return Action.noop()
