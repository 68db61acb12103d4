"""Exact per-layer top-k retrieval over every version of every entry, on faiss.

Rules (DESIGN.md, "Retrieval"):

- every version is embedded; an entry's score is the max over its versions; the whole chain is returned;
- each layer is its own path with its own width (default event 4, profile 3, verbatim 3 = top-10); the paths
  read are a config value (the retrieval-only baseline reads ``("verbatim",)``);
- top-k is exact inner product on L2-normalized vectors; ties are broken by entry creation order (``seq``);
- counterfactual views (``bank.without(ids)``) are served by masking, with no index rebuild.

How the index follows forks is on :class:`BankIndex`; how the search stays exact under masking is on
:class:`Retriever`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import faiss
import numpy as np

from memprm.memory.bank import LAYERS, BankView, Entry, MemoryBank
from memprm.memory.embedder import Embedder

_TOL = 1e-4  # bound on |faiss float32 score - float64 score| for unit vectors


@dataclass(frozen=True)
class RetrieverConfig:
    #: entries returned per layer path.
    widths: dict[str, int] = field(default_factory=lambda: {"event": 4, "profile": 3, "verbatim": 3})
    #: the layer paths read, in the order their hits are concatenated.
    paths: tuple[str, ...] = ("event", "profile", "verbatim")
    #: ``cpu`` or ``cuda`` (needs the ``gpu`` extra: faiss-gpu).
    device: str = "cpu"
    #: compact a layer's sealed segments into one beyond this many.
    max_segments: int = 8

    def __post_init__(self) -> None:
        for p in self.paths:
            if p not in LAYERS:
                raise ValueError(f"retriever.paths: unknown layer {p!r}; layers are {LAYERS}")
            if self.widths.get(p, 0) < 1:
                raise ValueError(f"retriever.widths[{p!r}] must be >= 1, got {self.widths.get(p)}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"retriever.device must be 'cpu' or 'cuda', got {self.device!r}")
        if self.max_segments < 1:
            raise ValueError("retriever.max_segments must be >= 1")


@dataclass(frozen=True)
class Hit:
    entry: Entry
    layer: str
    score: float  # max over the entry's versions
    best_version: int  # index of the version that attained it


@dataclass(frozen=True)
class Retrieval:
    query: str
    hits: tuple[Hit, ...]  # path by path in config order, best first within a path

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return tuple(h.entry.id for h in self.hits)

    def by_layer(self, layer: str) -> tuple[Hit, ...]:
        return tuple(h for h in self.hits if h.layer == layer)


class _Segment:
    """Vectors of some versions of one layer. Appended to only while it is a bank's open segment."""

    __slots__ = ("vecs", "n", "entry_ids", "version_idx")

    def __init__(self, dim: int, capacity: int = 64):
        self.vecs = np.empty((capacity, dim), dtype=np.float32)
        self.n = 0
        self.entry_ids: list[str] = []
        self.version_idx: list[int] = []

    def add(self, vecs: np.ndarray, entry_ids: list[str], version_idx: list[int]) -> None:
        need = self.n + len(vecs)
        if need > len(self.vecs):
            grown = np.empty((max(need, 2 * len(self.vecs)), self.vecs.shape[1]), dtype=np.float32)
            grown[: self.n] = self.vecs[: self.n]
            self.vecs = grown
        self.vecs[self.n : need] = vecs
        self.n = need
        self.entry_ids.extend(entry_ids)
        self.version_idx.extend(version_idx)

    @classmethod
    def concat(cls, segs: list[_Segment], dim: int) -> _Segment:
        out = cls(dim, max(1, sum(s.n for s in segs)))
        for s in segs:
            out.add(s.vecs[: s.n], s.entry_ids, s.version_idx)
        return out


class _LayerIndex:
    __slots__ = ("sealed", "open")

    def __init__(self, sealed: tuple[_Segment, ...], open_: _Segment):
        self.sealed, self.open = sealed, open_

    def segments(self) -> list[_Segment]:
        return [s for s in (*self.sealed, self.open) if s.n]

    @property
    def n(self) -> int:
        return sum(s.n for s in self.sealed) + self.open.n


@dataclass(frozen=True)
class _Candidates:
    """One layer's answer to one query vector before masking: entries ranked by exact score."""

    k_v: int  # versions searched
    threshold: float  # exact score of the k_v-th best version (-inf when the search was exhaustive)
    exhaustive: bool
    ranked: tuple[tuple[str, float, int], ...]  # (entry id, score, best version), best first, ties by seq


class BankIndex:
    """Per-bank index state. Created and used only by :class:`Retriever`.

    How the index follows forks. Each bank carries a :class:`BankIndex` in ``bank.index_state``: per layer a
    tuple of *sealed* (immutable, shared) vector segments plus one *open* segment it alone appends to.
    ``fork()`` seals the open segment, so parent and child share everything indexed so far and each appends
    to a fresh segment of its own. Long segment chains are compacted once they exceed ``max_segments``. New
    versions are indexed lazily, in one embedding batch, at the next query (``bank.version_log`` says which
    versions are new).

    ``candidates`` caches each query vector's unmasked candidates per layer, so the deletion re-queries of an
    audit (the same question against views that hide a few entries) filter a cached list instead of searching
    again. It is emptied whenever new versions are indexed and is never shared with a fork.
    """

    max_cached = 4096  # query vectors × layers kept; the oldest is dropped beyond it

    def __init__(self, dim: int, layers: dict[str, _LayerIndex] | None = None, n_done: int = 0):
        self.dim = dim
        self.layers = layers or {la: _LayerIndex((), _Segment(dim)) for la in LAYERS}
        self.n_done = n_done  # versions of bank.version_log already indexed
        self.candidates: dict[tuple[str, bytes], _Candidates] = {}

    def remember(self, key: tuple[str, bytes], cands: _Candidates) -> None:
        self.candidates.pop(key, None)
        if len(self.candidates) >= self.max_cached:
            del self.candidates[next(iter(self.candidates))]
        self.candidates[key] = cands

    def fork(self) -> BankIndex:
        child = {}
        for name, li in self.layers.items():
            if li.open.n:
                li.sealed, li.open = li.sealed + (li.open,), _Segment(self.dim)
            child[name] = _LayerIndex(li.sealed, _Segment(self.dim))
        return BankIndex(self.dim, child, self.n_done)

    def compact(self, max_segments: int) -> None:
        for li in self.layers.values():
            if len(li.sealed) > max_segments:
                li.sealed = (_Segment.concat(list(li.sealed), self.dim),)


class Retriever:
    """Exact per-layer retrieval for any bank or counterfactual view. Stateless apart from the embedder.

    Exactness under masking. Candidate versions come from ``faiss.knn`` per segment (``k_v`` per path,
    starting at ``4·width``); candidates are rescored exactly in float64 and aggregated per entry. If the
    ``width``-th best allowed entry scores above the ``k_v``-th version score by more than float32 rounding,
    no unseen version can change the answer; otherwise ``k_v`` grows ×4 and the search repeats, ending at an
    exhaustive scan. The unmasked candidate list is cached per query vector on the bank's index
    (``BankIndex.candidates``), so a counterfactual re-query of an audited question only filters it; the cache
    empties when versions are added.
    """

    def __init__(self, embedder: Embedder, cfg: RetrieverConfig | None = None):
        self.embedder = embedder
        self.cfg = cfg or RetrieverConfig()
        if self.cfg.device == "cuda" and not hasattr(faiss, "StandardGpuResources"):
            raise RuntimeError(
                "retriever.device='cuda' needs faiss with GPU support: pip install 'memprm[gpu]'"
            )
        self._gpu = faiss.StandardGpuResources() if self.cfg.device == "cuda" else None

    # --------------------------------------------------------------------------------------- indexing
    def sync(self, bank: MemoryBank) -> BankIndex:
        """Index the versions added to ``bank`` since the last call (one embedding batch)."""
        state = bank.index_state
        if not isinstance(state, BankIndex) or state.dim != self.embedder.dim:
            state = BankIndex(self.embedder.dim)
            bank.index_state = state
        new = bank.version_log[state.n_done :]
        if new:
            texts = [bank.entry(eid).versions[vi].content for _, eid, vi in new]
            vecs = self.embedder.embed(texts)  # [N, dim]
            for layer in LAYERS:
                rows = [i for i, (la, _, _) in enumerate(new) if la == layer]
                if rows:
                    state.layers[layer].open.add(
                        vecs[rows], [new[i][1] for i in rows], [new[i][2] for i in rows]
                    )
            state.n_done = len(bank.version_log)
            state.candidates.clear()
        state.compact(self.cfg.max_segments)
        return state

    # --------------------------------------------------------------------------------------- querying
    def retrieve(
        self, bank: MemoryBank | BankView, query: str, paths: dict[str, int] | None = None
    ) -> Retrieval:
        """Top entries per layer path for ``query``. ``paths`` (layer → width, in order) overrides the config's
        paths and widths, e.g. ``{"event": 3}`` for a manager's merge candidates."""
        qvec = self.embedder.embed([query])[0]
        return self.retrieve_vector(bank, qvec, query, paths)

    def retrieve_vector(
        self,
        bank: MemoryBank | BankView,
        qvec: np.ndarray,
        query: str = "",
        paths: dict[str, int] | None = None,
    ) -> Retrieval:
        base, hidden = (bank.base, bank.hidden) if isinstance(bank, BankView) else (bank, frozenset())
        state = self.sync(base)
        q = np.ascontiguousarray(qvec, dtype=np.float32).reshape(1, -1)  # [1, dim]
        paths = paths if paths is not None else {p: self.cfg.widths[p] for p in self.cfg.paths}
        hits: list[Hit] = []
        for layer, width in paths.items():
            if layer not in state.layers:
                raise ValueError(f"unknown layer path {layer!r}; layers are {LAYERS}")
            if width > 0:
                hits.extend(self._layer_top(base, state, layer, q, width, hidden))
        return Retrieval(query, tuple(hits))

    def _layer_top(self, bank, state: BankIndex, layer, q, width, hidden) -> list[Hit]:
        li = state.layers[layer]
        n = li.n
        if n == 0:
            return []
        key = (layer, q.tobytes())
        cands = state.candidates.get(key)
        k_v = 4 * width if cands is None else cands.k_v
        while True:
            if cands is None or cands.k_v < min(k_v, n):
                cands = self._candidates(bank, li, q, min(k_v, n))
                state.remember(key, cands)
            ranked = [c for c in cands.ranked if c[0] not in hidden][:width]
            if cands.exhaustive or (len(ranked) == width and ranked[-1][1] > cands.threshold + _TOL):
                return [Hit(bank.entry(eid), layer, score, vi) for eid, score, vi in ranked]
            k_v = 4 * cands.k_v

    def _candidates(self, bank: MemoryBank, li: _LayerIndex, q: np.ndarray, k_v: int) -> _Candidates:
        """Entries whose best version is among the ``k_v`` nearest versions of one layer, exactly rescored."""
        segs = li.segments()
        found = []  # (segment, rows) per segment
        for s in segs:
            _, i = self._knn(q, s.vecs[: s.n], min(k_v, s.n))  # [1, k]
            found.append((s, i[0][i[0] >= 0]))
        vecs = np.concatenate([s.vecs[rows] for s, rows in found]).astype(np.float64)  # [sum k, dim]
        exact = vecs @ q[0].astype(np.float64)  # [sum k] float64 rescoring
        seg_of = np.concatenate([np.full(len(rows), si) for si, (_, rows) in enumerate(found)])
        row_of = np.concatenate([rows for _, rows in found])
        top = np.argsort(-exact, kind="stable")[:k_v]  # the k_v best versions
        n = sum(s.n for s in segs)
        threshold = float(exact[top[-1]]) if k_v < n else -np.inf
        best: dict[str, tuple[float, int]] = {}  # entry -> (exact score, version)
        for j in top.tolist():
            s, r = found[seg_of[j]][0], int(row_of[j])
            eid = s.entry_ids[r]
            if eid not in best:  # ``top`` is sorted, so the first sighting is the entry's best version
                best[eid] = (float(exact[j]), s.version_idx[r])
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], bank.entry(kv[0]).seq))
        return _Candidates(k_v, threshold, k_v >= n, tuple((eid, sc, vi) for eid, (sc, vi) in ranked))

    def _knn(self, q: np.ndarray, xb: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self._gpu is not None:
            return faiss.knn_gpu(self._gpu, q, xb, k, metric=faiss.METRIC_INNER_PRODUCT)
        return faiss.knn(q, xb, k, metric=faiss.METRIC_INNER_PRODUCT)
