"""Rendering a dialogue's plan into sessions of alternating turns (facts, prompts, reactions, fillers)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date

from memprm.data.synthetic.generator_config import SyntheticConfig
from memprm.data.synthetic.phrasing import Phrasing
from memprm.data.synthetic.storyline import (
    Event,
    Mention,
    article,
    cap,
    resolve_relative_time,
)
from memprm.data.synthetic.vocabulary import (
    Person,
)

# --- rendering --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    speaker: int
    text: str
    serial: int | None = None  # the planned item this line tells, if any
    fact: str = ""
    key: str = ""  # the fact's attribute key, or "event:<activity>"
    value: str = ""  # a profile fact's (new) value


class Renderer:
    """Turns one dialogue's plan into sessions of alternating turns, in the words of ``phrasing``."""

    def __init__(
        self,
        cfg: SyntheticConfig,
        rng: random.Random,
        people: tuple[Person, Person],
        events: list[Event],
        chains: list[list[Mention]],
        unused_values: dict[str, list[str]],
        phrasing: Phrasing,
    ):
        self.cfg, self.rng, self.people, self.say = cfg, rng, people, phrasing
        self.events, self.chains = events, chains
        self.topics = [e.activity.topic for e in events]
        used_types = {c[0].attribute.key for c in chains}
        self.near_miss = [
            (a, unused_values[a.key])
            for a in phrasing.attributes
            if a.key in used_types and unused_values[a.key]
        ]

    def _say_event(self, e: Event, day: date) -> _Line:
        person = self.people[e.owner]
        comment = self.rng.choice(self.say.comments)
        text = self.rng.choice(self.say.event_tells).format(
            rel=e.when.text,
            Rel=cap(e.when.text),
            past=e.activity.spoken.format(poss="my", d=e.detail),
            comment=comment,
            Comment=cap(comment),
        )
        answer = resolve_relative_time(e.when, day)
        lead = f"In {answer}" if e.when.week else f"On {answer}"
        fact = f"{lead}, {person.name} {e.activity.past.format(poss=person.poss, d=e.detail)}."
        return _Line(e.owner, text, e.serial, fact, f"event:{e.activity.key}")

    def _say_mention(self, m: Mention) -> _Line:
        a, person = m.attribute, self.people[m.owner]
        slots = dict(v=m.value, a_v=article(m.value), old=m.old, a_old=article(m.old) if m.old else "")
        templates = {"state": a.state, "change": a.change, "restate": a.restate}[m.kind]
        text = self.rng.choice(templates).format(poss="my", **slots)
        fact_template = a.fact_change if m.kind == "change" else a.fact
        fact = fact_template.format(name=person.name, poss=person.poss, **slots)
        return _Line(m.owner, text, m.serial, fact, a.key, m.value)

    def _filler(self, first: int, deck: list[tuple[str, str]]) -> list[_Line]:
        """One two-turn distractor exchange started by ``first``; it leaves the last speaker unchanged.

        A near miss (``near_miss_frac``: a third party's statement or a passing mention of a value nobody
        holds, of a type the dialogue uses), a topical remark (``topical_distractor_frac``) or small talk.
        """
        rng, cfg, say = self.rng, self.cfg, self.say
        r = rng.random()
        if r < cfg.near_miss_frac and self.near_miss:
            attribute, values = rng.choice(self.near_miss)
            v = rng.choice(values)
            if attribute.third_party and rng.random() < 0.5:
                opener = rng.choice(attribute.third_party).format(v=v, a_v=article(v))
                return [_Line(first, opener), _Line(1 - first, rng.choice(say.third_party_replies))]
            opener = rng.choice(attribute.near_miss).format(v=v, a_v=article(v))
            return [_Line(first, opener), _Line(1 - first, rng.choice(say.near_miss_replies))]
        if r < cfg.near_miss_frac + cfg.topical_distractor_frac and self.topics:
            a, b = rng.choice(say.topical)
            topic = rng.choice(self.topics)
            return [_Line(first, a.format(topic=topic)), _Line(1 - first, b)]
        if not deck:
            deck.extend(rng.sample(say.small_talk, len(say.small_talk)))
        a, b = deck.pop()
        return [_Line(first, a), _Line(1 - first, b)]

    def session(self, index: int, day: date) -> list[_Line]:
        """Lines of session ``index``: at least ``turns_per_session``, more when its facts and the
        ``min_filler_exchanges`` distractor exchanges need more."""
        rng, cfg, say = self.rng, self.cfg, self.say
        items: list[Event | Mention] = [e for e in self.events if e.session == index]
        items += [m for chain in self.chains for m in chain if m.session == index]
        rng.shuffle(items)
        opener = rng.randint(0, 1)
        names = [p.name for p in self.people]
        opening = [
            _Line(opener, rng.choice(say.greetings).format(other=names[1 - opener])),
            _Line(1 - opener, rng.choice(say.greeting_replies).format(other=names[opener])),
        ]
        last = 1 - opener
        segments: list[list[_Line]] = []
        lasts = [last]  # lasts[g] = who spoke last before gap g (gap 0 = after the opening)
        for item in items:
            owner = item.owner
            seg = []
            if last == owner:
                seg.append(_Line(1 - owner, rng.choice(say.prompts).format(other=names[owner])))
            told = self._say_event(item, day) if isinstance(item, Event) else self._say_mention(item)
            kind = "event" if isinstance(item, Event) else item.kind
            seg += [told, _Line(1 - owner, rng.choice(say.reactions[kind]))]
            last = 1 - owner
            segments.append(seg)
            lasts.append(last)
        free = max(cfg.turns_per_session - 4 - sum(len(s) for s in segments), 2 * cfg.min_filler_exchanges)
        gaps: list[list[_Line]] = [[] for _ in lasts]
        deck: list[tuple[str, str]] = []
        for _ in range(free // 2):
            g = rng.randint(0, len(segments))
            gaps[g] += self._filler(1 - lasts[g], deck)
        a, b = rng.choice(say.closings)
        closing = [_Line(1 - last, a.format(other=names[last])), _Line(last, b.format(other=names[1 - last]))]
        if free % 2:
            closing.append(_Line(1 - last, rng.choice(say.closing_tails)))
        lines = opening + gaps[0]
        for seg, gap in zip(segments, gaps[1:], strict=True):
            lines += seg + gap
        return lines + closing
