"""Phrasing families: every table of surface text the generator says, selected by ``SyntheticConfig.phrasing``.

``standard`` is the family the offline roles (rule note writer, extractive reader) were partly written
against; ``heldout`` says the same things in sentences nobody writing the roles has seen, so results on it
do not flatter them. All families have tables of the same lengths, so every random draw is the same: a
dialogue of another family is a line-by-line paraphrase of the standard one of the same (config, index), with
the same plan, turn ids, fact annotations, questions' answers and evidence. Only the surface text differs.
``tuning``, new sentences too, is the one the roles may be developed against; ``heldout`` stays unseen.
``blind``, new sentences again, was written after the roles were last changed: it is measured once and never
developed against.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import ModuleType

from memprm.data.synthetic import blind_lines as bl
from memprm.data.synthetic import heldout_lines as hl
from memprm.data.synthetic import lines as sl
from memprm.data.synthetic import tuning_lines as tl
from memprm.data.synthetic.attributes import ATTRIBUTES
from memprm.data.synthetic.blind_attributes import BLIND_ATTRIBUTES
from memprm.data.synthetic.blind_vocabulary import BLIND_ACTIVITIES, BLIND_RELATIVE_TIMES
from memprm.data.synthetic.heldout_attributes import HELDOUT_ATTRIBUTES
from memprm.data.synthetic.heldout_vocabulary import HELDOUT_ACTIVITIES, HELDOUT_RELATIVE_TIMES
from memprm.data.synthetic.tuning_attributes import TUNING_ATTRIBUTES
from memprm.data.synthetic.tuning_vocabulary import TUNING_ACTIVITIES, TUNING_RELATIVE_TIMES
from memprm.data.synthetic.vocabulary import ACTIVITIES, RELATIVE_TIMES, Activity, Attribute, RelativeTime


@dataclass(frozen=True)
class Phrasing:
    """All surface-text tables of one family (what each holds: ``lines.py`` and ``vocabulary.py``)."""

    name: str
    attributes: tuple[Attribute, ...]  # profile attributes with their statement and question templates
    activities: tuple[Activity, ...]  # datable events: surface phrase, question phrase, detail question
    relative_times: tuple[RelativeTime, ...]  # the words an event's date is told with
    event_tells: tuple[str, ...]  # a first-person event turn: {past}, {rel}/{Rel}, maybe {comment}
    comments: tuple[str, ...]  # remarks inside an event turn ({comment} / {Comment})
    greetings: tuple[str, ...]  # a session's first turn ({other})
    greeting_replies: tuple[str, ...]  # its second turn ({other})
    prompts: tuple[str, ...]  # the listener hands the turn back before a fact ({other})
    reactions: dict[str, tuple[str, ...]]  # the listener's reply to an event / state / change / restate
    small_talk: tuple[tuple[str, str], ...]  # plain two-turn distractor exchanges
    topical: tuple[tuple[str, str], ...]  # two-turn distractors about an event's topic ({topic})
    near_miss_replies: tuple[str, ...]  # replies to a passing mention of a value nobody holds
    third_party_replies: tuple[str, ...]  # replies to a third party's statement
    closings: tuple[tuple[str, str], ...]  # a session's last exchange ({other})
    closing_tails: tuple[str, ...]  # one more closing turn when the session has an odd length
    temporal_ask: tuple[str, ...]  # temporal and unanswerable-activity questions ({who}, {base})
    event_ident: str  # multi-hop subject naming an event's owner ({past}: the third-person phrase)


#: the fields a family's lines module holds, each under its upper-case name (``event_tells`` -> ``EVENT_TELLS``)
LINE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Phrasing))[4:]


def family(name: str, attributes, activities, relative_times, lines: ModuleType) -> Phrasing:
    """The family ``name``: its vocabulary tables, and every line table of :data:`LINE_FIELDS` from ``lines``."""
    tables = {f: getattr(lines, f.upper()) for f in LINE_FIELDS}
    return Phrasing(name, attributes, activities, relative_times, **tables)


STANDARD = family("standard", ATTRIBUTES, ACTIVITIES, RELATIVE_TIMES, sl)
TUNING = family("tuning", TUNING_ATTRIBUTES, TUNING_ACTIVITIES, TUNING_RELATIVE_TIMES, tl)
HELDOUT = family("heldout", HELDOUT_ATTRIBUTES, HELDOUT_ACTIVITIES, HELDOUT_RELATIVE_TIMES, hl)
BLIND = family("blind", BLIND_ATTRIBUTES, BLIND_ACTIVITIES, BLIND_RELATIVE_TIMES, bl)

PHRASINGS: dict[str, Phrasing] = {p.name: p for p in (STANDARD, TUNING, HELDOUT, BLIND)}
PHRASING_NAMES: tuple[str, ...] = tuple(PHRASINGS)


def phrasing_tables(name: str) -> Phrasing:
    """The family called ``name`` (one of :data:`PHRASING_NAMES`)."""
    if name not in PHRASINGS:
        raise ValueError(f"unknown phrasing {name!r}; phrasings are {PHRASING_NAMES}")
    return PHRASINGS[name]
