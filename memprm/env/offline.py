"""The offline roles and environment from config: what the embedded default and the tools build.

One place builds the embedder, retriever, reader, judge and probe generator from a :class:`MemprmConfig`, so
tools, tests and ``fit`` all run the same stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from memprm.env.exam import ReaderCache
from memprm.env.gates import EnvConfig
from memprm.env.memory_env import MemoryEnv
from memprm.llm.judge import F1Judge
from memprm.llm.probes import FactProbeGenerator
from memprm.llm.reader import ExtractiveReader, ReaderConfig
from memprm.memory.embedder import Embedder, EmbedderConfig, build_embedder
from memprm.memory.retriever import Retriever, RetrieverConfig


@dataclass
class OfflineStack:
    embedder: Embedder
    retriever: Retriever
    reader: ExtractiveReader
    judge: F1Judge
    probes: FactProbeGenerator
    env: MemoryEnv

    def cache(self) -> ReaderCache:
        return ReaderCache(self.reader, self.judge)


def offline_stack(
    embedder: EmbedderConfig | None = None,
    retriever: RetrieverConfig | None = None,
    reader: ReaderConfig | None = None,
    env: EnvConfig | None = None,
    judge_threshold: float = 0.5,
    shared_embedder: bool = True,
) -> OfflineStack:
    emb = build_embedder(embedder or EmbedderConfig(), shared=shared_embedder)
    ret = Retriever(emb, retriever or RetrieverConfig())
    rd, jd, pg = (
        ExtractiveReader(emb, reader or ReaderConfig()),
        F1Judge(judge_threshold),
        FactProbeGenerator(),
    )
    return OfflineStack(emb, ret, rd, jd, pg, MemoryEnv(env or EnvConfig(), ret, rd, jd, pg))
