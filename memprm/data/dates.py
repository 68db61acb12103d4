"""Date parsing for the two benchmark sources.

Both sources write local wall-clock times without a time zone, so both parsers return *naive*
``datetime`` objects; comparisons are only meaningful within one source (and, for LongMemEval, within one
variant: oracle and S sample their timestamps separately).

- LoCoMo sessions: ``"1:56 pm on 8 May, 2023"`` (12-hour clock, day, English month name, comma optional).
  Month names are matched in code, not through ``strptime``'s ``%B``, so the result does not depend on the
  process locale. Three-letter month abbreviations are accepted as well.
- LongMemEval: ``"2023/05/28 (Sun) 19:47"``. The weekday in parentheses is redundant with the date and is
  not checked (it matches the date everywhere in the shipped files); it may also be absent.

Both raise ``ValueError`` naming the text; loaders turn that into a ``DataFormatError`` naming the record.
"""

from __future__ import annotations

import re
from datetime import date, datetime

#: English month names, January first (locale-independent; answers and session headers use them).
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
#: lower-case month name or abbreviation ("may", "sep", "sept") -> month number.
MONTH_NUMBERS = {name.lower(): i + 1 for i, name in enumerate(MONTH_NAMES)}
MONTH_NUMBERS.update({name[:3]: num for name, num in list(MONTH_NUMBERS.items())})
MONTH_NUMBERS["sept"] = 9


def format_date(d: date) -> str:
    """LoCoMo's answer style, no zero padding: ``7 May 2023``."""
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


_LOCOMO_RE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_LME_RE = re.compile(r"\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]{3}\))?\s*(\d{1,2}):(\d{2})\s*")


def parse_locomo_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> ``datetime(2023, 5, 8, 13, 56)``; ``12 am`` is hour 0, ``12 pm`` hour 12."""
    m = _LOCOMO_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a LoCoMo date such as '1:56 pm on 8 May, 2023': {text!r}")
    hour12, minute, half, day, month_name, year = m.groups()
    month = MONTH_NUMBERS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month name {month_name!r} in {text!r}")
    hour = int(hour12)
    if not 1 <= hour <= 12:
        raise ValueError(f"hour {hour} is not on a 12-hour clock in {text!r}")
    hour = hour % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), hour, int(minute))
    except ValueError as exc:  # day 31 of a 30-day month, minute 61, ...
        raise ValueError(f"impossible date {text!r}: {exc}") from None


def parse_longmemeval_datetime(text: str) -> datetime:
    """``"2023/05/28 (Sun) 19:47"`` -> ``datetime(2023, 5, 28, 19, 47)``."""
    m = _LME_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a LongMemEval date such as '2023/05/28 (Sun) 19:47': {text!r}")
    year, month, day, hour, minute = (int(g) for g in m.groups())
    try:
        return datetime(year, month, day, hour, minute)
    except ValueError as exc:
        raise ValueError(f"impossible date {text!r}: {exc}") from None
