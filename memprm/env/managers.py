"""Fixed memory managers for analysis: what ``tools/policy_gap.py`` compares and the tests use as references.

Each is a :data:`~memprm.env.memory_env.Manager` (``Observation -> Action``):

- :func:`noop_manager` — Noop everywhere; :func:`write_all_manager` — every gateable turn written word for word;
- :class:`RandomManager` — a uniform draw from the gate's candidates (:mod:`memprm.env.candidates`);
- :class:`OracleManager` — the data's fact annotations as notes, a profile note merged into the shown entry
  holding the same speaker's same attribute, else written (analysis only: it is given the dialogues);
- :class:`GoldDecisionManager` — the annotations decide (Noop where the turn holds no annotated fact for the
  layer; where to merge), the note writer's notes are written: the best the scoring policy's action space
  does with the notes on offer (analysis only, as the oracle);
- :class:`NoisyManager` — another manager whose action is replaced, with probability ``epsilon``, by a uniform
  draw from the gate's candidates; it has a gate policy's ``act``, so a GroupRunner can roll it out.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from memprm.data.records import Dialogue
from memprm.env.candidates import gate_candidates
from memprm.env.gates import Action, Observation
from memprm.llm.notes import CachedNotes, OracleNoteWriter, notes_for


def noop_manager(obs: Observation) -> Action:
    return Action.noop()


def write_all_manager(obs: Observation) -> Action:
    return Action("write", obs.turn.render, "")


class RandomManager:
    def __init__(self, seed: int, merge_candidates: int = 3):
        self.rng, self.m = np.random.default_rng(seed), merge_candidates

    def __call__(self, obs: Observation) -> Action:
        cands = gate_candidates(obs, self.m)
        return cands[int(self.rng.integers(len(cands)))].action


class OracleManager:
    """The annotation oracle over ``dialogues``: the only manager that reads ``Turn.facts``, which it takes
    from the dialogue (by the observation's dialogue and turn ids), never from the observation."""

    def __init__(self, dialogues: Iterable[Dialogue]):
        self.notes = CachedNotes(OracleNoteWriter())
        self.turns = {(d.id, t.id): t for d in dialogues for t in d.turns()}

    def __call__(self, obs: Observation) -> Action:
        turn = self.turns.get((obs.dialogue_id, obs.turn.id))
        if turn is None:
            raise ValueError(
                f"oracle: turn {obs.dialogue_id}/{obs.turn.id} is not in the dialogues it was given"
            )
        notes = notes_for(self.notes, turn, obs.timestamp, obs.layer)
        if not notes:
            return Action.noop()
        note = notes[0]
        if note.layer == "profile":
            prefix = note.text.split(":")[0] + ":"  # "Ana's job:" — the same person's same attribute
            for n in obs.neighbours:
                if prefix in n.text:
                    return Action("merge", note.text, entry_id=n.entry_id)
        return Action("write", note.text, note.key)


class GoldDecisionManager:
    """Decisions from the fact annotations, content from the environment's note writer (module docstring).

    Two decisions, each taken from the annotations (``"gold"``) or by the heuristic teacher's rule:

    - ``store``: whether the gate acts. ``gold``: when the turn has an annotated fact for the gate's layer
      (:class:`OracleNoteWriter`'s notes); ``notes``: when the note writer gave the gate a note (the teacher).
      The content is ``obs.notes[0]`` or, without a note, the turn (``write_turn`` / ``merge_turn``).
    - ``merge``: where it goes. ``gold``: a profile fact into the first of the ``merge_candidates`` shown
      entries holding content this manager stored under the same speaker's same attribute in the same
      dialogue (it remembers contents by text, so it plays one bank per dialogue at a time: greedy
      evaluation, not forks); ``cosine``: into the first shown entry when its cosine with the content is at
      least ``merge_threshold`` (the teacher); ``key``: into the first of the ``merge_candidates`` shown entries
      whose key is the note's (non-empty) key — a rule over the notes' keys, no annotation. Anything else is
      written. With ``store="notes", merge="key"`` no annotation is read: ``dialogues`` may be empty.

    With ``store="notes", merge="cosine"`` it is the heuristic teacher (``tests/test_notes.py``)."""

    def __init__(
        self,
        dialogues: Iterable[Dialogue],
        merge_candidates: int = 3,
        *,
        store: str = "gold",
        merge: str = "gold",
        embedder=None,
        merge_threshold: float = 0.6,
    ):
        if store not in ("gold", "notes") or merge not in ("gold", "cosine", "key"):
            raise ValueError(
                f"gold decisions: store must be gold|notes, merge gold|cosine|key; got {store!r}, {merge!r}"
            )
        if merge == "cosine" and embedder is None:
            raise ValueError("gold decisions: merge='cosine' needs the embedder")
        self.gold = CachedNotes(OracleNoteWriter())
        self.turns = {(d.id, t.id): t for d in dialogues for t in d.turns()}
        self.m, self.store, self.merge = merge_candidates, store, merge
        self.embedder, self.threshold = embedder, merge_threshold
        self.stored: dict[tuple[str, str], list[str]] = {}  # (dialogue, "Ana's job") -> contents stored

    def __call__(self, obs: Observation) -> Action:
        gold = self._gold_notes(obs) if "gold" in (self.store, self.merge) else []
        if not (gold if self.store == "gold" else obs.notes):
            return Action.noop()
        note = obs.notes[0] if obs.notes else None
        content, key = (note.text, note.key) if note else (obs.turn.render, "")
        target = self._target(obs, content, key, gold[0] if gold else None)
        if target is not None:
            return Action("merge", content, entry_id=target.entry_id)
        return Action("write", content, key)

    def _gold_notes(self, obs: Observation) -> list:
        """The annotated facts of the gate's turn for its layer, as notes (the turn looked up in the dialogues)."""
        turn = self.turns.get((obs.dialogue_id, obs.turn.id))
        if turn is None:
            raise ValueError(f"gold decisions: turn {obs.dialogue_id}/{obs.turn.id} is not in its dialogues")
        return notes_for(self.gold, turn, obs.timestamp, obs.layer)

    def _target(self, obs: Observation, content: str, key: str, gold):
        if self.merge == "key":
            return next((n for n in obs.neighbours[: self.m] if key and n.key == key), None)
        if self.merge == "cosine":
            if not obs.neighbours:
                return None
            vecs = self.embedder.embed([content, obs.neighbours[0].text])  # [2, dim]
            return obs.neighbours[0] if float(vecs[0] @ vecs[1]) >= self.threshold else None
        if gold is None or gold.layer != "profile":
            return None
        stored = self.stored.setdefault((obs.dialogue_id, gold.text.split(":")[0]), [])
        target = next((n for n in obs.neighbours[: self.m] if any(c in n.text for c in stored)), None)
        stored.append(content)
        return target


class NoisyManager:
    def __init__(self, manager, epsilon: float, seed: int, merge_candidates: int = 3):
        self.manager, self.epsilon = manager, epsilon
        self.random = RandomManager(seed, merge_candidates)

    def __call__(self, obs: Observation) -> Action:
        if self.random.rng.random() < self.epsilon:
            return self.random(obs)
        return self.manager(obs)

    def act(self, obs: Observation, *, greedy: bool = False, generator=None):
        return _played(self(obs))


def _played(action: Action):
    from memprm.env.policy import GateSample

    return action, GateSample(prompt="")


class _AsGatePolicy:
    def __init__(self, manager):
        self.manager = manager

    def act(self, obs: Observation, *, greedy: bool = False, generator=None):
        return _played(self.manager(obs))


def fixed_managers(
    teacher, merge_candidates: int, oracle_dialogues: Iterable[Dialogue] | None = None
) -> dict:
    """The analysis tools' line-up by name: Noop-only, Write-all, random (seeds 0–2), the heuristic ``teacher``,
    the teacher's store rule with merges by note key (no annotation; the direction the 16th feature opens) and,
    given ``oracle_dialogues`` (the dialogues it will play), the annotation oracle and the gold-decision
    manager over them."""
    managers = {"Noop-only": noop_manager, "Write-all (raw turns)": write_all_manager}
    managers |= {f"random (seed {s})": RandomManager(s, merge_candidates) for s in range(3)}
    managers["heuristic teacher"] = teacher
    managers["teacher, merge by key"] = GoldDecisionManager((), merge_candidates, store="notes", merge="key")
    if oracle_dialogues is not None:
        oracle_dialogues = list(oracle_dialogues)
        managers["oracle (annotations)"] = OracleManager(oracle_dialogues)
        managers["gold decisions (real notes)"] = GoldDecisionManager(oracle_dialogues, merge_candidates)
    return managers


def as_gate_policy(manager):
    """A manager as something :class:`~memprm.rollout.runner.GroupRunner` can roll out (an ``act`` method
    returning the action and an empty sample); a gate policy or a :class:`NoisyManager` is returned as is."""
    return manager if hasattr(manager, "act") else _AsGatePolicy(manager)
