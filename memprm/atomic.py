"""Atomic outputs: every file a stage writes appears whole or not at all (write a temporary sibling, then
``os.replace``), so a run killed at any instant (``kill -9``) never leaves a truncated file behind. A folder is
built under a temporary sibling and swapped in by :func:`replace_dir`."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """``write(tmp)`` writes the content to a temporary file beside ``path``, which then replaces ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_torch_save(obj: object, path: Path) -> Path:
    import torch

    return atomic_write(path, lambda tmp: torch.save(obj, tmp))


@contextmanager
def replace_dir(final: Path):
    """Yields an empty temporary folder beside ``final``; on success it takes ``final``'s place (the old
    folder, if any, is moved aside first and deleted after). On an exception the temporary folder is removed
    and ``final`` is left as it was."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.{os.getpid()}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
