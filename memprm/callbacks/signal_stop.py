"""StopOnSignal: Ctrl-C (SIGINT) or SIGTERM ends the GRPO stage after the current batch, with a checkpoint.

Inside :meth:`StopOnSignal.armed` (around ``trainer.fit``) either signal only sets a flag; at the end of the
batch in progress the callback writes ``last.ckpt`` by ``trainer.save_checkpoint``, the call the periodic
:class:`~memprm.callbacks.resume_state.StepCheckpoint` makes (so the same file, also when
``grpo.checkpoint_every`` is 0), stops the trainer and raises :class:`FitInterrupted`: ``python -m memprm fit``
prints one line and exits with 128 + the signal number (130, 143), and the same command again resumes from
the checkpoint. A second signal gets the handler that was in place before (stop at once, no checkpoint).
The handlers in place before come back at exit. Lightning's own SIGTERM handler (its ``_SignalConnector``)
runs beside ours: it would end ``fit`` after the batch with exit status 0 and no checkpoint; ours comes
first, and its ``SIGTERMException`` (for a signal after our batch-end check) becomes ours, with no checkpoint.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.utilities.exceptions import SIGTERMException

log = logging.getLogger("memprm.stages")

#: the signals that stop a run gracefully.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class FitInterrupted(Exception):
    """A run stopped by a signal; ``exit_code`` is the shell's convention, 128 + the signal number."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum


class StopOnSignal(Callback):
    """Stops training at the end of the batch in which a stop signal arrived, after writing ``checkpoint``
    (module doc). ``signum``: the signal received (None: none yet)."""

    def __init__(self, checkpoint: str | Path) -> None:
        self.checkpoint = Path(checkpoint)
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._step: int | None = None  # the optimizer step at the start, then at the last batch end

    @contextmanager
    def armed(self) -> Iterator[StopOnSignal]:
        """Within: the stop signals set :attr:`signum` (from the main thread only; elsewhere nothing is
        installed). A signal that no batch end of ours saw (it came after the last one, or Lightning's
        handler acted on it first) raises :class:`FitInterrupted` at exit, with no new checkpoint."""
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
            for s in STOP_SIGNALS:
                signal.signal(s, self._on_signal)
        try:
            yield self
        except SIGTERMException:  # Lightning's own stop after a SIGTERM
            if self.signum is None:
                raise
        finally:
            for s, handler in self._previous.items():
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
            self._previous = {}
        if self.signum is not None:
            raise self._interrupted(self.checkpoint if self.checkpoint.is_file() else None)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            log.warning(
                "%s received: GRPO stops after the current batch, writing a checkpoint (again: stop at once)",
                signal.Signals(signum).name,
            )
            return
        previous = self._previous.get(signum, signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # the default action: end the process
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._step = int(trainer.global_step)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._step = int(trainer.global_step)
        if self.signum is None:
            return
        trainer.save_checkpoint(self.checkpoint)
        trainer.should_stop = True
        raise self._interrupted(self.checkpoint)

    def _interrupted(self, checkpoint: Path | None) -> FitInterrupted:
        name = signal.Signals(self.signum).name
        where = f"at GRPO step {self._step}" if self._step is not None else "before GRPO started"
        then = f"resume from {checkpoint}" if checkpoint is not None else "start GRPO over"
        return FitInterrupted(self.signum, f"{name}: fit stopped {where}; the same command again will {then}")
