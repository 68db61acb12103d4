"""One TensorBoard event stream across a ``kill -9`` and the resume that follows.

A killed run may have written events after its last checkpoint (the batch after it, the dev evaluation); the
resumed run writes them again. :class:`ResumableTensorBoardLogger` therefore records, after every write
(flushed), the size of each event file in its folder, keyed by Lightning's count of batches fetched for
training (``batch_progress.total.ready``: a checkpoint saved at the end of a batch, and everything logged for
that batch, share it). On resume, :func:`trim_events` cuts every event file back to its size under the
checkpoint's count and deletes event files begun later, so every (tag, step) is in the folder once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_only

from memprm.atomic import atomic_write_text

EVENTS_GLOB = "events.out.tfevents.*"


def event_sizes(folder: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in sorted(Path(folder).glob(EVENTS_GLOB))}


def read_records(path: Path) -> dict[int, dict[str, int]]:
    if not Path(path).is_file():
        return {}
    return {int(k): v for k, v in json.loads(Path(path).read_text()).items()}


def trim_events(folder: Path, records: dict[int, dict[str, int]], ready: int) -> dict[int, dict[str, int]]:
    """Cut ``folder``'s event files back to the newest record at or before batch count ``ready`` (files not
    in it are deleted); returns the records that remain valid."""
    kept = {n: sizes for n, sizes in records.items() if n <= ready}
    cut = kept[max(kept)] if kept else {}
    for f in sorted(Path(folder).glob(EVENTS_GLOB)):
        size = cut.get(f.name)
        if size is None:
            f.unlink()
        elif f.stat().st_size > size:
            with f.open("r+b") as fh:
                fh.truncate(size)
    return kept


class ResumableTensorBoardLogger(TensorBoardLogger):
    """A TensorBoardLogger that records its event file sizes after each write (module doc). ``progress``
    returns the batch count the sizes are keyed by; set it once the Trainer exists."""

    def __init__(self, save_dir: str, name: str, records_path: Path, **kwargs: Any):
        super().__init__(save_dir, name=name, version="", **kwargs)
        self.records_path = Path(records_path)
        self.records = read_records(self.records_path)
        self.progress: Callable[[], int] | None = None

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        super().log_metrics(metrics, step)
        self.record()

    def record(self) -> None:
        if self.progress is None:
            return
        self.experiment.flush()
        self.records[int(self.progress())] = event_sizes(Path(self.log_dir))
        atomic_write_text(self.records_path, json.dumps({str(k): v for k, v in sorted(self.records.items())}))

    def resume_at(self, ready: int, step_log: dict[str, Any] | None = None) -> None:
        """Before a resumed run writes: cut the folder back to what was written up to batch count ``ready``;
        then write ``step_log`` (the checkpointed batch's metrics, :func:`memprm.callbacks.resume_state._step_log`)
        when the killed run did not get to (each tag once at its step)."""
        self.records = trim_events(Path(self.log_dir), self.records, ready)
        if not step_log or not step_log["due"]:
            return
        written = {(tag, step) for tag, step in scalar_points(Path(self.log_dir))}
        missing = {k: v for k, v in step_log["metrics"].items() if (k, step_log["step"]) not in written}
        if missing:
            super().log_metrics(missing, step_log["step"])
            self.experiment.flush()


def scalar_points(folder: Path) -> list[tuple[str, int]]:
    """(tag, step) of every summary value in ``folder``'s event files, as written."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return [
        (v.tag, int(e.step))
        for f in sorted(Path(folder).glob(EVENTS_GLOB))
        for e in EventFileLoader(str(f)).Load()
        for v in e.summary.value
    ]
