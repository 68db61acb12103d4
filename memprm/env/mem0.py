"""A Mem0-style baseline manager (Chhikara et al., 2025): a flat fact store, updated destructively, no training.

Every turn of a dialogue goes through the environment's note writer (Mem0's extraction step). Each note is
compared with the ``similar`` stored facts nearest to it and applied as one of Mem0's operations — ADD,
UPDATE (the most similar fact is overwritten in place: its old text is gone), DELETE or NONE — by the
similarity and key rules of :meth:`Mem0Store.apply`. Unlike :class:`~memprm.memory.bank.MemoryBank` there
is no verbatim layer and no version chain. At test time the final store is read flat: the ``k`` facts most
similar to the question (top-10 and top-200) go to the same reader and judge as every other manager, and
the mean reader context tokens per question are reported (:func:`evaluate_mem0`). The thresholds of
:class:`Mem0Config` were chosen on the synthetic train split (``tools/mem0_baseline.py --grid``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from memprm.credit.gold import EvidenceKept
from memprm.data.records import Dialogue, Turn
from memprm.env.evaluate import EvalResult, official_quiz, summarize_exams
from memprm.env.exam import ReaderCache, run_exam
from memprm.env.gold_evidence import bank_evidence_kept, quiz_evidence
from memprm.env.memory_env import MemoryEnv, session_timestamp
from memprm.llm.failures import FailureGuard
from memprm.llm.notes import Note, NoteWriter
from memprm.memory.bank import MANAGED_LAYERS, MemoryBank
from memprm.memory.embedder import Embedder
from memprm.memory.retriever import Retrieval, Retriever


@dataclass(frozen=True)
class Mem0Config:
    """Chosen on the synthetic train split (``tools/mem0_baseline.py --split train --grid``; top-10 accuracy
    61.9 / 70.2 / 70.7 / 70.2 / 70.2 at ``update`` 0.6 / 0.7 / 0.8 / 0.9 / never; ``duplicate`` 0.9, 0.95 and
    never tied at every ``update``, and the lowest is kept so that NONE can fire)."""

    #: stored facts looked up per note (Mem0's s = 10 similar memories).
    similar: int = 10
    #: an event note overwrites the most similar stored event fact at or above this cosine (UPDATE).
    update: float = 0.8
    #: a note whose best cosine with a looked-up fact reaches this is a near-duplicate (NONE).
    duplicate: float = 0.9
    #: facts read per question at test time, one evaluation each.
    top_k: tuple[int, ...] = (10, 200)

    def __post_init__(self) -> None:
        if self.similar < 1 or not self.top_k or min(self.top_k) < 1:
            raise ValueError("mem0.similar and every mem0.top_k must be >= 1")
        if not -1.0 <= self.update <= self.duplicate <= 1.01:
            raise ValueError(
                f"mem0 needs -1 <= update <= duplicate <= 1.01, got {self.update}, {self.duplicate}"
            )


@dataclass(frozen=True)
class Fact:
    layer: str  # "event" | "profile": the note's layer (the reader sees it; retrieval ignores it)
    key: str  # the note's key: "<person>/<attribute>" for profile facts, "" for events
    text: str
    timestamp: str | None
    turn_id: str


@dataclass(frozen=True)
class Op:
    kind: Literal["add", "update", "delete", "none"]
    fact_id: int | None  # the fact added, overwritten or deleted (None for NONE)
    turn_id: str
    old: str | None = None  # the text an UPDATE or DELETE destroyed


_AS_OF = re.compile(r"\s*\(as of [^)]*\)")
#: a stated end of a habit, possession, job or relationship: what DELETE looks for in an event note.
_ENDED = re.compile(
    r"\b(?:stopped|quit|left|sold|gave up|no longer|anymore|broke up with|moved (?:out of|away from))\b", re.I
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")


def _value_words(fact: Fact) -> set[str]:
    """The words of a profile fact's value: ``"Ana's job: nurse (as of …)"`` → ``{"nurse"}``."""
    return set(_WORD.findall(_AS_OF.sub("", fact.text).partition(": ")[2].lower()))


class Mem0Store:
    """One dialogue's destructive fact store; :meth:`apply` is Mem0's update phase for one note."""

    def __init__(self, embedder: Embedder, cfg: Mem0Config | None = None):
        self.embedder, self.cfg = embedder, cfg or Mem0Config()
        self.facts: dict[int, Fact] = {}  # insertion order; an UPDATE keeps the fact's id and place
        self.ops: list[Op] = []
        self._next = 0

    def lookup(self, text: str) -> list[tuple[int, float]]:
        """The ``similar`` stored facts nearest to ``text``: (fact id, cosine), best first, ties by age."""
        if not self.facts:
            return []
        ids = list(self.facts)
        vecs = self.embedder.embed([text] + [self.facts[i].text for i in ids])  # [1 + F, dim]
        cos = vecs[1:] @ vecs[0]  # [F]
        order = np.argsort(-cos, kind="stable")[: self.cfg.similar]
        return [(ids[j], float(cos[j])) for j in order]

    def apply(self, note: Note, speaker: str, timestamp: str | None, turn_id: str) -> list[Op]:
        """Mem0's operations for ``note`` (said by ``speaker``), decided over the looked-up facts:

        1. DELETE — an event note that states an end ("stopped", "quit", "left", "sold", "no longer", …)
           deletes every looked-up profile fact of ``speaker`` whose value words all occur in the note (the
           rule note writer has no profile note for a value that ends, so the rule reads the event note it
           writes: "Dan stopped playing basketball and joined a badminton club." deletes "Dan's sport:
           basketball"); the note then goes on to rule 2.
        2. A keyed note (profile) whose key a looked-up fact has: NONE when the value is the same (the text
           without its "(as of …)" stamp), else UPDATE that fact.
        3. NONE when the best cosine reaches ``duplicate`` (a near-duplicate).
        4. An event note whose most similar looked-up event fact reaches ``update``: UPDATE that fact.
        5. Otherwise ADD.
        """
        near = self.lookup(note.text)
        out = []
        if note.layer == "event" and _ENDED.search(note.text):
            words = set(_WORD.findall(note.text.lower()))
            for fid, _ in near:
                f = self.facts[fid]
                if f.key.startswith(f"{speaker}/") and _value_words(f) and _value_words(f) <= words:
                    del self.facts[fid]
                    out.append(self._log(Op("delete", fid, turn_id, f.text)))
            near = [(fid, c) for fid, c in near if fid in self.facts]
        same = [fid for fid, _ in near if self.facts[fid].key == note.key]
        fact = Fact(note.layer, note.key, note.text, timestamp, turn_id)
        if note.key and same:
            old = self.facts[same[0]]
            if _AS_OF.sub("", old.text) == _AS_OF.sub("", note.text):
                return out + [self._log(Op("none", None, turn_id))]
            self.facts[same[0]] = fact
            return out + [self._log(Op("update", same[0], turn_id, old.text))]
        if near and near[0][1] >= self.cfg.duplicate:
            return out + [self._log(Op("none", None, turn_id))]
        events = [(fid, c) for fid, c in near if not note.key and self.facts[fid].key == ""]
        if events and events[0][1] >= self.cfg.update:
            old = self.facts[events[0][0]]
            self.facts[events[0][0]] = fact
            return out + [self._log(Op("update", events[0][0], turn_id, old.text))]
        self.facts[self._next] = fact
        self._next += 1
        return out + [self._log(Op("add", self._next - 1, turn_id))]

    def _log(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    def observe(self, turn: Turn, notes: Sequence[Note], timestamp: str | None) -> list[Op]:
        """Apply every note of ``turn`` (both layers), in the order the note writer gives them."""
        return [op for note in notes for op in self.apply(note, turn.speaker, timestamp, turn.id)]

    def to_bank(self) -> MemoryBank:
        """The store as the reader sees it: one single-version entry per fact, in store order (no verbatim)."""
        bank = MemoryBank()
        for f in self.facts.values():
            bank.write(f.layer, f.text, f.key, timestamp=f.timestamp, turn_id=f.turn_id)
        return bank


class FlatRetriever:
    """Top-``k`` over a store's facts as one path: the env's exact retriever on both managed layers, merged
    by score (ties by store order). Has the ``retrieve`` that :func:`~memprm.env.exam.run_exam` calls."""

    def __init__(self, retriever: Retriever, k: int):
        self.retriever, self.k = retriever, k

    def retrieve(self, bank: MemoryBank, query: str) -> Retrieval:
        per_layer = self.retriever.retrieve(bank, query, dict.fromkeys(MANAGED_LAYERS, self.k))
        hits = sorted(per_layer.hits, key=lambda h: (-h.score, h.entry.seq))[: self.k]
        return Retrieval(query, tuple(hits))


def build_store(env: MemoryEnv, dialogue: Dialogue, cfg: Mem0Config | None = None) -> Mem0Store:
    """Mem0 over every turn of ``dialogue`` with the env's note writer and embedder."""
    store = Mem0Store(env.retriever.embedder, cfg)
    notes: NoteWriter = env.notes
    for session in dialogue.sessions:
        for turn in session.turns:
            store.observe(turn, notes.notes(turn, session.datetime), session_timestamp(session))
    return store


def evaluate_mem0(
    env: MemoryEnv, dialogues: Sequence[Dialogue], cfg: Mem0Config | None = None
) -> dict[int, EvalResult]:
    """The test protocol of :mod:`memprm.env.evaluate` for Mem0, once per ``top_k``: every official question
    of each dialogue is answered from its final store by ``env``'s reader and judged by its judge."""
    cfg = cfg or Mem0Config()
    banks = [build_store(env, d, cfg).to_bank() for d in dialogues]
    sizes = [b.stats(MANAGED_LAYERS) for b in banks]
    evidence = EvidenceKept(0, 0)
    for d, bank in zip(dialogues, banks, strict=True):
        evidence += bank_evidence_kept(bank, quiz_evidence(official_quiz(d)))
    out = {}
    for k in cfg.top_k:
        cache, flat, guard = (
            ReaderCache(env.reader, env.judge),
            FlatRetriever(env.retriever, k),
            FailureGuard(),
        )
        exams = []
        for d, bank in zip(dialogues, banks, strict=True):
            exams.append((d.id, run_exam(bank, official_quiz(d), env.reader, env.judge, flat, cache)))
            guard.check(f"mem0 top-{k}, dialogue {d.id}")
        out[k] = summarize_exams(exams, sizes, evidence=evidence)
    return out
