"""What a GRPO checkpoint needs beyond Lightning's defaults, so a run killed with ``kill -9`` resumes where
its last checkpoint left it (:mod:`memprm.stages.grpo_stage`).

- :class:`ResumeState` saves the global random generators (Python, numpy, torch CPU and CUDA): Lightning's
  checkpoint does not. They are restored at the first training batch after the resume, not when the
  checkpoint is loaded, because building the loader's iterator and pre-fetching the first batch draw from
  torch's generator in between (the uninterrupted run did neither at that point). It also keeps the
  checkpoint small: only the module's trainable parameters are saved (a frozen backbone is rebuilt from
  config), and loading checks that exactly those are present.
- :class:`StepCheckpoint` writes ``last.ckpt`` whenever the optimizer step count crosses a multiple of
  ``every`` (a batch can make several optimizer steps under manual optimization, so "is a multiple" could
  never fire).
- :class:`AtomicCheckpointIO` writes checkpoint files to a temporary name and renames them, so ``last.ckpt``
  is never a truncated file.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io import TorchCheckpointIO

from memprm.atomic import atomic_torch_save, atomic_write_text

log = logging.getLogger("memprm.stages")


def rng_state() -> dict[str, Any]:
    """The global generators' states, in types ``torch.load(weights_only=True)`` accepts."""
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class ResumeState(Callback):
    """Global RNG state in the checkpoint, restored at the first batch after a resume; trainable-only
    module weights (module doc). With ``starts_path``, the optimizer step of every (re)start is appended to
    that JSON list (``[0, 4]``: started at 0, killed, resumed at step 4)."""

    def __init__(self, starts_path: Path | None = None) -> None:
        self.starts_path = None if starts_path is None else Path(starts_path)
        self._pending: dict[str, Any] | None = None
        #: the optimizer step the run (re)started from: 0, or the checkpoint's step after a resume.
        self.start_step: int | None = None

    def state_dict(self) -> dict[str, Any]:
        return {"rng": rng_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "rng" not in state_dict:
            raise ValueError("ResumeState checkpoint state: field 'rng' is missing")
        self._pending = state_dict["rng"]

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.start_step = int(trainer.global_step)
        if self.start_step:
            log.warning("GRPO: resumed at optimizer step %d", self.start_step)
        if self.starts_path is not None and trainer.is_global_zero:
            starts = json.loads(self.starts_path.read_text()) if self.starts_path.is_file() else []
            atomic_write_text(self.starts_path, json.dumps([*starts, self.start_step]) + "\n")

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self._pending is not None:
            set_rng_state(self._pending)
            self._pending = None

    def on_save_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        keep = _trainable_keys(pl_module)
        checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in keep}
        checkpoint[STEP_LOG_KEY] = _step_log(trainer, checkpoint)

    def on_load_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        saved, keep = set(checkpoint["state_dict"]), _trainable_keys(pl_module)
        if saved != keep:
            extra, missing = sorted(saved - keep)[:3], sorted(keep - saved)[:3]
            raise ValueError(
                f"GRPO checkpoint: its parameters are not this policy's trainable ones (unexpected {extra}, "
                f"missing {missing}); was it written by another config?"
            )
        pl_module.strict_loading = False  # the frozen weights are the ones built from config


#: the checkpoint key of the checkpointed batch's own step metrics (see :func:`_step_log`).
STEP_LOG_KEY = "memprm_step_log"


def _step_log(trainer: Trainer, checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The metrics Lightning writes for the batch being checkpointed. It writes them after the batch's
    ``on_train_batch_end``, where the checkpoint is saved, so a kill in between loses them and the resumed run,
    which starts after that batch, would never write them: the resume writes them (step and values as
    Lightning would have: its logging step, ``log_every_n_steps``, the ``epoch`` it adds)."""
    step = int(checkpoint["loops"]["fit_loop"]["epoch_loop.state_dict"].get("_batches_that_stepped", 0))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    metrics.setdefault("epoch", float(trainer.current_epoch))
    due = (step + 1) % max(int(trainer.log_every_n_steps), 1) == 0 or bool(trainer.should_stop)
    return {"step": step, "due": due and trainer.log_every_n_steps > 0, "metrics": metrics}


def _trainable_keys(module: torch.nn.Module) -> set[str]:
    return {name for name, p in module.named_parameters() if p.requires_grad}


class StepCheckpoint(ModelCheckpoint):
    """``last.ckpt`` in ``dirpath`` each time the optimizer step count crosses a multiple of ``every``."""

    def __init__(self, dirpath: str | Path, every: int):
        if every < 1:
            raise ValueError(f"StepCheckpoint: every must be >= 1, got {every}")
        super().__init__(
            dirpath=str(dirpath),
            save_top_k=0,
            save_last=True,
            enable_version_counter=False,
            every_n_train_steps=0,
            save_on_train_epoch_end=False,
        )
        self.every = every
        self._step_at_batch_start = 0

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._step_at_batch_start = int(trainer.global_step)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        crossed = trainer.global_step // self.every > self._step_at_batch_start // self.every
        if crossed and not self._should_skip_saving_checkpoint(trainer):
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    @property
    def last_path(self) -> Path:
        return Path(self.dirpath) / f"{self.CHECKPOINT_NAME_LAST}{self.FILE_EXTENSION}"


class AtomicCheckpointIO(TorchCheckpointIO):
    """Torch checkpoint files written whole or not at all (temporary file, then ``os.replace``)."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None
    ) -> None:
        if storage_options is not None:
            raise TypeError(f"AtomicCheckpointIO: storage_options are not supported, got {storage_options!r}")
        get_filesystem(path).makedirs(str(Path(path).parent), exist_ok=True)
        atomic_torch_save(checkpoint, Path(path))
