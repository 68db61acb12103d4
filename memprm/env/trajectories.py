"""Teacher trajectories: a manager walks whole dialogues; every window is examined and audited.

On-disk format (``FORMAT``, version ``VERSION``), one folder per run::

    manifest.json        {"format": "memprm.trajectories", "version": 1, "dialogues": [ids], "meta": {...}}
    <n>.json             one dialogue: {"dialogue_id", "windows": [WindowRecord...], "final_bank": bank}

A ``WindowRecord`` holds the window's gate decisions (decision-time context), steps, critic inputs, the
audit (records, chains, failed probe anchors, per-question correctness, counts), the exam accuracy, the probe
gate rates and the quiz size. ``load_trajectories`` rebuilds everything without recomputation and rejects
files of another format or version with a clear error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memprm.credit.tiers import Neighbour, TeacherDecision
from memprm.credit.types import Step
from memprm.data.records import Dialogue
from memprm.env.audit import AuditResult
from memprm.env.exam import ReaderCache
from memprm.env.memory_env import Manager, MemoryEnv, advance_reference
from memprm.llm.failures import FailureGuard
from memprm.logs import progress
from memprm.memory.bank import MemoryBank

FORMAT, VERSION = "memprm.trajectories", 1


@dataclass(frozen=True)
class WindowRecord:
    window: int
    decisions: tuple[TeacherDecision, ...]
    steps: tuple[Step, ...]
    critic_inputs: tuple[str, ...]
    audit: AuditResult
    accuracy: float
    quiz_size: int
    gate_rates: dict[str, float]
    invalid_actions: int


@dataclass(frozen=True)
class DialogueTrajectory:
    dialogue_id: str
    windows: tuple[WindowRecord, ...]
    final_bank: MemoryBank

    @property
    def accuracy(self) -> float:
        """Mean window accuracy over windows with a non-empty quiz."""
        accs = [w.accuracy for w in self.windows if w.quiz_size]
        return sum(accs) / len(accs) if accs else 0.0


def run_trajectory(
    env: MemoryEnv, dialogue: Dialogue, manager: Manager, cache: ReaderCache, guard: FailureGuard | None = None
) -> DialogueTrajectory:
    """``manager`` manages ``dialogue`` from an empty bank, window by window (one rollout, no forking). With a
    ``guard``, each window's LLM failure share is checked after its exam and audit (the run stops there)."""
    bank, reference, windows = MemoryBank(), MemoryBank(), []
    for session in dialogue.sessions:
        play = env.play_window(dialogue, session.index, bank, manager)
        advance_reference(reference, dialogue, session.index)
        prepared = env.prepare_quiz(dialogue, session.index, reference, cache)
        exam, audit = env.examine(bank, prepared.quiz, cache)
        windows.append(
            WindowRecord(
                window=session.index,
                decisions=play.decisions,
                steps=play.steps,
                critic_inputs=play.critic_inputs,
                audit=audit,
                accuracy=exam.accuracy,
                quiz_size=len(prepared.quiz),
                gate_rates=prepared.gates.rates(),
                invalid_actions=play.invalid_actions,
            )
        )
        if guard is not None:
            guard.check(f"dialogue {dialogue.id}, window {session.index}")
    return DialogueTrajectory(dialogue.id, tuple(windows), bank)


def run_trajectories(
    env: MemoryEnv, dialogues: Sequence[Dialogue], manager: Manager, cache: ReaderCache, desc: str = "teacher"
) -> list[DialogueTrajectory]:
    """:func:`run_trajectory` of every dialogue; stops (:class:`~memprm.llm.failures.LLMFailureRateError`) after a
    window whose LLM failure share exceeds ``llm.max_failure_share``."""
    guard = FailureGuard()
    with progress(dialogues, desc=desc, unit="dialogue") as bar:  # closed before an error propagates
        return [run_trajectory(env, d, manager, cache, guard) for d in bar]


# --------------------------------------------------------------------------------------------- disk
def save_trajectories(folder: str | Path, trajs: Iterable[DialogueTrajectory], meta: dict[str, Any]) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for i, t in enumerate(trajs):
        ids.append(t.dialogue_id)
        body = {
            "dialogue_id": t.dialogue_id,
            "windows": [_window_to_dict(w) for w in t.windows],
            "final_bank": t.final_bank.to_dict(),
        }
        (folder / f"{i:04d}.json").write_text(json.dumps(body, ensure_ascii=False))
    manifest = {"format": FORMAT, "version": VERSION, "dialogues": ids, "meta": meta}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    return folder


def load_trajectories(folder: str | Path) -> tuple[list[DialogueTrajectory], dict[str, Any]]:
    folder = Path(folder)
    mpath = folder / "manifest.json"
    if not mpath.is_file():
        raise FileNotFoundError(f"{mpath} does not exist: not a trajectory folder")
    manifest = json.loads(mpath.read_text())
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(
            f"{mpath}: format {manifest.get('format')!r} version {manifest.get('version')!r}, "
            f"expected {FORMAT!r} version {VERSION}"
        )
    trajs = []
    for i, did in enumerate(manifest["dialogues"]):
        path = folder / f"{i:04d}.json"
        body = json.loads(path.read_text())
        if body.get("dialogue_id") != did:
            raise ValueError(f"{path}: dialogue_id {body.get('dialogue_id')!r}, manifest says {did!r}")
        try:
            windows = tuple(_window_from_dict(w) for w in body["windows"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: malformed window record: {exc!r}") from exc
        trajs.append(DialogueTrajectory(did, windows, MemoryBank.from_dict(body["final_bank"], str(path))))
    return trajs, manifest.get("meta", {})


def _window_to_dict(w: WindowRecord) -> dict[str, Any]:
    return {
        "window": w.window,
        "decisions": [asdict(d) for d in w.decisions],
        "steps": [asdict(s) for s in w.steps],
        "critic_inputs": list(w.critic_inputs),
        "audit": w.audit.to_dict(),
        "accuracy": w.accuracy,
        "quiz_size": w.quiz_size,
        "gate_rates": w.gate_rates,
        "invalid_actions": w.invalid_actions,
    }


def _window_from_dict(d: dict[str, Any]) -> WindowRecord:
    decisions = []
    for x in d["decisions"]:
        x = dict(x)
        x["context_turns"] = tuple(x["context_turns"])
        x["neighbours"] = tuple(Neighbour(**n) for n in x["neighbours"])
        decisions.append(TeacherDecision(**x))
    return WindowRecord(
        window=int(d["window"]),
        decisions=tuple(decisions),
        steps=tuple(Step(**s) for s in d["steps"]),
        critic_inputs=tuple(d["critic_inputs"]),
        audit=AuditResult.from_dict(d["audit"]),
        accuracy=float(d["accuracy"]),
        quiz_size=int(d["quiz_size"]),
        gate_rates=dict(d["gate_rates"]),
        invalid_actions=int(d["invalid_actions"]),
    )
