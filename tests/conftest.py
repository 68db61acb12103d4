"""Shared fixtures. The benchmark data is found through MEMPRM_DATA (``.ci/run`` sets it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
