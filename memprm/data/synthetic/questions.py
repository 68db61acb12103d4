"""Candidate questions of one dialogue, per category and sub-kind, drawn from its plan."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date

from memprm.data.synthetic.lines import UNANSWERABLE_ANSWER
from memprm.data.synthetic.phrasing import Phrasing
from memprm.data.synthetic.storyline import (
    Event,
    Mention,
    article,
    resolve_relative_time,
)
from memprm.data.synthetic.vocabulary import (
    Person,
)


@dataclass(frozen=True)
class Draft:
    category: str
    text: str
    answer: str
    evidence: tuple[int, ...]  # serials of planned items; mapped to turn ids after rendering
    unanswerable: bool = False


# --- questions --------------------------------------------------------------------------------------------


def round_robin(rng: random.Random, groups: list[list[Draft]], n: int) -> list[Draft]:
    """Up to ``n`` drafts taken in turn from the (shuffled) groups, so each sub-kind gets its share."""
    queues = [rng.sample(g, len(g)) for g in groups if g]
    rng.shuffle(queues)
    out: list[Draft] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def _mentions_any(text: str, words: tuple[str, ...] | list[str]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}\b", text, flags=re.IGNORECASE) for w in words)


def draft_questions(
    rng: random.Random,
    people: tuple[Person, Person],
    events: list[Event],
    chains: list[list[Mention]],
    dialogue_text: str,
    session_days: list[date],
    phrasing: Phrasing,
) -> dict[str, list[list[Draft]]]:
    """Candidate questions per category, grouped by sub-kind, in the words of ``phrasing``."""

    def ask(templates: tuple[str, ...], who: str, **slots: str) -> str:
        return rng.choice(templates).format(who=who, **slots)

    def current(chain: list[Mention]) -> Mention:
        return [m for m in chain if m.kind != "restate"][-1]

    def holder_clause(m: Mention) -> str:
        return m.attribute.ident.format(v=m.value, a_v=article(m.value))

    single_attr, single_detail, temporal, updates, multi_event, multi_attr = [], [], [], [], [], []
    previous: list[list[Draft]] = []
    for chain in chains:
        a, owner, now = chain[0].attribute, chain[0].owner, current(chain)
        name = people[owner].name
        if now is chain[0]:
            single_attr.append(Draft("single-hop", ask(a.ask, name), now.value, (now.serial,)))
        else:
            values = [m for m in chain if m.kind != "restate"]
            updates.append(
                Draft("knowledge-update", ask(a.ask_now, name), now.value, tuple(m.serial for m in values))
            )
            previous.append(
                [
                    Draft(
                        "previous-value",
                        ask(a.ask_before, name, new=after.value, a_new=article(after.value)),
                        before.value,
                        (before.serial, after.serial),
                    )
                    for before, after in zip(values, values[1:], strict=False)
                ]
            )
        # multi-hop joins only facts told in different sessions: one session window never holds both
        for e in events:
            if e.owner == owner and e.session != now.session:
                past = e.activity.spoken.format(poss=people[owner].poss, d=e.detail)
                who = phrasing.event_ident.format(past=past)
                multi_event.append(Draft("multi-hop", ask(a.ask, who), now.value, (e.serial, now.serial)))
        for other in chains:
            if other is not chain and other[0].owner == owner and current(other).session != now.session:
                ident = current(other)
                text = ask(a.ask, holder_clause(ident))
                multi_attr.append(Draft("multi-hop", text, now.value, (ident.serial, now.serial)))
    for e in events:
        person = people[e.owner]
        base = e.activity.base.format(poss=person.poss)
        answer = resolve_relative_time(e.when, session_days[e.session - 1])
        temporal.append(
            Draft("temporal", ask(phrasing.temporal_ask, person.name, base=base), answer, (e.serial,))
        )
        if e.detail:
            text = e.activity.ask_detail.format(who=person.name, poss=person.poss)
            single_detail.append(Draft("single-hop", text, e.detail, (e.serial,)))

    used_types = {c[0].attribute.key for c in chains}
    used_activities = {e.activity.key for e in events}
    never_attr, never_activity = [], []
    for a in phrasing.attributes:
        if a.key not in used_types and not _mentions_any(dialogue_text, [*a.keywords, *a.values]):
            who = rng.choice(people).name
            never_attr.append(Draft("unanswerable", ask(a.ask, who), UNANSWERABLE_ANSWER, (), True))
    for act in phrasing.activities:
        if act.key not in used_activities and not _mentions_any(dialogue_text, act.keywords):
            person = rng.choice(people)
            text = ask(phrasing.temporal_ask, person.name, base=act.base.format(poss=person.poss))
            never_activity.append(Draft("unanswerable", text, UNANSWERABLE_ANSWER, (), True))
    return {
        "single-hop": [single_attr, single_detail],
        "multi-hop": [multi_event, multi_attr],
        "temporal": [temporal],
        "knowledge-update": [updates],
        "previous-value": previous,  # one group per overturned chain, so picks spread over attributes
        "unanswerable": [never_attr, never_activity],
    }
