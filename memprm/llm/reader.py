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
import re
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

import numpy as np

from memprm.data.records import Question
from memprm.llm.relative_time import resolve
from memprm.llm.render import approx_tokens, render_retrieval
from memprm.llm.roles import ABSTAIN_ANSWER, ReaderAnswer, check_citations
from memprm.llm.text import is_past_form, stem
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
    "feel felt love loved stop smiling buzzing wow great awesome amazing fun sure guess person people name "
    "kind type".split()
)
_COUNT = re.compile(r"\bhow (many|much|old|long)\b|\bwhat (number|age)\b")
_CUES = frozenset("named called as is are was in at to from for".split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _key(word: str) -> str:
    """A word's comparison key: its Porter stem (``baked`` and ``bake`` match)."""
    return stem(word.lower())


_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty sixty "
    "hundred thousand half".split()
)


def _numeric(word: str) -> bool:
    return any(c.isdigit() for c in word) or word.lower() in _NUMBER_WORDS


_PREVIOUS = re.compile(r"\b(before|previously|used to|formerly|former|originally|prior to|earlier|in the past|at first)\b")
#: a relative clause about a person ("the person who …", "the woman whose …", "someone who …", "the one that …",
#: "the reader of …"):
#: English relative pronouns, not one wording of a question generator.
_BRIDGE = re.compile(
    r"\b(?:(?:the|a|an)\s+(?:[a-z]+\s+){0,2}?(?:who|whose)|someone\s+(?:who|whose)|somebody\s+(?:who|whose)|"
    r"the (?:person|one) that|the\s+(?!number\b|order\b|other\b)[a-z]+(?:er|or)\s+of)\b(?P<clause>[^?]*)"
)  # … or an agent noun: "the reader of The Hobbit", "the owner of a dog named Milo"
_ABS_DATE = re.compile(
    r"\b(?:the week before )?\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December) \d{4}\b"
)
_DATE_LEAD = re.compile(r"^(?:On|In) (?:the week before )?\d{1,2} [A-Z][a-z]+ \d{4},\s*")
_AS_OF = re.compile(r"\s*\(as of [^)]*\)")
_CALENDAR = frozenset(
    "January February March April May June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)
_NAME = re.compile(r"\b[A-Z][a-z]+(?=\b)")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|[\"“(]\s*)$")  # not ":" — "Mei's partner: Quinn" names Quinn


def names_in(text: str, known: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Capitalized words of ``text`` that may name an entity, read from capitalization alone.

    Months and weekdays are not names. A word capitalized only because it opens a sentence ("Guess what",
    "Meet Quinn") is a name only when it is possessive ("Mei's job"), a speaker label ("Mei: I ran …"),
    appears capitalized mid-sentence too, or is in ``known`` (names found so in the surrounding texts).

    >>> sorted(names_in("Guess what? Meet Quinn, Mei's partner. Quinn met Mei on Friday in May."))
    ['Mei', 'Quinn']
    """
    found = [(m.group(0), m.start(), m.end()) for m in _NAME.finditer(text)]
    opens = [bool(_SENTENCE_START.search(text[:start])) for _, start, _ in found]
    inner = {w for (w, _, _), o in zip(found, opens, strict=True) if not o}
    out = set()
    for (w, _, end), o in zip(found, opens, strict=True):
        labelled = text[end : end + 2] in ("'s", "’s") or text[end : end + 1] == ":"  # "Mei's", "Mei: …"
        if w in _CALENDAR or (o and w not in inner and w not in known and not labelled):
            continue
        out.add(w)
    return out


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
        bridge = _BRIDGE.search(q)
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
        current, previous = _CURRENT.search(low), _PREVIOUS.search(low)
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
        if _WHEN.search(low):
            found = _ABS_DATE.search(version.content)
            if found:
                text = found.group(0)
            elif version.timestamp:
                text = resolve(version.content, datetime.fromisoformat(version.timestamp))
            else:
                text = extract_span(version.content, q)
        else:
            text = extract_span(_AS_OF.sub("", _DATE_LEAD.sub("", version.content)), q)
        cited = tuple(dict.fromkeys(e.id for e, _ in read))
        evidence = tuple(dict.fromkeys((e.id, _version_index(e, v)) for e, v in read))
        return ReaderAnswer(text, cited, context_tokens=context_tokens, evidence=evidence)


def _version_index(entry, version) -> int:
    """The position of ``version`` (the object itself) on ``entry``'s chain, 0 = oldest."""
    return next(i for i, v in enumerate(entry.versions) if v is version)


def overlaps(question: str, contents: list[str]) -> np.ndarray:
    """Per version: the share of the question's content words (not stop words, question words or names) it
    contains, compared by stem (step 2). contents [C] → [C]; all ones when the question has no content word."""
    want = {_key(w) for w in _words(question) if w.lower() not in _STOP and not w[0].isupper()}
    if not want:
        return np.ones(len(contents))
    return np.array([len(want & {_key(w) for w in _words(c)}) / len(want) for c in contents])


def time_line(cands, support: np.ndarray, best: int, margin: float) -> list | None:
    """The time line of step 3's ``time_order`` rule: ``(entry, version)`` pairs of the best chain and of every
    other entry's version whose ``support`` [C] is ≥ the best's less ``margin``, in timestamp order (stable),
    versions without a timestamp left out; None when no version on it has one."""
    chain_id = cands[best][0].id
    floor = float(support[best]) - margin
    picked = [(e, v) for i, (e, _, v) in enumerate(cands) if e.id == chain_id or float(support[i]) >= floor]
    dated = [(e, v) for e, v in picked if v.timestamp]
    if not dated:
        return None
    return sorted(dated, key=lambda ev: datetime.fromisoformat(ev[1].timestamp))


def earlier_version(versions, after: str):
    """The version before the one where the value named in ``after`` started (step 3): the latest version
    mentioning a content word of ``after``, walked back over the versions that repeat it (a restatement is
    no change); else the second-to-last. ``versions`` has at least two."""
    keys = {_key(w) for w in _words(after) if w.lower() not in _STOP}

    def names_it(k: int) -> bool:
        return bool(keys & {_key(w) for w in _words(versions[k].content)})

    for k in range(len(versions) - 1, 0, -1):
        if names_it(k):
            while k > 0 and names_it(k - 1):
                k -= 1
            return versions[max(k - 1, 0)]
    return versions[-2]


#: a question whose answer is a verb phrase ("what did Ana do …")
_ACTION = re.compile(r"\bwhat\b.*\b(?:do|doing|done|happen|happened)\b")


def extract_span(content: str, question: str) -> str:
    """The short span of ``content`` that answers ``question`` (see :class:`ExtractiveReader`, step 5)."""
    body = re.sub(r"^[A-Z][\w .'-]{0,40}:\s+", "", content.strip())  # drop a "Speaker: " prefix
    qkeys = {_key(w) for w in _words(question)}
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", body) if _words(s)] or [body]
    sentence = max(sentences, key=lambda s: sum(_key(w) in qkeys for w in _words(s)))
    words = _words(sentence)
    if not words:
        return body
    blocked = [w.lower() in _STOP or w.lower() in _CUES or _key(w) in qkeys for w in words]
    wants_number = bool(_COUNT.search(question.lower()))
    asks_action = bool(_ACTION.search(question.lower()))
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
        val -= 1.0 * (not asks_action and all(is_past_form(t) for t in toks))  # "What did X paint?" names no verb
        val += (3.0 if wants_number else 1.0) * any(_numeric(t) for t in toks)
        val += 0.5 * (s > 0 and words[s - 1].lower() in _CUES)
        if anchors:
            val -= 0.1 * min(min(abs(a - s), abs(a - (e - 1))) for a in anchors)
        return val - 0.05 * (e - s)

    s, e = max(runs, key=score)
    numbers = [w for w in words[s:e] if any(c.isdigit() for c in w)]  # digits only: "two hours" stays whole
    return " ".join(numbers) if wants_number and numbers else " ".join(words[s:e])


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
