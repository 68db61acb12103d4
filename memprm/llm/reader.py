"""Readers: question + retrieved entries → answer + the minimal set of entry ids used.

``ExtractiveReader`` (offline) is a real, deterministic algorithm:

1. Every version of every retrieved entry is a candidate, scored by embedding cosine with the question.
2. If the best score is below ``abstain_threshold`` the reader abstains (``ABSTAIN_ANSWER``, no citation).
3. *Current-value* questions ("current", "now", "still", "these days", "latest", …): among candidates within
   ``recency_margin`` of the best score, the newest by timestamp wins (then the later version in its chain), so
   a merged chain answers with its last value.
4. *When* questions ("when", "what date", "which day", …): the chosen version's timestamp, shifted by a
   relative expression in its text (:mod:`memprm.llm.relative_time`).
5. Otherwise a span of the chosen version: the sentence sharing the most words with the question, then the
   best run of words that are neither stop words nor question words, preferring capitalized words, numbers and
   runs that follow a cue word ("named", "as", "in", …), near the words it shares with the question.

It cites the one entry its answer came from. ``LLMReader`` asks an OpenAI-compatible model for JSON
``{"answer": ..., "cited": [...]}``; its citations are machine-checked against the retrieved set.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

import numpy as np

from memprm.data.records import Question
from memprm.llm.relative_time import resolve
from memprm.llm.render import approx_tokens, render_retrieval
from memprm.llm.roles import ABSTAIN_ANSWER, ReaderAnswer, check_citations
from memprm.memory.embedder import Embedder
from memprm.memory.retriever import Retrieval


@dataclass(frozen=True)
class ReaderConfig:
    #: ``extractive`` (offline) or ``llm`` (an OpenAI-compatible endpoint; see ``llm`` config).
    kind: str = "extractive"
    #: extractive: abstain when no version's cosine with the question reaches this.
    abstain_threshold: float = 0.25
    #: extractive: for current-value questions, versions this close to the best score compete on recency.
    recency_margin: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in ("extractive", "llm"):
            raise ValueError(f"reader.kind must be 'extractive' or 'llm', got {self.kind!r}")
        if not -1.0 <= self.abstain_threshold <= 1.0 or self.recency_margin < 0:
            raise ValueError("reader.abstain_threshold must be in [-1, 1] and reader.recency_margin >= 0")


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_WHEN = re.compile(
    r"\bwhen\b|\bwhat (date|day|year|month|time)\b|\bwhich (date|day|year|month)\b|\bhow long ago\b"
)
_CURRENT = re.compile(
    r"\b(current|currently|now|still|these days|latest|most recent|at the moment|anymore)\b"
)
_STOP = frozenset(
    "a an the and or but if of to in on at for from by with about as into over after before is are was were be "
    "been being am do does did have has had i me my mine we us our you your he him his she her they them their it "
    "its this that these those there here what which who whom whose when where why how so very really just also "
    "too not no yes oh ok okay well like got get go going went some any all can could would should will shall "
    "may might must then than up down out off again more most much many last one thing things now today "
    "yesterday tonight week weekend month year ago recently lately day days monday tuesday wednesday thursday "
    "friday saturday sunday i'm i've i'd i'll it's that's what's you're we're they're he's she's there's let's "
    "can't don't didn't doesn't isn't wasn't won't couldn't wouldn't haven't guess tell know think say said "
    "feel felt love loved stop smiling buzzing wow great awesome amazing fun sure guess".split()
)
_COUNT = re.compile(r"\bhow (many|much|old|long)\b|\bwhat (number|age)\b")
_CUES = frozenset("named called as is are was in at to from for".split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _key(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") else w


class ExtractiveReader:
    def __init__(self, embedder: Embedder, cfg: ReaderConfig | None = None):
        self.embedder = embedder
        self.cfg = cfg or ReaderConfig()

    def answer(self, question: Question, retrieval: Retrieval) -> ReaderAnswer:
        context_tokens = approx_tokens(render_retrieval(retrieval)) + approx_tokens(question.text)
        cands = [(h.entry, i, v) for h in retrieval.hits for i, v in enumerate(h.entry.versions)]
        if not cands:
            return ReaderAnswer(ABSTAIN_ANSWER, (), context_tokens=context_tokens)
        vecs = self.embedder.embed([question.text] + [v.content for _, _, v in cands])  # [1 + C, dim]
        scores = vecs[1:] @ vecs[0]  # [C]
        best = int(np.argmax(scores))
        if float(scores[best]) < self.cfg.abstain_threshold:
            return ReaderAnswer(ABSTAIN_ANSWER, (), context_tokens=context_tokens)
        q = question.text.lower()
        if _CURRENT.search(q):
            close = [i for i in range(len(cands)) if scores[i] >= scores[best] - self.cfg.recency_margin]
            best = max(close, key=lambda i: (cands[i][2].timestamp or "", cands[i][1], float(scores[i])))
        entry, _, version = cands[best]
        if _WHEN.search(q) and version.timestamp:
            text = resolve(version.content, datetime.fromisoformat(version.timestamp))
        else:
            text = extract_span(version.content, question.text)
        return ReaderAnswer(text, (entry.id,), context_tokens=context_tokens)


def extract_span(content: str, question: str) -> str:
    """The short span of ``content`` that answers ``question`` (see the module docstring, step 5)."""
    body = re.sub(r"^[A-Z][\w .'-]{0,40}:\s+", "", content.strip())  # drop a "Speaker: " prefix
    qkeys = {_key(w) for w in _words(question)}
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", body) if _words(s)] or [body]
    sentence = max(sentences, key=lambda s: sum(_key(w) in qkeys for w in _words(s)))
    words = _words(sentence)
    if not words:
        return body
    blocked = [w.lower() in _STOP or w.lower() in _CUES or _key(w) in qkeys for w in words]
    wants_number = bool(_COUNT.search(question.lower()))
    anchors = [i for i, w in enumerate(words) if _key(w) in qkeys and w.lower() not in _STOP]
    runs, start = [], None
    for i, b in enumerate(blocked + [True]):
        if not b and start is None:
            start = i
        elif b and start is not None:
            runs.append((start, i))
            start = None
    if not runs:
        return sentence.strip()

    def score(run: tuple[int, int]) -> float:
        s, e = run
        toks = words[s:e]
        val = 2.0 * any(t[0].isupper() for j, t in enumerate(toks) if s + j > 0)
        val += (3.0 if wants_number else 1.0) * any(any(c.isdigit() for c in t) for t in toks)
        val += 0.5 * (s > 0 and words[s - 1].lower() in _CUES)
        if anchors:
            val -= 0.1 * min(min(abs(a - s), abs(a - (e - 1))) for a in anchors)
        return val - 0.05 * (e - s)

    s, e = max(runs, key=score)
    numbers = [w for w in words[s:e] if any(c.isdigit() for c in w)]
    return " ".join(numbers) if wants_number and numbers else " ".join(words[s:e])


class LLMReader:
    """Reader over an OpenAI-compatible endpoint; prompt in ``memprm/prompts/reader.txt``."""

    def __init__(self, client):
        self.client = client
        self.template = resources.files("memprm.prompts").joinpath("reader.txt").read_text()

    def answer(self, question: Question, retrieval: Retrieval) -> ReaderAnswer:
        context = render_retrieval(retrieval)
        date = question.date.strftime("%d %B %Y") if question.date else "unknown"
        prompt = self.template.format(memory=context, question=question.text, date=date)
        result = self.client.complete_json([{"role": "user", "content": prompt}], _validate_reader)
        tokens = approx_tokens(prompt)  # complete_json returns the parsed object, not usage
        if not isinstance(result, dict):  # a Failure after bounded re-asks: counted, judged wrong
            return ReaderAnswer("", (), context_tokens=tokens, failed=True)
        kept, dropped = check_citations(result["cited"], retrieval)
        return ReaderAnswer(result["answer"], kept, dropped, context_tokens=tokens)


def _validate_reader(obj: dict) -> dict:
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        raise ValueError(f"expected {{'answer': str, 'cited': [ids]}}, got {json.dumps(obj)[:200]}")
    cited = obj.get("cited", [])
    if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
        raise ValueError("'cited' must be a list of entry id strings")
    return {"answer": obj["answer"], "cited": cited}
