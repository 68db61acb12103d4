"""Console output of a run: the ``memprm`` loggers and the progress bars.

- :func:`configure_logging` (the CLI calls it): one stream handler (stderr) on the ``memprm`` logger, ``INFO``
  by default. Records still propagate to the root logger, which has no console handler in ``python -m
  memprm`` (so each line is printed once) and keeps pytest's ``caplog`` working; an application that gives
  the root logger its own console handler should not call this. Idempotent: calling it again sets the level
  and never adds a second handler. The handler writes to whatever ``sys.stderr`` is at emit time, so a
  replaced or closed earlier stream (pytest's capture) is never touched.
- :func:`set_progress_bars` / :func:`progress`: every tqdm loop of the package goes through :func:`progress`,
  which shows a bar only while the process-wide switch is on (``trainer.progress_bar``, set by ``fit``) and
  the caller does not turn it off.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")
_HANDLER_NAME = "memprm-console"
_PROGRESS = {"enabled": True}


class _CurrentStderrHandler(logging.StreamHandler):
    """A stream handler bound to the *current* ``sys.stderr``, resolved on every record."""

    @property
    def stream(self):  # noqa: D102 - resolved at emit time
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:  # StreamHandler.__init__ assigns it; the current stderr always wins
        pass


def configure_logging(level: int | str = logging.INFO) -> logging.Logger:
    """Send ``memprm.*`` records at ``level`` and above to stderr, once (see the module docstring)."""
    logger = logging.getLogger("memprm")
    logger.setLevel(level)
    handler = next((h for h in logger.handlers if h.get_name() == _HANDLER_NAME), None)
    if handler is None:
        handler = _CurrentStderrHandler()
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    return logger


def set_progress_bars(enabled: bool) -> None:
    """Turn every progress bar of the package on or off (``trainer.progress_bar``)."""
    _PROGRESS["enabled"] = bool(enabled)


def progress_bars_enabled() -> bool:
    return _PROGRESS["enabled"]


def progress(iterable: Iterable[T], desc: str, unit: str = "it", enabled: bool = True, **kw) -> Iterable[T]:
    """``tqdm(iterable, ...)``, disabled unless both the switch and ``enabled`` are on."""
    return tqdm(iterable, desc=desc, unit=unit, disable=not (enabled and _PROGRESS["enabled"]), **kw)
