"""The plan of one dialogue (dated events and profile version chains) and the date formats of answers."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from memprm.data.dates import format_date
from memprm.data.synthetic.generator_config import SyntheticConfig
from memprm.data.synthetic.phrasing import Phrasing
from memprm.data.synthetic.vocabulary import (
    MONTHS,
    Activity,
    Attribute,
    RelativeTime,
)

# --- dates ------------------------------------------------------------------------------------------------


def format_session_datetime(dt: datetime) -> str:
    """LoCoMo's session header style: ``1:56 pm on 8 May, 2023``."""
    hour = dt.hour % 12 or 12
    half = "am" if dt.hour < 12 else "pm"
    return f"{hour}:{dt.minute:02d} {half} on {dt.day} {MONTHS[dt.month - 1]}, {dt.year}"


def resolve_relative_time(when: RelativeTime, session_day: date) -> str:
    """The gold answer for an event told with ``when`` in a session held on ``session_day``.

    ``days`` counts back from the session date; ``last <weekday>`` is the most recent such weekday strictly
    before the session date (1-7 days back); ``last week`` has no single day and is answered LoCoMo-style.
    """
    if when.week:
        return f"the week before {format_date(session_day)}"
    if when.days is not None:
        return format_date(session_day - timedelta(days=when.days))
    if when.weekday is not None:
        back = (session_day.weekday() - when.weekday) % 7 or 7
        return format_date(session_day - timedelta(days=back))
    raise ValueError(f"RelativeTime {when.text!r} has neither days, weekday nor week")


# --- the plan of one dialogue -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    serial: int
    owner: int  # speaker index 0 / 1
    session: int
    activity: Activity
    detail: str
    when: RelativeTime


@dataclass(frozen=True)
class Mention:
    """One profile statement: ``state`` (first), ``change`` (overturn: old -> value) or ``restate``."""

    serial: int
    owner: int
    session: int
    attribute: Attribute
    kind: str
    value: str
    old: str = ""


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def article(noun: str) -> str:
    low = noun.lower()
    vowel_sound = low[:1] in "aeiou" and not low.startswith(("uni", "uku", "use", "eu"))
    return f"{'an' if vowel_sound else 'a'} {noun}"


def plan_events(
    cfg: SyntheticConfig, rng: random.Random, serials: list[int], phrasing: Phrasing
) -> list[Event]:
    n = cfg.events_per_session * cfg.sessions_per_dialogue
    activities = rng.sample(phrasing.activities, n)
    events = []
    for i, activity in enumerate(activities):
        session = i // cfg.events_per_session + 1
        detail = rng.choice(activity.details) if activity.details else ""
        events.append(
            Event(
                len(serials),
                rng.randint(0, 1),
                session,
                activity,
                detail,
                rng.choice(phrasing.relative_times),
            )
        )
        serials.append(len(serials))
    return events


def plan_profile(
    cfg: SyntheticConfig, rng: random.Random, serials: list[int], phrasing: Phrasing
) -> tuple[list[list[Mention]], dict[str, list[str]]]:
    """Version chains (one list of mentions per (speaker, attribute), in session order) and unused values."""
    slots = [(owner, a) for owner in (0, 1) for a in phrasing.attributes]
    chosen = rng.sample(slots, cfg.profile_attributes)
    pools = {a.key: rng.sample(a.values, len(a.values)) for a in phrasing.attributes}
    n_sessions = cfg.sessions_per_dialogue
    chains = []
    for owner, attribute in chosen:
        first = rng.randint(1, max(1, math.ceil(n_sessions / 2)))
        later = list(range(first + 1, n_sessions + 1))
        n_changes = 0
        while n_changes < min(cfg.max_overturns, len(later)) and rng.random() < cfg.overturn_prob:
            n_changes += 1
        change_sessions = sorted(rng.sample(later, n_changes))
        free = [s for s in later if s not in change_sessions]
        restate_session = rng.choice(free) if free and rng.random() < cfg.restate_prob else None
        pool = pools[attribute.key]
        value = pool.pop()
        chain = [Mention(len(serials), owner, first, attribute, "state", value)]
        serials.append(len(serials))
        for s in sorted([*change_sessions, *([restate_session] if restate_session is not None else [])]):
            if s == restate_session:
                chain.append(Mention(len(serials), owner, s, attribute, "restate", value))
            else:
                new = pool.pop()
                chain.append(Mention(len(serials), owner, s, attribute, "change", new, old=value))
                value = new
            serials.append(len(serials))
        chains.append(chain)
    return chains, pools
