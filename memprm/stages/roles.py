"""Building the LLM roles, the retriever and the environment from config (offline or over an endpoint).

Each role's ``kind`` chooses its implementation; ``llm.<role>`` gives the endpoint of roles whose kind is
``llm`` (one :class:`~memprm.llm.client.LLMClient` per role, so every role has its own counters).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from memprm.env.exam import ReaderCache
from memprm.env.memory_env import MemoryEnv
from memprm.llm.client import LLMClient
from memprm.llm.endpoint import LLMConfig, LLMConfigError
from memprm.llm.failures import DEFAULT_MAX_FAILURE_SHARE, check_max_failure_share, set_max_failure_share
from memprm.llm.judge import build_judge
from memprm.llm.notes import CachedNotes, LLMNoteWriter, NoteWriterConfig, OracleNoteWriter, RuleNoteWriter
from memprm.llm.probes import FactProbeGenerator, LLMProbeGenerator
from memprm.llm.reader import ExtractiveReader, LLMReader
from memprm.llm.teacher import HeuristicTeacher, LLMTeacher
from memprm.memory.embedder import Embedder, build_embedder
from memprm.memory.retriever import Retriever


@dataclass(frozen=True)
class ProbeConfig:
    #: ``facts`` (offline cloze probes from the data's fact annotations) or ``llm``.
    kind: str = "facts"
    #: facts: probes per turn at most.
    max_per_turn: int = 1
    #: llm: turns with fewer words get no probe.
    min_words: int = 5

    def __post_init__(self) -> None:
        if self.kind not in ("facts", "llm"):
            raise ValueError(f"probes.kind must be 'facts' or 'llm', got {self.kind!r}")


@dataclass(frozen=True)
class LLMRoles:
    """Endpoints of the roles whose kind is ``llm`` (null for offline roles)."""

    reader: LLMConfig | None = None
    judge: LLMConfig | None = None
    probes: LLMConfig | None = None
    teacher: LLMConfig | None = None
    notes: LLMConfig | None = None
    #: stop the run when more than this share of one batch's LLM questions fail (a GRPO batch, a teacher or
    #: evaluated dialogue; :mod:`memprm.llm.failures`), naming the endpoint and the last error.
    max_failure_share: float = DEFAULT_MAX_FAILURE_SHARE

    def __post_init__(self) -> None:
        check_max_failure_share(self.max_failure_share)


@dataclass
class Stack:
    embedder: Embedder
    retriever: Retriever
    env: MemoryEnv
    teacher: object  # a Policy: Observation -> Action
    stopwatch: object = None  # the Stopwatch embedding time is charged to, if any

    def cache(self) -> ReaderCache:
        return ReaderCache(self.env.reader, self.env.judge)


LLM_ROLES = ("reader", "judge", "probes", "teacher", "notes")


def llm_roles(cfg) -> list[str]:
    """The roles of a :class:`memprm.config.MemprmConfig` whose ``kind`` is ``llm``."""
    return [r for r in LLM_ROLES if getattr(cfg, r).kind == "llm"]


def check_llm_keys(cfg) -> None:
    """Every ``llm`` role has an endpoint and its API-key variable is set: raises :class:`LLMConfigError`
    (one line naming the role and the setting) before any data, model or run folder is touched."""
    for role in llm_roles(cfg):
        endpoint = getattr(cfg.llm, role)
        if endpoint is None:
            raise LLMConfigError(f"{role}.kind is 'llm' but llm.{role} (the endpoint) is not configured")
        if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
            raise LLMConfigError(
                f"{role}.kind is 'llm' but the environment variable {endpoint.api_key_env} (llm.{role}.api_key_env) "
                f"is not set; export the API key for {endpoint.base_url}, or set llm.{role}.api_key_env=null for "
                "a server that needs no key"
            )


def _client(llm: LLMRoles, role: str) -> LLMClient:
    cfg = getattr(llm, role)
    if cfg is None:
        raise ValueError(f"{role}.kind is 'llm' but llm.{role} (the endpoint) is not configured")
    return LLMClient(cfg, role)


def build_stack(cfg, stopwatch=None) -> Stack:
    """Everything the stages need from a :class:`memprm.config.MemprmConfig`. With a
    :class:`~memprm.env.rollout.Stopwatch`, embedding time is charged to it (key ``embed``)."""
    set_max_failure_share(cfg.llm.max_failure_share)
    emb = build_embedder(cfg.embedder)
    if stopwatch is not None:
        from memprm.env.rollout import TimedEmbedder

        emb = TimedEmbedder(emb, stopwatch)
    retriever = Retriever(emb, cfg.retriever)
    reader = (
        ExtractiveReader(emb, cfg.reader)
        if cfg.reader.kind == "extractive"
        else LLMReader(_client(cfg.llm, "reader"), cfg.reader.max_citations)
    )
    judge = build_judge(cfg.judge, _client(cfg.llm, "judge") if cfg.judge.kind == "llm" else None)
    if cfg.probes.kind == "facts":
        probes = FactProbeGenerator(cfg.probes.max_per_turn)
    else:
        probes = LLMProbeGenerator(_client(cfg.llm, "probes"), min_words=cfg.probes.min_words)
    teacher = (
        HeuristicTeacher(emb, cfg.teacher)
        if cfg.teacher.kind == "heuristic"
        else LLMTeacher(_client(cfg.llm, "teacher"))
    )
    env = MemoryEnv(cfg.env, retriever, reader, judge, probes, build_note_writer(cfg.notes, cfg.llm))
    return Stack(emb, retriever, env, teacher, stopwatch)


def build_note_writer(cfg: NoteWriterConfig, llm: LLMRoles) -> CachedNotes:
    """The note writer of ``notes.kind`` (``rules`` / ``llm`` / ``oracle``), memoized per turn."""
    if cfg.kind == "rules":
        return CachedNotes(RuleNoteWriter())
    if cfg.kind == "oracle":
        return CachedNotes(OracleNoteWriter())
    return CachedNotes(LLMNoteWriter(_client(llm, "notes")))
