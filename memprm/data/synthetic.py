"""Synthetic multi-session dialogues: the data the embedded default trains and tests on.

Everything a laptop run sees comes from here, so the generator is built to make the method's signals
meaningful rather than to look like LoCoMo word for word:

- **Facts worth writing.** Each session tells ``events_per_session`` dated events ("I ran a half marathon
  yesterday") and some profile statements ("I work as a nurse"). A fact-stating turn carries exactly one
  :class:`Fact` whose text is a canonical third-person statement; an event's fact resolves the relative time
  expression against the session date ("On 7 May 2023, Ana ran a half marathon ..."). Temporal questions
  are answered with that absolute date, which the turn itself never contains: the reader needs the session
  date or a memory that resolved it.
- **Distractors worth skipping.** Greetings, prompts ("So what's new with you?"), the listener's reactions,
  small talk and *topical* distractors that mention a topic of the dialogue or a value nobody holds ("Have
  you ever been to Oslo?") without stating anything about the speakers. Distractor turns carry no facts.
- **Values that get overturned.** Each of ``profile_attributes`` (speaker, attribute) pairs is stated in the
  first half of the dialogue, then overturned in later sessions with probability ``overturn_prob`` (again
  with the same probability, up to ``max_overturns``) and maybe restated unchanged (``restate_prob``), so
  merges into version chains and near-duplicate writes both matter. A dialogue draws every attribute value
  at most once, so a current value identifies its holder.

Questions (``Question.category``; ``category_id`` is 0, the synthetic source has no official numbering):

- ``single-hop``: the value of a never-overturned attribute, or an event's detail; evidence = the turn
  that stated it; the answer appears verbatim in that turn.
- ``multi-hop``: two facts joined: an attribute of "the person who <did an event / holds a current
  value>", or the value an attribute had before it was overturned; evidence = both turns.
- ``temporal``: "When did Ana run the half marathon?"; answer = the absolute date ("7 May 2023"), or
  LoCoMo's "the week before 8 May 2023" for "last week"; evidence = the event turn.
- ``knowledge-update``: the current value of an overturned attribute; evidence = the original statement and
  every overturn, the last of which holds the answer verbatim.
- ``unanswerable``: about an attribute type or an activity that nobody in the dialogue has, and whose words
  and values appear in no turn; no evidence; answer "Not mentioned in the conversation".

Every question is dated at the last session. Question ids are ``<dialogue id>/q<nn>`` in shuffled order;
turn ids are LoCoMo's ``D<session>:<turn>`` (1-based; ``Session.index`` and ``Turn.session_index`` are the
1-based session number). Speakers strictly alternate within a session.

Dates: a dialogue's first session falls on a day of 2022-2023, later ones ``min_gap_days`` to
``max_gap_days`` apart (uniform), each at a time between 9:00 and 20:59; ``Session.datetime_text`` is
LoCoMo's header style ("1:56 pm on 8 May, 2023") and answers use LoCoMo's date style ("7 May 2023").

Randomness: each dialogue uses its own ``random.Random`` seeded with the config seed and the dialogue index
(never the global generator), so a dialogue depends only on (config, index) and the same config gives the
same data on every machine. Shortfalls (too few candidates for a question kind) and sessions longer than
``turns_per_session`` (more facts than the target length holds) are recorded in the ``LoadReport``.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, fields, replace
from datetime import date, datetime, time, timedelta

from memprm.data.records import DataSplits, Dialogue, Fact, LoadReport, Question, Session, Turn
from memprm.data.synthetic_templates import (
    ACTIVITIES,
    ATTRIBUTES,
    CLOSING_TAILS,
    CLOSINGS,
    COMMENTS,
    EVENT_TELLS,
    GREETING_REPLIES,
    GREETINGS,
    MONTHS,
    NEAR_MISS_REPLIES,
    PEOPLE,
    PROMPTS,
    REACTIONS,
    RELATIVE_TIMES,
    SMALL_TALK,
    TEMPORAL_ASK,
    TOPICAL,
    UNANSWERABLE_ANSWER,
    Activity,
    Attribute,
    Person,
    RelativeTime,
)

SOURCE = "synthetic"
CATEGORIES = ("single-hop", "multi-hop", "temporal", "knowledge-update", "unanswerable")
_FIRST_DAY = date(2022, 1, 1)  # dialogues start on a day drawn from the two years from here
_START_SPAN_DAYS = 730


@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes and mix of the generated data (defaults: 10 dialogues x 6 sessions x 22 turns, 25 questions)."""

    seed: int = 0
    """Mixed with the dialogue index into each dialogue's own random generator."""
    n_dialogues: int = 10
    """Dialogues ``syn-000`` ... in order; split like LoCoMo: train first, then dev, the rest test."""
    n_train: int = 4
    """How many of the first dialogues are ``train``."""
    n_dev: int = 1
    """How many dialogues after the train ones are ``dev`` (questions halved into calibration/selection)."""
    sessions_per_dialogue: int = 6
    """Sessions per dialogue, a few days to weeks apart."""
    turns_per_session: int = 22
    """Target session length (the paper's session window is ~22 turns); distractors fill what facts leave.
    A session whose facts need more turns is made longer and the LoadReport records it."""
    events_per_session: int = 3
    """Dated events told per session, each a different activity of the dialogue."""
    profile_attributes: int = 8
    """(speaker, attribute type) pairs per dialogue, each stated once in the first half of the sessions."""
    overturn_prob: float = 0.5
    """Probability that a stated attribute is overturned in a later session; after an overturn, the
    probability of one more (up to ``max_overturns``)."""
    max_overturns: int = 2
    """Most overturns per attribute (a version chain has at most ``1 + max_overturns`` values)."""
    restate_prob: float = 0.3
    """Probability that an attribute's current value is mentioned again, unchanged, in a later session."""
    topical_distractor_frac: float = 0.4
    """Fraction of filler exchanges that are topical distractors (a dialogue topic or an unheld value)
    rather than plain small talk."""
    min_gap_days: int = 3
    """Fewest days between consecutive sessions."""
    max_gap_days: int = 21
    """Most days between consecutive sessions."""
    n_single_hop: int = 8
    """Requested single-hop questions per dialogue (fewer if too few candidates; reported)."""
    n_multi_hop: int = 5
    """Requested multi-hop questions per dialogue."""
    n_temporal: int = 6
    """Requested temporal questions per dialogue."""
    n_knowledge_update: int = 3
    """Requested knowledge-update questions per dialogue."""
    n_unanswerable: int = 3
    """Requested unanswerable questions per dialogue."""

    def __post_init__(self) -> None:
        for f in fields(self):  # f.type is the annotation's text ("int"): annotations are postponed
            value = getattr(self, f.name)
            if f.type in ("int", "float") and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"SyntheticConfig.{f.name} must be a number, got {value!r}")
            if f.type == "int" and not isinstance(value, int):
                raise ValueError(f"SyntheticConfig.{f.name} must be an integer, got {value!r}")
        positive = ("n_dialogues", "sessions_per_dialogue", "min_gap_days")
        non_negative = ("n_train", "n_dev", "events_per_session", "profile_attributes", "max_overturns",
                        *(f"n_{c.replace('-', '_')}" for c in CATEGORIES))  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"SyntheticConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"SyntheticConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("overturn_prob", "restate_prob", "topical_distractor_frac"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(
                    f"SyntheticConfig.{name} must be a probability in [0, 1], got {getattr(self, name)}"
                )
        if self.n_train + self.n_dev > self.n_dialogues:
            raise ValueError(
                f"SyntheticConfig: n_train ({self.n_train}) + n_dev ({self.n_dev}) exceeds "
                f"n_dialogues ({self.n_dialogues})"
            )
        if self.turns_per_session < 4:
            raise ValueError(
                f"SyntheticConfig.turns_per_session must be >= 4 (greeting and closing exchanges), "
                f"got {self.turns_per_session}"
            )
        if self.max_gap_days < self.min_gap_days:
            raise ValueError(
                f"SyntheticConfig.max_gap_days ({self.max_gap_days}) is below "
                f"min_gap_days ({self.min_gap_days})"
            )
        n_events = self.events_per_session * self.sessions_per_dialogue
        if n_events > len(ACTIVITIES):
            raise ValueError(
                f"SyntheticConfig: events_per_session x sessions_per_dialogue = {n_events} events, but only "
                f"{len(ACTIVITIES)} distinct activities exist"
            )
        if self.profile_attributes > 2 * len(ATTRIBUTES):
            raise ValueError(
                f"SyntheticConfig.profile_attributes must be <= {2 * len(ATTRIBUTES)} (2 speakers x "
                f"{len(ATTRIBUTES)} attribute types), got {self.profile_attributes}"
            )
        fewest = min(len(a.values) for a in ATTRIBUTES)
        if 2 * (1 + self.max_overturns) > fewest:
            raise ValueError(
                f"SyntheticConfig.max_overturns must be <= {fewest // 2 - 1}: two speakers' chains must draw "
                f"distinct values from pools of {fewest}, got {self.max_overturns}"
            )

    @property
    def questions_requested(self) -> dict[str, int]:
        """category -> requested count per dialogue."""
        return {c: getattr(self, f"n_{c.replace('-', '_')}") for c in CATEGORIES}


# --- dates ------------------------------------------------------------------------------------------------


def format_date(d: date) -> str:
    """LoCoMo's answer style: ``7 May 2023``."""
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


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
class _Event:
    serial: int
    owner: int  # speaker index 0 / 1
    session: int
    activity: Activity
    detail: str
    when: RelativeTime


@dataclass(frozen=True)
class _Mention:
    """One profile statement: ``state`` (first), ``change`` (overturn: old -> value) or ``restate``."""

    serial: int
    owner: int
    session: int
    attribute: Attribute
    kind: str
    value: str
    old: str = ""


@dataclass(frozen=True)
class _Note:
    skip: bool  # True: LoadReport.skip; False: LoadReport.repair
    kind: str
    example: str


@dataclass(frozen=True)
class _Draft:
    category: str
    text: str
    answer: str
    evidence: tuple[int, ...]  # serials of planned items; mapped to turn ids after rendering
    unanswerable: bool = False


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _article(noun: str) -> str:
    low = noun.lower()
    vowel_sound = low[:1] in "aeiou" and not low.startswith(("uni", "uku", "use", "eu"))
    return f"{'an' if vowel_sound else 'a'} {noun}"


def _plan_events(cfg: SyntheticConfig, rng: random.Random, serials: list[int]) -> list[_Event]:
    n = cfg.events_per_session * cfg.sessions_per_dialogue
    activities = rng.sample(ACTIVITIES, n)
    events = []
    for i, activity in enumerate(activities):
        session = i // cfg.events_per_session + 1
        detail = rng.choice(activity.details) if activity.details else ""
        events.append(
            _Event(len(serials), rng.randint(0, 1), session, activity, detail, rng.choice(RELATIVE_TIMES))
        )
        serials.append(len(serials))
    return events


def _plan_profile(
    cfg: SyntheticConfig, rng: random.Random, serials: list[int]
) -> tuple[list[list[_Mention]], dict[str, list[str]]]:
    """Version chains (one list of mentions per (speaker, attribute), in session order) and unused values."""
    slots = [(owner, a) for owner in (0, 1) for a in ATTRIBUTES]
    chosen = rng.sample(slots, cfg.profile_attributes)
    pools = {a.key: rng.sample(a.values, len(a.values)) for a in ATTRIBUTES}
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
        chain = [_Mention(len(serials), owner, first, attribute, "state", value)]
        serials.append(len(serials))
        for s in sorted([*change_sessions, *([restate_session] if restate_session is not None else [])]):
            if s == restate_session:
                chain.append(_Mention(len(serials), owner, s, attribute, "restate", value))
            else:
                new = pool.pop()
                chain.append(_Mention(len(serials), owner, s, attribute, "change", new, old=value))
                value = new
            serials.append(len(serials))
        chains.append(chain)
    return chains, pools


# --- rendering --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    speaker: int
    text: str
    serial: int | None = None  # the planned item this line tells, if any
    fact: str = ""


class _Renderer:
    """Turns one dialogue's plan into sessions of alternating turns."""

    def __init__(
        self,
        cfg: SyntheticConfig,
        rng: random.Random,
        people: tuple[Person, Person],
        events: list[_Event],
        chains: list[list[_Mention]],
        unused_values: dict[str, list[str]],
    ):
        self.cfg, self.rng, self.people = cfg, rng, people
        self.events, self.chains = events, chains
        self.topics = [e.activity.topic for e in events]
        used_types = {c[0].attribute.key for c in chains}
        self.near_miss = [
            (a, unused_values[a.key]) for a in ATTRIBUTES if a.key in used_types and unused_values[a.key]
        ]

    def _say_event(self, e: _Event, day: date) -> _Line:
        person = self.people[e.owner]
        comment = self.rng.choice(COMMENTS)
        text = self.rng.choice(EVENT_TELLS).format(
            rel=e.when.text, Rel=_cap(e.when.text), past=e.activity.past.format(poss="my", d=e.detail),
            comment=comment, Comment=_cap(comment),
        )  # fmt: skip
        answer = resolve_relative_time(e.when, day)
        lead = f"In {answer}" if e.when.week else f"On {answer}"
        fact = f"{lead}, {person.name} {e.activity.past.format(poss=person.poss, d=e.detail)}."
        return _Line(e.owner, text, e.serial, fact)

    def _say_mention(self, m: _Mention) -> _Line:
        a, person = m.attribute, self.people[m.owner]
        slots = dict(v=m.value, a_v=_article(m.value), old=m.old, a_old=_article(m.old) if m.old else "")
        templates = {"state": a.state, "change": a.change, "restate": a.restate}[m.kind]
        text = self.rng.choice(templates).format(poss="my", **slots)
        fact_template = a.fact_change if m.kind == "change" else a.fact
        fact = fact_template.format(name=person.name, poss=person.poss, **slots)
        return _Line(m.owner, text, m.serial, fact)

    def _filler(self, first: int, deck: list[tuple[str, str]]) -> list[_Line]:
        """One two-turn distractor exchange started by ``first``; it leaves the last speaker unchanged."""
        rng = self.rng
        if rng.random() < self.cfg.topical_distractor_frac and (self.topics or self.near_miss):
            if self.near_miss and (not self.topics or rng.random() < 0.5):
                attribute, values = rng.choice(self.near_miss)
                v = rng.choice(values)
                opener = rng.choice(attribute.near_miss).format(v=v, a_v=_article(v))
                return [_Line(first, opener), _Line(1 - first, rng.choice(NEAR_MISS_REPLIES))]
            a, b = rng.choice(TOPICAL)
            topic = rng.choice(self.topics)
            return [_Line(first, a.format(topic=topic)), _Line(1 - first, b)]
        if not deck:
            deck.extend(rng.sample(SMALL_TALK, len(SMALL_TALK)))
        a, b = deck.pop()
        return [_Line(first, a), _Line(1 - first, b)]

    def session(self, index: int, day: date) -> tuple[list[_Line], int]:
        """Lines of session ``index`` and how many turns its facts needed beyond the target (0 if none)."""
        rng, cfg = self.rng, self.cfg
        items: list[_Event | _Mention] = [e for e in self.events if e.session == index]
        items += [m for chain in self.chains for m in chain if m.session == index]
        rng.shuffle(items)
        opener = rng.randint(0, 1)
        names = [p.name for p in self.people]
        opening = [
            _Line(opener, rng.choice(GREETINGS).format(other=names[1 - opener])),
            _Line(1 - opener, rng.choice(GREETING_REPLIES).format(other=names[opener])),
        ]
        last = 1 - opener
        segments: list[list[_Line]] = []
        lasts = [last]  # lasts[g] = who spoke last before gap g (gap 0 = after the opening)
        for item in items:
            owner = item.owner
            seg = []
            if last == owner:
                seg.append(_Line(1 - owner, rng.choice(PROMPTS).format(other=names[owner])))
            told = self._say_event(item, day) if isinstance(item, _Event) else self._say_mention(item)
            kind = "event" if isinstance(item, _Event) else item.kind
            seg += [told, _Line(1 - owner, rng.choice(REACTIONS[kind]))]
            last = 1 - owner
            segments.append(seg)
            lasts.append(last)
        free = cfg.turns_per_session - 4 - sum(len(s) for s in segments)
        gaps: list[list[_Line]] = [[] for _ in lasts]
        deck: list[tuple[str, str]] = []
        for _ in range(max(free, 0) // 2):
            g = rng.randint(0, len(segments))
            gaps[g] += self._filler(1 - lasts[g], deck)
        a, b = rng.choice(CLOSINGS)
        closing = [_Line(1 - last, a.format(other=names[last])), _Line(last, b.format(other=names[1 - last]))]
        if free > 0 and free % 2:
            closing.append(_Line(1 - last, rng.choice(CLOSING_TAILS)))
        lines = opening + gaps[0]
        for seg, gap in zip(segments, gaps[1:], strict=True):
            lines += seg + gap
        return lines + closing, max(-free, 0)


# --- questions --------------------------------------------------------------------------------------------


def _round_robin(rng: random.Random, groups: list[list[_Draft]], n: int) -> list[_Draft]:
    """Up to ``n`` drafts taken in turn from the (shuffled) groups, so each sub-kind gets its share."""
    queues = [rng.sample(g, len(g)) for g in groups if g]
    rng.shuffle(queues)
    out: list[_Draft] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def _mentions_any(text: str, words: tuple[str, ...] | list[str]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}\b", text, flags=re.IGNORECASE) for w in words)


def _draft_questions(
    rng: random.Random,
    people: tuple[Person, Person],
    events: list[_Event],
    chains: list[list[_Mention]],
    dialogue_text: str,
    session_days: list[date],
) -> dict[str, list[list[_Draft]]]:
    """Candidate questions per category, grouped by sub-kind."""

    def ask(templates: tuple[str, ...], who: str, **slots: str) -> str:
        return rng.choice(templates).format(who=who, **slots)

    def current(chain: list[_Mention]) -> _Mention:
        return [m for m in chain if m.kind != "restate"][-1]

    def holder_clause(m: _Mention) -> str:
        return m.attribute.ident.format(v=m.value, a_v=_article(m.value))

    single_attr, single_detail, temporal, updates = [], [], [], []
    multi_event, multi_attr, multi_before = [], [], []
    for chain in chains:
        a, owner, now = chain[0].attribute, chain[0].owner, current(chain)
        name = people[owner].name
        if now is chain[0]:
            single_attr.append(_Draft("single-hop", ask(a.ask, name), now.value, (now.serial,)))
        else:
            values = [m for m in chain if m.kind != "restate"]
            updates.append(
                _Draft("knowledge-update", ask(a.ask_now, name), now.value, tuple(m.serial for m in values))
            )
            for before, after in zip(values, values[1:], strict=False):
                text = ask(a.ask_before, name, new=after.value, a_new=_article(after.value))
                multi_before.append(_Draft("multi-hop", text, before.value, (before.serial, after.serial)))
        for e in events:
            if e.owner == owner:
                who = f"the person who {e.activity.past.format(poss=people[owner].poss, d=e.detail)}"
                multi_event.append(_Draft("multi-hop", ask(a.ask, who), now.value, (e.serial, now.serial)))
        for other in chains:
            if other is not chain and other[0].owner == owner:
                ident = current(other)
                text = ask(a.ask, holder_clause(ident))
                multi_attr.append(_Draft("multi-hop", text, now.value, (ident.serial, now.serial)))
    for e in events:
        person = people[e.owner]
        base = e.activity.base.format(poss=person.poss)
        answer = resolve_relative_time(e.when, session_days[e.session - 1])
        temporal.append(_Draft("temporal", ask(TEMPORAL_ASK, person.name, base=base), answer, (e.serial,)))
        if e.detail:
            text = e.activity.ask_detail.format(who=person.name, poss=person.poss)
            single_detail.append(_Draft("single-hop", text, e.detail, (e.serial,)))

    used_types = {c[0].attribute.key for c in chains}
    used_activities = {e.activity.key for e in events}
    never_attr, never_activity = [], []
    for a in ATTRIBUTES:
        if a.key not in used_types and not _mentions_any(dialogue_text, [*a.keywords, *a.values]):
            who = rng.choice(people).name
            never_attr.append(_Draft("unanswerable", ask(a.ask, who), UNANSWERABLE_ANSWER, (), True))
    for act in ACTIVITIES:
        if act.key not in used_activities and not _mentions_any(dialogue_text, act.keywords):
            person = rng.choice(people)
            text = ask(TEMPORAL_ASK, person.name, base=act.base.format(poss=person.poss))
            never_activity.append(_Draft("unanswerable", text, UNANSWERABLE_ANSWER, (), True))
    return {
        "single-hop": [single_attr, single_detail],
        "multi-hop": [multi_event, multi_attr, multi_before],
        "temporal": [temporal],
        "knowledge-update": [updates],
        "unanswerable": [never_attr, never_activity],
    }


# --- public API -------------------------------------------------------------------------------------------


def _generate(cfg: SyntheticConfig, index: int) -> tuple[Dialogue, list[_Note]]:
    if index < 0:
        raise ValueError(f"dialogue index must be >= 0, got {index}")
    rng = random.Random(f"memprm-synthetic:{cfg.seed}:{index}")
    did = f"syn-{index:03d}"
    first, second = rng.sample(PEOPLE, 2)
    people = (first, second)
    day = _FIRST_DAY + timedelta(days=rng.randint(0, _START_SPAN_DAYS - 1))
    days = []
    for s in range(cfg.sessions_per_dialogue):
        if s:
            day += timedelta(days=rng.randint(cfg.min_gap_days, cfg.max_gap_days))
        days.append(day)
    serials: list[int] = []
    events = _plan_events(cfg, rng, serials)
    chains, unused_values = _plan_profile(cfg, rng, serials)
    renderer = _Renderer(cfg, rng, people, events, chains, unused_values)

    notes: list[_Note] = []
    sessions, turn_of = [], {}
    for s, d in enumerate(days, start=1):
        lines, over = renderer.session(s, d)
        if over:
            notes.append(_Note(False, "session longer than turns_per_session to fit its facts",
                               f"{did} session {s}: {len(lines)} turns"))  # fmt: skip
        turns = []
        for t, line in enumerate(lines, start=1):
            tid, speaker = f"D{s}:{t}", people[line.speaker].name
            facts = (Fact(line.fact, tid, speaker),) if line.serial is not None else ()
            if line.serial is not None:
                turn_of[line.serial] = tid
            turns.append(Turn(tid, speaker, line.text, s, facts=facts))
        when = datetime.combine(d, time(rng.randint(9, 20), rng.randint(0, 59)))
        sessions.append(Session(s, when, tuple(turns), format_session_datetime(when)))
    assert len(turn_of) == len(serials), "every planned fact must be told in exactly one turn"

    text = "\n".join(t.text for sess in sessions for t in sess.turns)
    candidates = _draft_questions(rng, people, events, chains, text, days)
    drafts: list[_Draft] = []
    for category, n in cfg.questions_requested.items():
        picked = _round_robin(rng, candidates[category], n)
        n_cands = sum(len(g) for g in candidates[category])
        for _ in range(n - len(picked)):
            notes.append(_Note(True, f"{category} question not formed (too few candidates)",
                               f"{did}: {len(picked)} of {n} from {n_cands} candidates"))  # fmt: skip
        drafts += picked
    rng.shuffle(drafts)
    order = {tid: i for i, tid in enumerate(t.id for sess in sessions for t in sess.turns)}
    last_date = sessions[-1].datetime
    questions = tuple(
        Question(
            id=f"{did}/q{i:02d}",
            text=q.text,
            answer=q.answer,
            category=q.category,
            evidence=tuple(sorted({turn_of[s] for s in q.evidence}, key=order.__getitem__)),
            date=last_date,
            unanswerable=q.unanswerable,
        )  # fmt: skip
        for i, q in enumerate(drafts, start=1)
    )
    names = tuple(p.name for p in people)
    return Dialogue(did, names, tuple(sessions), questions, source=SOURCE), notes


def generate_dialogue(cfg: SyntheticConfig, index: int) -> Dialogue:
    """Dialogue ``syn-<index>``; depends only on ``cfg`` and ``index``."""
    return _generate(cfg, index)[0]


def split_questions(dialogue: Dialogue) -> tuple[Dialogue, Dialogue]:
    """Two halves of a dev dialogue, same sessions: (calibration, selection).

    Questions are ordered by category (``CATEGORIES`` order) then id and dealt alternately, so the halves
    differ by at most one question overall and one per category.
    """
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    ordered = sorted(dialogue.questions, key=lambda q: (rank.get(q.category, len(rank)), q.id))
    calibration = tuple(sorted(ordered[0::2], key=lambda q: q.id))
    selection = tuple(sorted(ordered[1::2], key=lambda q: q.id))
    return replace(dialogue, questions=calibration), replace(dialogue, questions=selection)


def generate_synthetic(cfg: SyntheticConfig) -> DataSplits:
    """All dialogues, split LoCoMo-style: train, dev, dev_calibration, dev_selection, test."""
    report = LoadReport(source=SOURCE, path=f"generated: seed={cfg.seed}, n_dialogues={cfg.n_dialogues}")
    dialogues = []
    for i in range(cfg.n_dialogues):
        dialogue, notes = _generate(cfg, i)
        dialogues.append(dialogue)
        for note in notes:
            (report.skip if note.skip else report.repair)(note.kind, note.example)
    train = tuple(dialogues[: cfg.n_train])
    dev = tuple(dialogues[cfg.n_train : cfg.n_train + cfg.n_dev])
    halves = [split_questions(d) for d in dev]
    splits = {
        "train": train,
        "dev": dev,
        "dev_calibration": tuple(h[0] for h in halves),
        "dev_selection": tuple(h[1] for h in halves),
        "test": tuple(dialogues[cfg.n_train + cfg.n_dev :]),
    }
    return DataSplits(source=SOURCE, splits=splits, report=report)
