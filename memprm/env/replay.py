"""Replaying a window's recorded decisions, optionally with one operation taken back (made a Noop).

The action-level counterfactual of the paper's replay validation (§3, Appendix L): "had this operation not
been taken" is the window played again from the same starting bank, every other recorded action kept, the
dropped gate a Noop. Two rules make "kept" well defined when the dropped operation was a Write:

- entry ids are allocated in order, so every entry the window creates after the dropped Write gets another
  id in the replay; a recorded Merge into such an entry is sent to the entry the replay created at the same
  gate (:class:`NoopReplay` maps recorded ids to replay ids as the window goes);
- a recorded Merge into the entry the dropped Write would have started has no target: it is applied as a
  Noop and counted (``orphaned_merges``). Its content is lost with the Write, so the replay measures the
  whole chain the Write began, as the un-normalized chain credit assumes.

Dropping a Merge leaves its entry one version shorter; later Merges into it still apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memprm.credit.tiers import TeacherDecision
from memprm.data.records import Dialogue
from memprm.env.gates import Action, Observation
from memprm.env.memory_env import MemoryEnv, WindowPlay
from memprm.memory.bank import MemoryBank


def recorded_action(d: TeacherDecision, entry_id: str | None = None) -> Action:
    """The action that made recorded decision ``d``; a Merge goes to ``entry_id`` (default: its recorded
    target)."""
    if d.kind == "write":
        return Action("write", d.content, d.key)
    if d.kind == "merge":
        return Action("merge", d.content, entry_id=entry_id or d.target_entry_id)
    return Action.noop()


def check_gate(d: TeacherDecision, obs: Observation, where: str) -> None:
    """The record's gate ``d`` is the gate the replay reached (same turn and layer), or an error."""
    if (d.turn_id, d.layer) != (obs.turn.id, obs.layer):
        raise RuntimeError(f"{where}: the record has {d.turn_id}/{d.layer} there")


class NoopReplay:
    """A manager that replays ``recorded`` (one window's decisions, in gate order) on ``bank`` with gate
    ``drop`` made a Noop (``None``: nothing dropped, the window is reproduced exactly). Module docstring: the
    id map and orphaned Merges."""

    def __init__(self, recorded: Sequence[TeacherDecision], drop: int | None, bank: MemoryBank):
        self.recorded, self.drop, self.bank = recorded, drop, bank
        self.gate, self.orphaned_merges = 0, 0
        self._ops = len(bank.ops)  # the bank's op log length at the previous gate
        self._ids: dict[str, str] = {}  # recorded entry id -> replay entry id, for entries this window made
        self._dropped_entry: str | None = None

    def __call__(self, obs: Observation) -> Action:
        self._map_previous_gate()
        i, self.gate = self.gate, self.gate + 1
        where = f"replay of {obs.dialogue_id} window {obs.window}, gate {i} ({obs.turn.id}/{obs.layer})"
        if i >= len(self.recorded):
            raise RuntimeError(f"{where}: the record has {len(self.recorded)} gates")
        d = self.recorded[i]
        check_gate(d, obs, where)
        if i == self.drop:
            if d.kind == "write":
                self._dropped_entry = d.target_entry_id
            return Action.noop()
        if d.kind == "merge":
            if d.target_entry_id == self._dropped_entry:
                self.orphaned_merges += 1
                return Action.noop()
            return recorded_action(d, self._ids.get(d.target_entry_id, d.target_entry_id))
        return recorded_action(d)

    def _map_previous_gate(self) -> None:
        """After gate i − 1 was applied: if it replayed a recorded Write, map its recorded entry id to the
        entry the replay created (the first managed-layer op since the previous gate; verbatim writes of the
        turn come after it)."""
        ops = self.bank.ops
        new, self._ops = ops[self._ops :], len(ops)
        if self.gate == 0 or self.gate - 1 == self.drop:
            return
        d = self.recorded[self.gate - 1]
        made = next((op for op in new if op.layer == d.layer), None)
        if d.kind == "write" and made is not None and made.kind == "write" and d.target_entry_id:
            self._ids[d.target_entry_id] = made.entry_id


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
    replaying ``recorded`` with gate ``drop`` made a Noop."""
    bank = start.fork()
    manager = NoopReplay(recorded, drop, bank)
    play = env.play_window(dialogue, window, bank, manager)
    if manager.gate != len(recorded):
        raise RuntimeError(
            f"replay of {dialogue.id} window {window}: {manager.gate} gates played, the record has {len(recorded)}"
        )
    return Replay(bank, play, manager.orphaned_merges)
