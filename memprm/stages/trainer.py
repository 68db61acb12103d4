"""Lightning Trainer settings shared by the training stages, and the builder that applies them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TrainerConfig:
    #: ``cpu``, ``gpu``, ``auto`` …, as Lightning's ``accelerator``.
    accelerator: str = "cpu"
    #: devices per node (an int, or ``auto``).
    devices: int | str = 1
    #: ``auto``, ``ddp``, ``ddp_spawn``, ``fsdp`` …, as Lightning's ``strategy``.
    strategy: str = "auto"
    #: ``32-true``, ``bf16-mixed``, ``16-mixed`` …
    precision: str = "32-true"
    #: log metrics every this many training steps (1: every GRPO step is a point of the curve).
    log_every_n_steps: int = 1
    #: show tqdm progress bars.
    progress_bar: bool = True

    def __post_init__(self) -> None:
        if self.log_every_n_steps < 1:
            raise ValueError("trainer.log_every_n_steps must be >= 1")


def build_trainer(cfg: TrainerConfig, run_dir: Path, name: str, callbacks=(), **overrides):
    """A Trainer logging to TensorBoard under ``run_dir/name`` with checkpoints kept by the stage itself."""
    from lightning import Trainer
    from lightning.pytorch.loggers import TensorBoardLogger

    if (
        "spawn" in cfg.strategy
    ):  # spawned ranks get tensors by shared memory; named files work in sandboxes too
        import torch.multiprocessing

        torch.multiprocessing.set_sharing_strategy("file_system")

    kwargs = dict(
        accelerator=cfg.accelerator,
        devices=cfg.devices,
        strategy=cfg.strategy,
        precision=cfg.precision,
        log_every_n_steps=cfg.log_every_n_steps,
        enable_progress_bar=cfg.progress_bar,
        enable_checkpointing=False,
        enable_model_summary=False,
        logger=TensorBoardLogger(str(run_dir), name=name, version=""),
        callbacks=list(callbacks),
        num_sanity_val_steps=0,
    )
    kwargs.update(overrides)
    return Trainer(**kwargs)
