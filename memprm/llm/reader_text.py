"""The offline reader's text rules: words and stems, names, question cues, per-version word overlap, time
lines of dated versions, and the answer span cut from a version (:class:`memprm.llm.reader.ExtractiveReader`).

General English, not the synthetic generator's templates (issue 23): names from capitalization and speaker
lists, dates from any explicit or relative expression (:mod:`memprm.llm.relative_time`).
"""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np

from memprm.llm.text import is_past_form, stem

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
WHEN = re.compile(
    r"\bwhen\b|\bwhat (date|day|year|month|time)\b|\bwhich (date|day|year|month)\b|\bhow long ago\b"
)
CURRENT = re.compile(
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


PREVIOUS = re.compile(r"\b(before|previously|used to|formerly|former|originally|prior to|earlier|in the past|at first)\b")
#: a relative clause about a person ("the person who …", "the woman whose …", "someone who …", "the one that …",
#: "the reader of …"):
#: English relative pronouns, not one wording of a question generator.
BRIDGE = re.compile(
    r"\b(?:(?:the|a|an)\s+(?:[a-z]+\s+){0,2}?(?:who|whose)|someone\s+(?:who|whose)|somebody\s+(?:who|whose)|"
    r"the (?:person|one) that|the\s+(?!number\b|order\b|other\b)[a-z]+(?:er|or)\s+of)\b(?P<clause>[^?]*)"
)  # … or an agent noun: "the reader of The Hobbit", "the owner of a dog named Milo"
ABS_DATE = re.compile(
    r"\b(?:the week before )?\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December) \d{4}\b"
)
DATE_LEAD = re.compile(r"^(?:On|In) (?:the week before )?\d{1,2} [A-Z][a-z]+ \d{4},\s*")
AS_OF = re.compile(r"\s*\(as of [^)]*\)")
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
