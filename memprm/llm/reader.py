"""Readers: question + retrieved entries → answer + the minimal set of entry ids used.

:class:`ExtractiveReader` (offline) is a real, deterministic, chain-aware algorithm: it reads each retrieved
entry as its whole version chain (oldest first), abstains when no version supports the question well enough,
and lets the question's form (current value, earlier value, two facts, when) pick the version it reads; its
steps are on the class. :class:`LLMReader` asks an OpenAI-compatible model for JSON
``{"answer": ..., "cited": [...]}``. Both readers carry ``max_citations`` (``reader.max_citations``): the
audit credits at most that many citations of an answer (:mod:`memprm.env.audit`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

import numpy as np

from memprm.data.records import Question
from memprm.llm.reader_text import (
    ABS_DATE,
    AS_OF,
    BRIDGE,
    CURRENT,
    DATE_LEAD,
    PREVIOUS,
    WHEN,
    earlier_version,
    extract_span,
    names_in,
    overlaps,
    time_line,
)
from memprm.llm.relative_time import resolve
from memprm.llm.render import approx_tokens, render_retrieval
from memprm.llm.roles import ABSTAIN_ANSWER, ReaderAnswer, check_citations
from memprm.memory.embedder import Embedder
from memprm.memory.retriever import Retrieval


@dataclass(frozen=True)
class ReaderConfig:
    #: ``extractive`` (offline) or ``llm`` (an OpenAI-compatible endpoint; see ``llm`` config).
    kind: str = "extractive"
    #: extractive: abstain when no version's cosine with the question reaches this (the starting value when
    #: ``calibrate_abstention`` is on).
    abstain_threshold: float = 0.25
    #: extractive: choose the threshold on the dev calibration half before any exam of a run
    #: (:mod:`memprm.env.calibration`; the value chosen is written to ``reader_calibration.json``).
    calibrate_abstention: bool = True
    #: extractive: whose banks the calibration reads: ``teacher`` (the heuristic teacher's, the default) or
    #: ``verbatim`` (the verbatim-only bank of the Noop manager, which every manager's bank contains, so no
    #: manager is favoured by the threshold). ``tools/policy_gap.py --per-manager-calibration`` calibrates
    #: for each manager on its own banks instead.
    calibrate_with: str = "teacher"
    #: extractive: weight w of the word overlap in a version's support, (1 - w)·cosine + w·overlap (the starting
    #: value when ``calibrate_abstention`` is on; calibration chooses it among 0, 0.25, 0.5, 0.75).
    overlap_weight: float = 0.5
    #: most citations of one answer the audit credits; an answer citing more is counted and its citations
    #: count only where the deletion test confirms them (:mod:`memprm.env.audit`). The extractive reader
    #: cites at most two, so the cap never binds it.
    max_citations: int = 3
    #: extractive: read time, not only chains (issue 23's fair baseline). For current- and earlier-value
    #: questions the reader orders by timestamp the best chain's versions together with every retrieved
    #: version of another entry whose support is within ``time_margin`` of the best one (the same fact stored
    #: as separate entries: raw turns, un-merged writes), then reads the newest, or the one before the value
    #: the question names. Off: only the best chain is read (the chain-aware default).
    time_order: bool = False
    #: extractive, with ``time_order``: how far below the best support a version of another entry may score
    #: and still count as stating the same fact.
    time_margin: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 <= self.time_margin <= 2.0:
            raise ValueError(f"reader.time_margin must be in [0, 2], got {self.time_margin}")
        if self.kind not in ("extractive", "llm"):
            raise ValueError(f"reader.kind must be 'extractive' or 'llm', got {self.kind!r}")
        if self.calibrate_with not in ("teacher", "verbatim"):
            raise ValueError(f"reader.calibrate_with must be 'teacher' or 'verbatim', got {self.calibrate_with!r}")
        if not -1.0 <= self.abstain_threshold <= 1.0:
            raise ValueError(f"reader.abstain_threshold must be in [-1, 1], got {self.abstain_threshold}")
        if self.max_citations < 1:
            raise ValueError(f"reader.max_citations must be >= 1, got {self.max_citations}")
        if not 0.0 <= self.overlap_weight <= 1.0:
            raise ValueError(f"reader.overlap_weight must be in [0, 1], got {self.overlap_weight}")


class ExtractiveReader:
    """The offline reader: a real, deterministic, chain-aware algorithm.

    It reads each retrieved entry as its whole version chain (oldest first):

    1. Every version of every retrieved entry is a candidate, scored by embedding cosine with the question;
       the *best chain* is the entry of the best-scoring version.
    2. Each version's *support* is ``(1 - w)·cosine + w·overlap``, the overlap being the share of the
       question's content words (not stop words, question words or names) that the version contains (``w`` =
       ``overlap_weight``); if the best support is below ``abstain_threshold`` the reader abstains
       (``ABSTAIN_ANSWER``, no citation).
       ``w`` and the threshold are calibrated on the dev calibration half by
       :func:`memprm.env.calibration.calibrate_abstention` where a run does so (``fit`` and
       ``tools/policy_gap.py``), which reports the values it chose.
    3. The question's form picks the version to read:

       - *current value* ("now", "current", "still", "these days", "latest", …): the newest version of the
         best chain (a merged chain answers with its last value; a single turn is read as it is);
       - *earlier value* ("before", "previously", "used to", "formerly", "earlier", …): in the best chain, the version
         just before the one where the value named in the question's "before …" part started (restatements
         of it are walked back over), else the chain's second-to-last version; a one-version chain is read as
         it is;
       - *two facts* (a relative clause about a person: "… the person / woman / one who / whose <clause> …",
         "someone who …"): the version that best matches the clause names
         the bridge entity (a capitalized name it mentions that the question does not); the question is
         rewritten with the name in place of the clause ("… of the person who ran a marathon?" → "… of
         Mei?") and the answer is read from the newest version of the *other* entry, among those mentioning
         the name, whose version best matches the rewritten question (both entries are cited);
       - otherwise the best version.

       With ``time_order`` (:attr:`ReaderConfig.time_order`) the current- and earlier-value rules read a
       *time line* instead of the best chain alone: the best chain's versions plus every version of another
       retrieved entry whose support is within ``time_margin`` of the best, sorted by timestamp (stable:
       equal dates keep chain and retrieval order; versions without a timestamp stay out of it). The newest
       version of the time line answers a current-value question, :func:`earlier_version` of it an
       earlier-value one, and the entry of the version read is cited.
    4. *When* questions ("when", "what date", "which day", …) answer a date: an absolute date written in the
       version ("On 7 May 2023, …"), else the version's timestamp shifted by a relative expression in its
       text (:mod:`memprm.llm.relative_time`).
    5. Other questions get a span of the version (:func:`extract_span`): dates and "(as of …)" stamps are
       removed (a date only answers a when question), then the sentence sharing the most words with the
       question, then the best run of words that are neither stop words nor question words, preferring
       capitalized words, numbers and runs that follow a cue word ("named", "as", "in", …), near the words
       it shares with the question.

    It cites the entries its answer came from: at most two (one chain, or the two entries of a two-fact
    join), so the audit's citation cap (``max_citations``) never binds it. For each it reports the version it
    read (``ReaderAnswer.evidence``: the two-fact join's bridge version that matched the clause and the joined
    entry's newest), which the cited-version chain credit gives the entry's credit to.
    """

    def __init__(self, embedder: Embedder, cfg: ReaderConfig | None = None):
        self.embedder = embedder
        self.cfg = cfg or ReaderConfig()
        self.abstain_threshold = self.cfg.abstain_threshold
        self.overlap_weight = self.cfg.overlap_weight
        self.max_citations = self.cfg.max_citations

    def support_parts(self, question: Question, retrieval: Retrieval) -> tuple[np.ndarray, np.ndarray] | None:
        """(cosines [C], word overlaps [C]) of every retrieved version (None with nothing retrieved): the two
        parts of step 2's support, for calibration."""
        cands = [v.content for h in retrieval.hits for v in h.entry.versions]
        if not cands:
            return None
        vecs = self.embedder.embed([question.text] + cands)  # [1 + C, dim]
        return vecs[1:] @ vecs[0], overlaps(question.text, cands)

    def answer(self, question: Question, retrieval: Retrieval) -> ReaderAnswer:
        context_tokens = approx_tokens(render_retrieval(retrieval)) + approx_tokens(question.text)
        cands = [(h.entry, i, v) for h in retrieval.hits for i, v in enumerate(h.entry.versions)]
        if not cands:
            return ReaderAnswer(ABSTAIN_ANSWER, (), context_tokens=context_tokens)
        q = question.text
        bridge = BRIDGE.search(q)
        texts = [q] + [v.content for _, _, v in cands] + ([bridge.group("clause")] if bridge else [])
        vecs = self.embedder.embed(texts)  # [1 + C (+1), dim]; the clause's vector last
        scores = vecs[1 : 1 + len(cands)] @ vecs[0]  # [C]
        best = int(np.argmax(scores))
        ov = overlaps(q, [v.content for _, _, v in cands])  # [C]
        if (
            float(np.max((1 - self.overlap_weight) * scores + self.overlap_weight * ov))
            < self.abstain_threshold
        ):
            return ReaderAnswer(ABSTAIN_ANSWER, (), context_tokens=context_tokens)
        entry, version = cands[best][0], cands[best][2]
        read = [(entry, version)]  # (entry, version) the answer is read from, one per cited entry
        low = q.lower()
        current, previous = CURRENT.search(low), PREVIOUS.search(low)
        line = (
            time_line(cands, (1 - self.overlap_weight) * scores + self.overlap_weight * ov, best,
                      self.cfg.time_margin)  # fmt: skip
            if self.cfg.time_order and (current or previous)
            else None
        )
        if line is not None and current:
            entry, version = line[-1]
            read = [(entry, version)]
        elif line is not None and previous and len(line) > 1:
            version = earlier_version([v for _, v in line], q[previous.end() :])
            entry = next(e for e, v in line if v is version)
            read = [(entry, version)]
        elif current:
            version = entry.versions[-1]
            read = [(entry, version)]
        elif previous and len(entry.versions) > 1:
            version = earlier_version(entry.versions, q[previous.end() :])
            read = [(entry, version)]
        elif bridge:
            clause_scores = vecs[1 : 1 + len(cands)] @ vecs[-1]  # [C]
            a = int(np.argmax(clause_scores))
            known = set().union(*(names_in(v.content) for _, _, v in cands))  # names the context writes as names
            bridge_names = sorted(names_in(cands[a][2].content, known) - names_in(q, known))
            joined = [
                i
                for i, (e, _, v) in enumerate(cands)
                if e.id != cands[a][0].id and set(bridge_names) & names_in(v.content, known)
            ]
            if joined:
                # the question with the clause replaced by the bridge name: "... of the person who X?" → "... of Mei?"
                direct = q[: bridge.start()] + bridge_names[0] + q[bridge.end() :]
                d_vec = self.embedder.embed([direct])[0]  # [dim]
                b = max(joined, key=lambda i: float(vecs[1 + i] @ d_vec))
                entry = cands[b][0]
                version = entry.versions[-1]  # the joined fact's current value
                read = [(cands[a][0], cands[a][2]), (entry, version)]  # the bridge's matched version, the join
        if WHEN.search(low):
            found = ABS_DATE.search(version.content)
            if found:
                text = found.group(0)
            elif version.timestamp:
                text = resolve(version.content, datetime.fromisoformat(version.timestamp))
            else:
                text = extract_span(version.content, q)
        else:
            text = extract_span(AS_OF.sub("", DATE_LEAD.sub("", version.content)), q)
        cited = tuple(dict.fromkeys(e.id for e, _ in read))
        evidence = tuple(dict.fromkeys((e.id, _version_index(e, v)) for e, v in read))
        return ReaderAnswer(text, cited, context_tokens=context_tokens, evidence=evidence)


def _version_index(entry, version) -> int:
    """The position of ``version`` (the object itself) on ``entry``'s chain, 0 = oldest."""
    return next(i for i, v in enumerate(entry.versions) if v is version)


class LLMReader:
    """Reader over an OpenAI-compatible endpoint; prompt in ``memprm/prompts/reader.txt``.

    It asks for JSON ``{"answer": ..., "cited": [...]}``; its citations are machine-checked against the
    retrieved set (a reply without ``cited`` cites nothing and is flagged ``missing_citations``), and a failed
    call is a ``failed`` answer.
    """

    def __init__(self, client, max_citations: int = ReaderConfig.max_citations):
        self.client = client
        self.max_citations = max_citations
        self.template = resources.files("memprm.prompts").joinpath("reader.txt").read_text()

    @property
    def max_concurrency(self) -> int:
        """Questions the exam may send at once: the client's ``max_concurrency`` (1 for a client without one)."""
        return int(getattr(getattr(self.client, "cfg", None), "max_concurrency", 1))

    def answer(self, question: Question, retrieval: Retrieval) -> ReaderAnswer:
        context = render_retrieval(retrieval)
        date = question.date.strftime("%d %B %Y") if question.date else "unknown"
        prompt = self.template.format(memory=context, question=question.text, date=date)
        result = self.client.complete_json([{"role": "user", "content": prompt}], _validate_reader)
        tokens = approx_tokens(prompt)  # complete_json returns the parsed object, not usage
        if not isinstance(result, dict):  # a Failure: its own outcome, never an answer
            return ReaderAnswer("", (), context_tokens=tokens, failed=True)
        kept, dropped = check_citations(result["cited"], retrieval)
        return ReaderAnswer(
            result["answer"], kept, dropped, context_tokens=tokens, missing_citations=result["missing"]
        )


def _validate_reader(obj: dict) -> dict:
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        raise ValueError(f"expected {{'answer': str, 'cited': [ids]}}, got {json.dumps(obj)[:200]}")
    cited = obj.get("cited", [])
    if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
        raise ValueError("'cited' must be a list of entry id strings")
    return {"answer": obj["answer"], "cited": cited, "missing": "cited" not in obj}
