"""Gates, observations and actions: what a memory manager sees and decides at each gate.

A session window is one session of the dialogue (≈22 turns in LoCoMo and the synthetic default). Each
*gateable* turn — one with at least ``gate_min_words`` words, so bare greetings and reactions open no gate —
opens one gate per managed layer (event, profile). At a gate the manager sees the turn, the ``context_turns``
turns before it, the session date, and the ``neighbours`` entries of the target layer retrieved for the turn
(each rendered as its whole chain), and the notes the environment's note writer distills from the turn for
that layer (:mod:`memprm.llm.notes`); it answers with one :class:`Action`. The verbatim layer is written
automatically after the gates of a turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from memprm.credit.tiers import Neighbour
from memprm.data.records import Turn
from memprm.llm.notes import Note
from memprm.memory.bank import MANAGED_LAYERS, BankError, MemoryBank

_WORDS = re.compile(r"[A-Za-z0-9']+")


@dataclass(frozen=True)
class EnvConfig:
    #: a turn opens gates when it has at least this many words.
    gate_min_words: int = 4
    #: preceding turns shown with each gate.
    context_turns: int = 3
    #: entries of the target layer retrieved for the turn and shown at each gate (merge candidates).
    neighbours: int = 3
    #: the managed layers, each with a gate per gateable turn.
    layers: tuple[str, ...] = MANAGED_LAYERS
    #: quiz weight of items anchored in the dialogue's final session.
    final_session_weight: float = 2.0

    def __post_init__(self) -> None:
        if self.gate_min_words < 0 or self.context_turns < 0 or self.neighbours < 0:
            raise ValueError("env.gate_min_words, env.context_turns and env.neighbours must be >= 0")
        bad = set(self.layers) - set(MANAGED_LAYERS)
        if bad or not self.layers:
            raise ValueError(f"env.layers must be a non-empty subset of {MANAGED_LAYERS}, got {self.layers}")
        if self.final_session_weight <= 0:
            raise ValueError("env.final_session_weight must be > 0")


def is_gateable(turn: Turn, min_words: int) -> bool:
    return len(_WORDS.findall(turn.text)) >= min_words


@dataclass(frozen=True)
class Observation:
    """What a manager sees at one gate. It carries no annotation: ``turn`` is the dialogue's turn with its
    ``facts`` (the data's fact annotations) emptied, whoever builds the observation, so no manager or scorer
    can read them; an analysis manager that needs them (the oracle) looks the turn up in the dialogue."""

    dialogue_id: str
    window: int  # session index (1-based)
    turn: Turn  # without ``facts`` (see above)
    timestamp: str | None  # ISO date of the session
    layer: str
    context: tuple[str, ...]  # rendered preceding turns, oldest first
    neighbours: tuple[Neighbour, ...]  # entries of ``layer`` retrieved for the turn, best first
    #: the note writer's notes of the turn for ``layer`` (the content on offer to the scoring policy and the
    #: heuristic teacher; a generative manager writes its own).
    notes: tuple[Note, ...] = ()

    def __post_init__(self) -> None:
        if self.turn.facts:
            object.__setattr__(self, "turn", replace(self.turn, facts=()))


@dataclass(frozen=True)
class Action:
    kind: Literal["write", "merge", "noop"]
    content: str | None = None
    key: str = ""
    entry_id: str | None = None  # the Merge target

    @staticmethod
    def noop() -> Action:
        return Action("noop")


def apply_action(bank: MemoryBank, obs: Observation, action: Action):
    """Apply ``action`` at gate ``obs``; returns the bank's :class:`OpRecord`. Invalid → :class:`BankError`."""
    tid = obs.turn.id
    if action.kind == "noop":
        return bank.noop(obs.layer, turn_id=tid)
    if action.kind == "write":
        return bank.write(obs.layer, action.content or "", action.key, timestamp=obs.timestamp, turn_id=tid)
    if action.kind == "merge":
        if action.entry_id is None or action.entry_id not in bank:
            raise BankError(f"merge at {obs.dialogue_id}/{tid}: unknown target entry {action.entry_id!r}")
        if bank.entry(action.entry_id).layer != obs.layer:
            raise BankError(
                f"merge at {obs.dialogue_id}/{tid}: entry {action.entry_id} is not in layer {obs.layer!r}"
            )
        return bank.merge(action.entry_id, action.content or "", timestamp=obs.timestamp, turn_id=tid)
    raise BankError(f"unknown action kind {action.kind!r}")
