"""Cloze questions from fact sentences: span choice and phrasing for the offline probe generator.

The rules (tiers, wh-words, clause cut) are documented once, on :class:`memprm.llm.probes.FactProbeGenerator`.
All of it works on character offsets of the original text, so the question keeps the fact's own punctuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memprm.llm.text import STOP_WORDS, WORD, normalize_answer

MONTHS = ("January February March April May June July August September October November December").split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty sixty "
    "seventy eighty ninety hundred thousand dozen".split()
)
PERSON_CUES = frozenset(
    "with dating married marry marrying met meet meeting by friend friends partner husband wife boyfriend "
    "girlfriend mother father mom dad sister brother son daughter cousin colleague coworker boss "
    "mentor".split()
)
#: words that never make a content run (with the stop words): adverbs that carry no fact.
NOT_CONTENT = STOP_WORDS | frozenset(
    "recently currently often usually always never sometimes now together regularly especially finally "
    "actually already soon later lately".split()
)
#: a content-run answer keeps at most this many of the run's last words.
MAX_CONTENT_WORDS = 2
_ABBREVIATIONS = frozenset("Dr Mr Mrs Ms St Jr Sr Prof".split())
_DROP_BEFORE_DATE = frozenset("on in at during about around".split())
_ARTICLES = frozenset("a an the".split())

_M = "(?:" + "|".join(MONTHS) + ")"
_WD = "(?:" + "|".join(WEEKDAYS) + ")"
_D = r"\d{1,2}(?:st|nd|rd|th)?"
_Y = r"(?:19|20)\d\d"
_N = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several|\d+)"
_UNIT = r"(?:days?|weeks?|weekends?|months?|years?|decades?)"
_DATE_PATTERNS = [
    re.compile(p)
    for p in (
        rf"\b{_D} (?:of )?{_M}(?:,? {_Y})?\b",
        rf"\b{_M} {_D}(?:,? {_Y})?\b",
        rf"\b{_M},? {_Y}\b",
        rf"\b{_M}\b",
        r"\b\d{4}-\d{2}-\d{2}\b",
        r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",
        rf"\b(?:the )?{_Y}s?\b",
        rf"\b(?i:last|next|this|past|coming) (?:{_WD}|(?i:week|weekend|month|year|summer|winter|spring|fall|"
        r"autumn|night|morning|evening))\b",
        rf"\b{_WD}s?\b",
        rf"\b(?i:{_N} {_UNIT} ago)\b",
        r"\b(?i:yesterday|today|tonight|tomorrow)\b",
        rf"\b(?i:spring|summer|fall|autumn|winter)(?: of)? {_Y}\b",
        r"\b\d{1,2}(?::\d{2})? ?(?i:am|pm|a\.m\.|p\.m\.)(?!\w)",
    )
]
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*(?:st|nd|rd|th)?")


@dataclass(frozen=True)
class Cloze:
    question: str
    answer: str
    kind: str  # "proper" | "date" | "number" | "content"


def date_spans(text: str) -> list[tuple[int, int]]:
    """Non-overlapping date-like spans of ``text``, longest first where they overlap, in text order."""
    found = sorted({m.span() for p in _DATE_PATTERNS for m in p.finditer(text)}, key=lambda s: (s[0], -s[1]))
    kept: list[tuple[int, int]] = []
    for s, e in found:
        if not kept or s >= kept[-1][1]:
            kept.append((s, e))
    return kept


def _starts(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """Per word: does it start a sentence (first word, or after ``.!?`` that does not end an abbreviation)?"""
    out = []
    for i, (s, _) in enumerate(spans):
        if i == 0:
            out.append(True)
            continue
        ps, pe = spans[i - 1]
        out.append(bool(re.search(r"[.!?]", text[pe:s])) and text[ps:pe] not in _ABBREVIATIONS)
    return out


def _base(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def _proper_runs(text: str, words: list[tuple[int, int]], starts: list[bool], names: frozenset[str]) -> list:
    """Proper-noun runs as character spans (tier 1 in :mod:`memprm.llm.probes`)."""

    def proper(i: int) -> bool:
        w = _base(text[words[i][0] : words[i][1]])
        return w[:1].isupper() and w not in names and w != "I" and w not in MONTHS and w not in WEEKDAYS

    def joined(i: int) -> bool:  # word i follows word i - 1 after exactly one space
        return text[words[i - 1][1] : words[i][0]] == " "

    runs, i = [], 0
    while i < len(words):
        if not proper(i):
            i += 1
            continue
        j = i + 1
        while j < len(words) and joined(j):
            w = text[words[j][0] : words[j][1]]
            if proper(j):
                j += 1
            elif w == "of" and j + 1 < len(words) and joined(j + 1) and proper(j + 1):
                j += 2
            else:
                j += w.isdigit()  # "Model 3": a number ends the run
                break
        if not any(starts[i:j]):
            runs.append((words[i][0], words[j - 1][1]))
        i = j
    return runs


def _numbers(text: str, words: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(s, e) for s, e in words if _NUMBER.fullmatch(text[s:e]) or text[s:e].lower() in NUMBER_WORDS]


def _content_runs(text: str, words: list[tuple[int, int]], names: frozenset[str]) -> list[tuple[int, int]]:
    """Runs of adjacent content words (no stop words, no names) as spans, cut to their last words.

    A run right after a name loses its first word, the name's verb ("Lucas plays basketball" -> "basketball").
    """
    runs: list[list[tuple[int, int]]] = []
    after_name: list[bool] = []
    prev_name = False
    for s, e in words:
        w = text[s:e]
        is_name = _base(w) in names
        if not is_name and w.lower() not in NOT_CONTENT:
            if runs and runs[-1][-1][1] == s - 1 and text[s - 1] == " ":
                runs[-1].append((s, e))
            else:
                runs.append([(s, e)])
                after_name.append(prev_name)
        prev_name = is_name
    cut = [run[1:] if first and len(run) > 1 else run for run, first in zip(runs, after_name, strict=True)]
    return [(run[-MAX_CONTENT_WORDS:][0][0], run[-1][1]) for run in cut]


def _overlaps(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in others)


def _clause_end(text: str, pos: int, end: int) -> int:
    m = re.compile(r"[;:(]|[,.!?](?!\w)| - |—").search(text, pos, end)
    return m.start() if m else end


def _drop_last_word(before: str, drop: frozenset[str]) -> str:
    m = re.search(r"(\S+)\s*$", before)
    return before[: m.start()] if m and m.group(1).lower() in drop else before


def _wh(kind: str, text: str, s: int, e: int, before: str) -> tuple[str, int, str]:
    """(wh-word, span start, answer) for a non-date span ``text[s:e]``; it may grow to a currency sign."""
    answer = text[s:e]
    prev = re.search(r"(\S+)\s*$", before)
    if kind == "proper" and _base(answer) != answer:
        return "whose", s, _base(answer)
    if kind == "proper" and prev and prev.group(1).lower() in PERSON_CUES:
        return "who", s, answer
    if kind == "number" and s > 0 and text[s - 1] in "$£€":
        return "how much", s - 1, text[s - 1 : e]
    if kind == "number" and not re.search(r"\d(?:st|nd|rd|th)$", answer):
        follow = WORD.match(text, e + 1) if text[e : e + 1] == " " else None
        if follow and follow.group().islower() and follow.group() not in STOP_WORDS:
            return "how many", s, answer
    return "what", s, answer


def make_cloze(fact: str, names: frozenset[str]) -> Cloze | None:
    """A cloze question about ``fact``, or None if no span can be asked about (rules: ``memprm.llm.probes``).

    Candidates are tried tier by tier, each tier from its last candidate back; the first that gives a
    question with at least two words besides the wh-word wins.
    """
    text = " ".join(fact.split())
    words = [m.span() for m in WORD.finditer(text)]
    starts = _starts(text, words)
    dates = date_spans(text)
    runs = [r for r in _proper_runs(text, words, starts, names) if not _overlaps(r, dates)]
    numbers = [n for n in _numbers(text, words) if not _overlaps(n, dates + runs)]
    content = _content_runs(text, words, names)
    for kind, spans in (("proper", runs), ("date", dates), ("number", numbers), ("content", content)):
        for s, e in reversed(spans):
            cloze = _phrase(text, words, starts, kind, s, e)
            if cloze is not None:
                return cloze
    return None


def _phrase(text: str, words: list[tuple[int, int]], starts: list[bool], kind: str, s: int, e: int):
    """The cloze asking for ``text[s:e]`` (a span of tier ``kind``); None when too little context is left."""
    sent_start = max((ws for (ws, _), st in zip(words, starts, strict=True) if st and ws <= s), default=0)
    later = [ws for (ws, _), st in zip(words, starts, strict=True) if st and ws >= e]
    sent_end = later[0] if later else len(text)
    before = text[sent_start:s]
    if kind == "date":
        wh, answer = "when", text[s:e]
        head = _drop_last_word(_drop_last_word(before, _ARTICLES), _DROP_BEFORE_DATE).rstrip(" ,")
        if not WORD.search(head):  # the date opens the sentence: ask about the rest of its clause
            rest = [ws for ws, _ in words if e <= ws < sent_end]
            head = text[rest[0] : _clause_end(text, rest[0], sent_end)] if rest else ""
        question = f"{head.rstrip()} when"
    else:
        wh, s, answer = _wh(kind, text, s, e, before)
        if 0 < s and e < len(text) and text[s - 1] in "'\"‘“" and text[e] in "'\"’”":
            s, e = s - 1, e + 1  # a quoted title: the quotes go with it
        tail = text[e : _clause_end(text, e, sent_end)]
        question = _drop_last_word(text[sent_start:s], _ARTICLES) + wh + tail
    question = question.strip().rstrip(" ,;:-")
    if len(WORD.findall(question)) - len(wh.split()) < 2 or not normalize_answer(answer):
        return None
    return Cloze(question[0].upper() + question[1:] + "?", answer, kind)
