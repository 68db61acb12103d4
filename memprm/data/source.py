"""Choosing and loading a data source from config.

The data root is a config value (``data.root``) that the environment variable ``MEMPRM_DATA`` overrides; file
names below it are config values too, defaulting to the layout of ``tools/download_data.py`` (the same layout
as the project's shared data folder). The synthetic source needs no files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memprm.data.records import DataSplits
from memprm.data.synthetic import SyntheticConfig, generate_synthetic

SOURCES = ("synthetic", "locomo", "longmemeval")


@dataclass(frozen=True)
class DataConfig:
    #: ``synthetic`` (built in, the embedded default), ``locomo`` or ``longmemeval``.
    source: str = "synthetic"
    #: folder holding the benchmark files; the environment variable MEMPRM_DATA overrides it.
    root: str | None = None
    #: LoCoMo file, relative to the root.
    locomo_file: str = "locomo/locomo10.json"
    #: LongMemEval file (oracle or S format), relative to the root.
    longmemeval_file: str = "longmemeval/longmemeval_oracle.json"
    #: MemBuilder's split file, relative to the root.
    longmemeval_splits: str = "longmemeval/splits/membuilder_longmemeval_splits.json"
    #: LoCoMo question categories kept (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    #: 5 adversarial); null keeps all. The default exam excludes 5.
    categories: tuple[int, ...] | None = (1, 2, 3, 4)
    #: seed of the split of the dev dialogue's questions into calibration and selection halves.
    dev_split_seed: int = 0
    #: drop LoCoMo's exact duplicate questions (11 in conv-48), keeping the first; each drop is reported.
    #: D6-D10 then hold 976 questions (767 in categories 1-4) instead of 987 (778).
    drop_duplicate_questions: bool = True
    #: the synthetic generator's settings.
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"data.source must be one of {SOURCES}, got {self.source!r}")
        if self.categories is not None and not set(self.categories) <= {1, 2, 3, 4, 5}:
            raise ValueError(f"data.categories must be within 1..5, got {self.categories}")

    def resolved_root(self, source: str | None = None) -> Path:
        root = os.environ.get("MEMPRM_DATA") or self.root
        if not root:
            raise FileNotFoundError(
                f"data source {source or self.source!r} needs a data root: set MEMPRM_DATA or data.root "
                "(python tools/download_data.py fetches the files)"
            )
        return Path(root)


def load_source(cfg: DataConfig, source: str | None = None) -> DataSplits:
    """Load ``source`` (default ``cfg.source``) into named splits with its load report."""
    source = source or cfg.source
    if source == "synthetic":
        return generate_synthetic(cfg.synthetic)
    root = cfg.resolved_root(source)
    if source == "locomo":
        from memprm.data.locomo import load_locomo

        return load_locomo(
            _need(root / cfg.locomo_file),
            cfg.categories,
            cfg.dev_split_seed,
            drop_duplicates=cfg.drop_duplicate_questions,
        )
    if source == "longmemeval":
        from memprm.data.longmemeval import load_longmemeval

        return load_longmemeval(_need(root / cfg.longmemeval_file), _need(root / cfg.longmemeval_splits))
    raise ValueError(f"unknown data source {source!r}; sources are {SOURCES}")


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist (python tools/download_data.py fetches it)")
    return path
