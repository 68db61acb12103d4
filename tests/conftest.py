"""Shared fixtures. The benchmark data is found through MEMPRM_DATA (``.ci/run`` sets it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = os.environ.get("MEMPRM_DATA")
    if not root:
        pytest.skip("MEMPRM_DATA is not set: tests on LoCoMo / LongMemEval need the data root")
    path = Path(root)
    if not path.is_dir():
        pytest.fail(f"MEMPRM_DATA={root!r} is not a directory")
    return path


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module of tiny models (many small ops: threads only contend, up to 60x slower
    on a busy host); the previous count comes back afterwards. Use with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
