"""Building the LLM roles, the retriever and the environment from config (offline or over an endpoint).

Each role's ``kind`` chooses its implementation; ``llm.<role>`` gives the endpoint of roles whose kind is
``llm`` (one :class:`~memprm.llm.client.LLMClient` per role, so every role has its own counters).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from memprm.data.synthetic import SyntheticConfig
from memprm.env.exam import ReaderCache
from memprm.env.memory_env import MemoryEnv
from memprm.env.teacher import HeuristicTeacher, LLMTeacher
from memprm.llm.client import LLMClient
from memprm.llm.endpoint import LLMConfigError, LLMRoles
from memprm.llm.failures import set_max_failure_share
from memprm.llm.judge import build_judge
from memprm.llm.notes import CachedNotes, LLMNoteWriter, NoteWriterConfig, OracleNoteWriter
from memprm.llm.probes import FactProbeGenerator, LLMProbeGenerator
from memprm.llm.profile_tagger import TaggedNoteWriter, build_tagger
from memprm.llm.reader import ExtractiveReader, LLMReader
from memprm.llm.rule_notes import RuleNoteWriter
from memprm.memory.embedder import Embedder, TimedEmbedder, build_embedder
from memprm.memory.retriever import Retriever


@dataclass
class Stack:
    embedder: Embedder
    retriever: Retriever
    env: MemoryEnv
    teacher: object  # a Manager: Observation -> Action
    stopwatch: object = None  # the Stopwatch embedding time is charged to, if any

    @property
    def reader(self):
        return self.env.reader

    @property
    def judge(self):
        return self.env.judge

    @property
    def probes(self):
        return self.env.probes

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


def build_stack(cfg, stopwatch=None, shared_embedder: bool = True) -> Stack:
    """Everything the stages need from a :class:`memprm.config.MemprmConfig`. With a
    :class:`~memprm.rollout.runner.Stopwatch`, embedding time is charged to it (key ``embed``)."""
    set_max_failure_share(cfg.llm.max_failure_share)
    emb = build_embedder(cfg.embedder, shared=shared_embedder)
    writer = build_note_writer(cfg.notes, cfg.llm, emb, cfg.data.synthetic)  # the tagger's memo keys on emb
    if stopwatch is not None:
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
    env = MemoryEnv(cfg.env, retriever, reader, judge, probes, writer)
    return Stack(emb, retriever, env, teacher, stopwatch)


def build_note_writer(
    cfg: NoteWriterConfig, llm: LLMRoles, embedder: Embedder, synthetic: SyntheticConfig
) -> CachedNotes:
    """The note writer of ``notes.kind`` (``rules`` / ``tagged`` / ``llm`` / ``oracle``), memoized per turn.
    ``tagged`` trains its tagger with ``embedder`` on ``synthetic`` data (:func:`build_tagger`)."""
    if cfg.kind == "rules":
        return CachedNotes(RuleNoteWriter())
    if cfg.kind == "tagged":
        tagger = build_tagger(cfg, synthetic, embedder)
        return CachedNotes(
            TaggedNoteWriter(RuleNoteWriter(), tagger, cfg.tagger_threshold, cfg.tagger_margin)
        )
    if cfg.kind == "oracle":
        return CachedNotes(OracleNoteWriter())
    return CachedNotes(LLMNoteWriter(_client(llm, "notes")))
