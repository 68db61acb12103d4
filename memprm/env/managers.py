"""Fixed memory managers for analysis: what ``tools/policy_gap.py`` compares and the tests use as references.

Each is a :data:`~memprm.env.memory_env.Manager` (``Observation -> Action``):

- :func:`noop_manager` — Noop everywhere: the bank holds the verbatim layer only;
- :func:`write_all_manager` — writes every gateable turn word for word (copies of the verbatim layer);
- :class:`RandomManager` — a uniform draw from the gate's candidates (:mod:`memprm.env.candidates`): the action
  space of the scoring policy, untrained;
- :class:`OracleManager` — the data's fact annotations as notes (:class:`~memprm.llm.notes.OracleNoteWriter`),
  a profile note merged into the shown entry that holds the same speaker's same attribute, else written;
  analysis only: observations carry no annotations, so it is given the dialogues and reads each gate's turn
  there;
- :class:`NoisyManager` — another manager whose action is replaced, with probability ``epsilon``, by a uniform
  draw from the gate's candidates (the forks of a group differ the way sampled rollouts do). It has the
  ``act`` method of a gate policy, so :class:`~memprm.rollout.runner.GroupRunner` can roll it out.
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
    """The analysis tools' line-up by name: Noop-only, Write-all, random (seeds 0–2), the heuristic ``teacher``
    and, given ``oracle_dialogues`` (the dialogues it will play), the annotation oracle over them."""
    managers = {"Noop-only": noop_manager, "Write-all (raw turns)": write_all_manager}
    managers |= {f"random (seed {s})": RandomManager(s, merge_candidates) for s in range(3)}
    managers["heuristic teacher"] = teacher
    if oracle_dialogues is not None:
        managers["oracle (annotations)"] = OracleManager(oracle_dialogues)
    return managers


def as_gate_policy(manager):
    """A manager as something :class:`~memprm.rollout.runner.GroupRunner` can roll out (an ``act`` method
    returning the action and an empty sample); a gate policy or a :class:`NoisyManager` is returned as is."""
    return manager if hasattr(manager, "act") else _AsGatePolicy(manager)
