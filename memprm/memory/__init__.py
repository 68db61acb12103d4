"""Memory bank with version chains, embedders and exact faiss retrieval."""

from memprm.memory.bank import (
    LAYERS,
    MANAGED_LAYERS,
    BankError,
    BankView,
    Entry,
    MemoryBank,
    OpRecord,
    Version,
)
from memprm.memory.embedder import EmbedderConfig, HashingEmbedder, SentenceEmbedder, build_embedder
from memprm.memory.retriever import Hit, Retrieval, Retriever, RetrieverConfig

__all__ = [
    "LAYERS",
    "MANAGED_LAYERS",
    "BankError",
    "BankView",
    "EmbedderConfig",
    "Entry",
    "HashingEmbedder",
    "Hit",
    "MemoryBank",
    "OpRecord",
    "Retrieval",
    "Retriever",
    "RetrieverConfig",
    "SentenceEmbedder",
    "Version",
    "build_embedder",
]
