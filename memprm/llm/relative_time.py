"""Resolving relative time expressions against the date a turn was said.

The offline reader answers "when" questions from a version's timestamp (its session date) and any relative
expression in the version's text. Conventions (LoCoMo's annotation style):

- ``today`` / ``this morning|afternoon|evening`` / ``tonight`` / ``earlier today`` → the date;
  ``yesterday`` / ``last night`` → −1 day; ``the day|night before yesterday|last`` → −2 days;
- ``N [full|whole|good] days|nights|weeks ago|back`` (digits, one…twelve, ``a`` = 1, ``a couple of`` = 2)
  → −N / −7N days; ``a fortnight ago`` → −14 days; ``N years ago`` → the year N years before;
- ``last|on|this past <weekday>`` → the most recent such weekday strictly before; ``last weekend`` /
  ``this past weekend`` / ``over the weekend`` → the most recent Saturday strictly before;
- ``last|the previous week|month|year`` → "the week/month/year before <date>" (LoCoMo's phrasing).

English date arithmetic, not the synthetic generator's phrase list. The first expression (left to right)
wins; with none, the date itself is the answer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memprm.data.dates import format_date

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUM = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
}
_NUM_RE = r"(\d+|a couple of|a couple|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_FULL = r"(?:full |whole |good )?"  # "a full week ago"
_PATTERNS = [
    ("before_yesterday", re.compile(r"\bthe (?:day|night) before (?:yesterday|last)\b")),
    ("yesterday", re.compile(r"\b(?:yesterday|last night)\b")),
    ("today", re.compile(r"\b(?:today|this morning|this afternoon|this evening|tonight)\b")),
    ("days_ago", re.compile(rf"\b{_NUM_RE} {_FULL}(?:days?|nights?) (?:ago|back)\b")),
    ("weeks_ago", re.compile(rf"\b{_NUM_RE} {_FULL}weeks? (?:ago|back)\b")),
    ("fortnight", re.compile(r"\ba fortnight (?:ago|back)\b")),
    ("years_ago", re.compile(rf"\b{_NUM_RE} years? (?:ago|back)\b")),
    ("weekend", re.compile(r"\b(?:last|this past|over the) weekend\b")),
    (
        "weekday",
        re.compile(r"\b(?:last|on|this past) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"),
    ),
    ("week", re.compile(r"\b(?:last|the previous) week\b")),
    ("month", re.compile(r"\b(?:last|the previous) month\b")),
    ("year", re.compile(r"\b(?:last|the previous) year\b")),
]


def _before_weekday(d: datetime, weekday: int) -> datetime:
    delta = (d.weekday() - weekday) % 7 or 7
    return d - timedelta(days=delta)


def find(text: str, said_on: datetime) -> tuple[int, int, str] | None:
    """The first relative expression of ``text`` as ``(start, end, resolved answer)``; None when there is none.

    ``start``/``end`` are character offsets into ``text``, so a caller can cut the expression out
    (the note writer replaces "yesterday" by the absolute date).
    """
    low = text.lower()
    found = [(m.start(), kind, m) for kind, rx in _PATTERNS if (m := rx.search(low))]
    if not found:
        return None
    _, kind, m = min(found, key=lambda f: f[0])
    return m.start(), m.end(), _resolved(kind, m, said_on)


def resolve(text: str, said_on: datetime) -> str:
    """The date (or period) that ``text``, said on ``said_on``, refers to, as an answer string."""
    hit = find(text, said_on)
    return format_date(said_on) if hit is None else hit[2]


def _resolved(kind: str, m: re.Match, said_on: datetime) -> str:
    if kind == "before_yesterday":
        return format_date(said_on - timedelta(days=2))
    if kind == "yesterday":
        return format_date(said_on - timedelta(days=1))
    if kind == "today":
        return format_date(said_on)
    if kind in ("days_ago", "weeks_ago", "years_ago"):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUM[m.group(1)]
        if kind == "years_ago":
            return str(said_on.year - n)
        return format_date(said_on - timedelta(days=n * (7 if kind == "weeks_ago" else 1)))
    if kind == "fortnight":
        return format_date(said_on - timedelta(days=14))
    if kind == "weekend":
        return format_date(_before_weekday(said_on, 5))
    if kind == "weekday":
        return format_date(_before_weekday(said_on, WEEKDAYS.index(m.group(1))))
    return f"the {kind} before {format_date(said_on)}"
