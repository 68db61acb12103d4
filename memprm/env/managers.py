"""Fixed memory managers for analysis: what ``tools/policy_gap.py`` compares and the tests use as references.

Each is a :data:`~memprm.env.memory_env.Manager` (``Observation -> Action``):

- :func:`noop_manager` — Noop everywhere: the bank holds the verbatim layer only;
- :func:`write_all_manager` — writes every gateable turn word for word (copies of the verbatim layer);
- :class:`RandomManager` — a uniform draw from the gate's candidates (:mod:`memprm.env.candidates`): the action
  space of the scoring policy, untrained;
- :class:`OracleManager` — the data's fact annotations as notes (:class:`~memprm.llm.notes.OracleNoteWriter`),
  a profile note merged into the shown entry that holds the same speaker's same attribute, else written;
  analysis only (it reads annotations no manager has);
- :class:`NoisyManager` — another manager whose action is replaced, with probability ``epsilon``, by a uniform
  draw from the gate's candidates (the forks of a group differ the way sampled rollouts do). It has the
  ``act`` method of a gate policy, so :class:`~memprm.rollout.runner.GroupRunner` can roll it out.
"""

from __future__ import annotations

import numpy as np

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
    def __init__(self):
        self.notes = CachedNotes(OracleNoteWriter())

    def __call__(self, obs: Observation) -> Action:
        notes = notes_for(self.notes, obs.turn, obs.timestamp, obs.layer)
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


def fixed_managers(teacher, merge_candidates: int, oracle: bool = True) -> dict:
    """The analysis tools' line-up by name: Noop-only, Write-all, random (seeds 0–2), the heuristic ``teacher``
    and, with ``oracle``, the annotation oracle."""
    managers = {"Noop-only": noop_manager, "Write-all (raw turns)": write_all_manager}
    managers |= {f"random (seed {s})": RandomManager(s, merge_candidates) for s in range(3)}
    managers["heuristic teacher"] = teacher
    if oracle:
        managers["oracle (annotations)"] = OracleManager()
    return managers


def as_gate_policy(manager):
    """A manager as something :class:`~memprm.rollout.runner.GroupRunner` can roll out (an ``act`` method
    returning the action and an empty sample); a gate policy or a :class:`NoisyManager` is returned as is."""
    return manager if hasattr(manager, "act") else _AsGatePolicy(manager)
