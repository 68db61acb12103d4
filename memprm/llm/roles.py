"""The LLM roles' interfaces and the values they exchange.

Every role (reader, judge, probe generator, teacher) has one interface here and two kinds of implementation:
one over an OpenAI-compatible endpoint (:mod:`memprm.llm.client`) with its prompt in ``memprm/prompts/``, and a
real offline algorithm that needs no network (what the embedded default runs and the tests use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memprm.data.records import Dialogue, Question, Turn
from memprm.memory.retriever import Retrieval

#: What a reader says when the memory does not contain the answer; judges count it correct on
#: unanswerable questions.
ABSTAIN_ANSWER = "Not mentioned in the conversation"


@dataclass(frozen=True)
class ReaderAnswer:
    answer: str
    #: entry ids the reader says it used, machine-checked: every id here was retrieved.
    cited: tuple[str, ...]
    #: ids the reader cited that were not retrieved (dropped from ``cited`` and counted).
    dropped_citations: tuple[str, ...] = ()
    #: size of the reader's context (rendered memory + question), in the reader's tokens.
    context_tokens: int = 0
    #: the reader's call failed (transport, format or a 4xx): its own outcome, never an answer — not judged,
    #: not scored, no credit of any kind (counted).
    failed: bool = False
    #: the reader's reply had no ``cited`` field (read as citing nothing, counted).
    missing_citations: bool = False
    #: (entry id, version index) pairs the answer was read from: for each cited entry, the versions of its
    #: chain (0 = oldest) its evidence came from. Empty means "not reported" (an LLM reader sees whole chains
    #: and does not say), read as the newest version of each cited entry (DESIGN.md's default for the
    #: cited-version chain credit); a cited entry without a pair here is read the same way.
    evidence: tuple[tuple[str, int], ...] = ()


class Reader(Protocol):
    def answer(self, question: Question, retrieval: Retrieval) -> ReaderAnswer: ...


@dataclass(frozen=True)
class Verdict:
    correct: bool
    #: a graded score in [0, 1] where the judge has one (token F1), else 1.0 / 0.0.
    score: float
    #: the judge's call failed: its own outcome, never a verdict — the question is not scored (counted).
    failed: bool = False


class Judge(Protocol):
    def judge(self, question: Question, answer: str) -> Verdict: ...


class ProbeGenerator(Protocol):
    def generate(self, dialogue: Dialogue, turns: Sequence[Turn]) -> list[Question]:
        """Probe questions for ``turns`` (a session window of ``dialogue``).

        Each probe is a :class:`Question` with ``category == "probe"`` and ``evidence == (anchor_turn_id,)``:
        it names the one turn it is anchored to.
        """
        ...


def check_citations(cited: Sequence[str], retrieval: Retrieval) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split a reader's citations into (kept, dropped): kept ⊆ retrieved, order and uniqueness preserved."""
    retrieved = set(retrieval.entry_ids)
    kept, dropped = [], []
    for c in dict.fromkeys(cited):
        (kept if c in retrieved else dropped).append(c)
    return tuple(kept), tuple(dropped)
