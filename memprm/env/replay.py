"""Replaying a window's recorded decisions, optionally with one operation taken back (made a Noop).

The action-level counterfactual of the paper's replay validation (§3, Appendix L): "had this operation not
been taken" is the window played again from the same start, every other recorded action kept, the dropped
gate a Noop. Two rules make "kept" well defined when the dropped operation was a Write:

- the dropped Write still uses up its entry id (:meth:`MemoryBank.skip_entry_id`), so every later entry keeps
  its recorded id: recorded Merges find their targets, and the reader sees the same entry ids (its prompt and
  the reader cache's key hold them) wherever the bank did not change;
- a recorded Merge into the entry the dropped Write would have started has no target: it is applied as a
  Noop and counted (``orphaned_merges``). Its content is lost with the Write, so the replay measures the
  whole chain the Write began, as the un-normalized chain credit assumes.

Dropping a Merge leaves its entry one version shorter. Every replayed gate is checked against the record (op
id, kind, entry; the dropped gate and orphans aside): a drifted replay raises, never measures something else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memprm.credit.tiers import TeacherDecision
from memprm.data.records import Dialogue
from memprm.env.gates import Action, Observation
from memprm.env.memory_env import MemoryEnv, WindowPlay
from memprm.memory.bank import MemoryBank


def recorded_action(d: TeacherDecision) -> Action:
    """The action that made recorded decision ``d``."""
    if d.kind == "write":
        return Action("write", d.content, d.key)
    if d.kind == "merge":
        return Action("merge", d.content, entry_id=d.target_entry_id)
    return Action.noop()


def check_gate(d: TeacherDecision, obs: Observation, where: str) -> None:
    """The record's gate ``d`` is the gate the replay reached (same turn and layer), or an error."""
    if (d.turn_id, d.layer) != (obs.turn.id, obs.layer):
        raise RuntimeError(f"{where}: the record has {d.turn_id}/{d.layer} there")


class NoopReplay:
    """A manager that replays ``recorded`` (one window's decisions, in gate order) on ``bank`` with gate
    ``drop`` made a Noop (``None``: nothing dropped, the window is reproduced exactly)."""

    def __init__(self, recorded: Sequence[TeacherDecision], drop: int | None, bank: MemoryBank):
        if drop is not None and not (0 <= drop < len(recorded) and recorded[drop].kind in ("write", "merge")):
            raise ValueError(
                f"replay: gate {drop} is not a Write or Merge of the {len(recorded)}-gate record"
            )
        self.recorded, self.drop, self.bank = recorded, drop, bank
        self.gate = 0
        self.orphans: list[int] = []  # gates of later Merges into the dropped Write's entry, made Noops

    def __call__(self, obs: Observation) -> Action:
        i, self.gate = self.gate, self.gate + 1
        where = f"replay of {obs.dialogue_id} window {obs.window}, gate {i} ({obs.turn.id}/{obs.layer})"
        if i >= len(self.recorded):
            raise RuntimeError(f"{where}: the record has {len(self.recorded)} gates")
        d = self.recorded[i]
        check_gate(d, obs, where)
        if i == self.drop:
            if d.kind == "write":
                self.bank.skip_entry_id()
            return Action.noop()
        if d.kind == "merge" and self.drop is not None:
            dropped = self.recorded[self.drop]
            if dropped.kind == "write" and d.target_entry_id == dropped.target_entry_id:
                self.orphans.append(i)
                return Action.noop()
        return recorded_action(d)


@dataclass(frozen=True)
class Replay:
    bank: MemoryBank  # the window's final bank in the replay
    play: WindowPlay
    orphaned_merges: int


def replay_window(
    env: MemoryEnv,
    dialogue: Dialogue,
    window: int,
    start: MemoryBank,
    recorded: Sequence[TeacherDecision],
    drop: int | None,
) -> Replay:
    """Play session ``window`` on a fork of ``start`` (the bank at the window's start; not touched),
    replaying ``recorded`` with gate ``drop`` made a Noop (module docstring)."""
    bank = start.fork()
    manager = NoopReplay(recorded, drop, bank)
    play = env.play_window(dialogue, window, bank, manager)
    where = f"replay of {dialogue.id} window {window}"
    if manager.gate != len(recorded):
        raise RuntimeError(f"{where}: {manager.gate} gates played, the record has {len(recorded)}")
    nooped = set(manager.orphans) | ({drop} if drop is not None else set())
    for i, (got, want) in enumerate(zip(play.decisions, recorded, strict=True)):
        expect = ("noop", None) if i in nooped else (want.kind, want.target_entry_id)
        if (got.op_id, got.kind, got.target_entry_id) != (want.op_id, *expect):
            raise RuntimeError(
                f"{where}, gate {i}: replayed {got.op_id} {got.kind} -> {got.target_entry_id}, the record has "
                f"{want.op_id} {want.kind} -> {want.target_entry_id}"
            )
    return Replay(bank, play, len(manager.orphans))
