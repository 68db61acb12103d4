"""DevCheckpointSelection: keep the policy that scores best on the dev *selection* half; load it at the end.

Every ``every_n_steps`` optimizer steps the policy is evaluated greedily on the dev selection half (never on
test dialogues); the best weights are kept, written to ``best_policy.pt`` and copied back into the policy when
training ends (the final step's weights first written to ``last_policy.pt``), so the test evaluation that
follows uses them and can test where training ended too. Details on :class:`DevCheckpointSelection`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn

from memprm.atomic import atomic_torch_save, atomic_write_text
from memprm.callbacks.callback_config import DevSelectionConfig
from memprm.data.records import Dialogue
from memprm.models.trainable import load_trainable_state, trainable_state


class DevCheckpointSelection(Callback):
    """Dev-selection-accuracy checkpoint selection.

    Every ``every_n_steps`` optimizer steps (and, by default, before the first step and after the last
    one) the policy is evaluated with the injected ``evaluate(policy) -> accuracy`` (the fit wiring passes a
    closure running :func:`memprm.env.evaluate.evaluate_manager` greedily on the dev selection half; no
    training happens there). The best weights by accuracy (strictly better replaces, so a tie keeps the
    earlier step) are kept as a CPU copy of the policy's trainable parameters and written to
    ``dirpath/best_policy.pt`` (the format of :func:`memprm.models.trainable.save_trainable`, loadable with
    ``load_trainable``), with ``dirpath/dev_selection.json`` holding the history (step, accuracy, and rollouts
    played on all ranks so far, read from the datamodule's ``rollouts_played``). ``on_train_end`` writes the
    final step's weights to ``dirpath/last_policy.pt`` (same format) and then copies the best weights into the
    policy, so what follows (the test evaluation) uses them, and can also test where training ended.

    Test questions never select a checkpoint: the constructor takes the dialogues the closure evaluates on
    and refuses any of them whose id is a test dialogue's. Under manual optimization a batch may take several
    optimizer steps; an evaluation is due when the step count crosses a multiple of ``every_n_steps`` (once,
    even if it crosses several).

    Logged (directly to the trainer's loggers, at the current step, so no evaluation is lost between logging
    steps): ``dev/accuracy`` at each evaluation; ``dev/best_accuracy`` and ``dev/best_step`` at the end. The
    state (best score, step, weights, history) is saved in checkpoints. Under DDP every rank evaluates (the
    greedy policy and weights are identical), so every rank loads the same best weights; files are written
    by rank 0.
    """

    def __init__(
        self,
        evaluate: Callable[[nn.Module], float],
        cfg: DevSelectionConfig,
        dirpath: str | Path,
        dialogues: Sequence[Dialogue],
        test_dialogue_ids: Collection[str],
    ):
        if not dialogues:
            raise ValueError(
                "DevCheckpointSelection: no dialogues to select on (the dev selection half is empty)"
            )
        leaked = sorted({d.id for d in dialogues} & set(test_dialogue_ids))
        if leaked:
            raise ValueError(
                f"DevCheckpointSelection: dialogue(s) {leaked} are test dialogues; test questions must never "
                "select a checkpoint"
            )
        self.evaluate = evaluate
        self.cfg = cfg
        self.dirpath = Path(dirpath)
        self.dialogue_ids = tuple(d.id for d in dialogues)
        self.best_score: float | None = None
        self.best_step: int | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        #: (step, accuracy) of every evaluation, in order.
        self.history: list[tuple[int, float]] = []
        #: rollouts produced on all ranks by each evaluation (the loader fetches a batch ahead; None without a
        #: rollout datamodule): the x
        #: axis of the ladder, since skipped zero-variance groups take rollouts but no optimizer step.
        self.rollouts: list[int | None] = []
        self._intervals_done = 0

    @property
    def best_path(self) -> Path:
        return self.dirpath / "best_policy.pt"

    @property
    def last_path(self) -> Path:
        """Where training ended: the policy's weights at ``on_train_end``, before the best are loaded."""
        return self.dirpath / "last_policy.pt"

    @staticmethod
    def _policy(pl_module: LightningModule) -> nn.Module:
        policy = getattr(pl_module, "policy", None)
        if not isinstance(policy, nn.Module):
            raise ValueError(f"DevCheckpointSelection: {type(pl_module).__name__} has no nn.Module 'policy'")
        return policy

    def _run(self, trainer: Trainer, pl_module: LightningModule) -> float:
        policy, step = self._policy(pl_module), int(trainer.global_step)
        was_training = policy.training
        policy.eval()
        try:
            with torch.no_grad():
                acc = self.evaluate(policy)
        finally:
            policy.train(was_training)
        if (
            isinstance(acc, bool)
            or not isinstance(acc, (int, float))
            or not (math.isfinite(acc) and 0 <= acc <= 1)
        ):
            raise ValueError(
                f"DevCheckpointSelection: evaluate returned {acc!r} at step {step}, not an accuracy"
            )
        acc = float(acc)
        self.history.append((step, acc))
        played = getattr(getattr(trainer, "datamodule", None), "rollouts_played", None)
        self.rollouts.append(None if played is None else int(played) * getattr(trainer, "world_size", 1))
        if self.best_score is None or acc > self.best_score:
            state = trainable_state(policy)
            if not state:
                raise ValueError("DevCheckpointSelection: the policy has no trainable parameters to keep")
            self.best_score, self.best_step, self.best_state = acc, step, state
            if trainer.is_global_zero:
                atomic_torch_save(state, self.best_path)
        self._write_history(trainer)
        self._log(trainer, {"dev/accuracy": acc}, step)
        return acc

    def _write_history(self, trainer: Trainer) -> None:
        if not trainer.is_global_zero:
            return
        self.dirpath.mkdir(parents=True, exist_ok=True)
        doc = {
            "best_step": self.best_step,
            "best_accuracy": self.best_score,
            "dialogues": list(self.dialogue_ids),
            "history": [
                {"step": s, "accuracy": a, "rollouts": r}
                for (s, a), r in zip(self.history, self.rollouts, strict=True)
            ],
        }
        atomic_write_text(self.dirpath / "dev_selection.json", json.dumps(doc, indent=2) + "\n")

    @staticmethod
    def _log(trainer: Trainer, metrics: dict[str, float], step: int) -> None:
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._policy(pl_module)
        if self.cfg.at_start and not self.history:
            self._run(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        due = int(trainer.global_step) // self.cfg.every_n_steps
        if due > self._intervals_done:
            self._intervals_done = due
            self._run(trainer, pl_module)

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        step = int(trainer.global_step)
        if self.cfg.at_end and (not self.history or self.history[-1][0] != step):
            self._run(trainer, pl_module)
        policy = self._policy(pl_module)
        if trainer.is_global_zero and (last := trainable_state(policy)):
            atomic_torch_save(last, self.last_path)
        if self.best_state is None:
            return
        load_trainable_state(policy, self.best_state)
        self._log(
            trainer, {"dev/best_accuracy": self.best_score, "dev/best_step": float(self.best_step)}, step
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "best_score": self.best_score,
            "best_step": self.best_step,
            "best_state": self.best_state,
            "history": [[s, a] for s, a in self.history],
            "rollouts": list(self.rollouts),
            "intervals_done": self._intervals_done,
            "dialogues": list(self.dialogue_ids),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for key in (
            "best_score",
            "best_step",
            "best_state",
            "history",
            "rollouts",
            "intervals_done",
            "dialogues",
        ):
            if key not in state_dict:
                raise ValueError(f"DevCheckpointSelection checkpoint state: field {key!r} is missing")
        if tuple(state_dict["dialogues"]) != self.dialogue_ids:
            raise ValueError(
                f"DevCheckpointSelection checkpoint state: field 'dialogues' is {state_dict['dialogues']}, "
                f"this run selects on {list(self.dialogue_ids)}: scores on other dialogues are not comparable"
            )
        best = state_dict["best_score"]
        self.best_score = None if best is None else float(best)
        self.best_step = None if state_dict["best_step"] is None else int(state_dict["best_step"])
        self.best_state = state_dict["best_state"]
        self.history = [(int(s), float(a)) for s, a in state_dict["history"]]
        self.rollouts = [None if r is None else int(r) for r in state_dict["rollouts"]]
        self._intervals_done = int(state_dict["intervals_done"])
