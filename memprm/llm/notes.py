"""Note writers: a turn → short, self-contained notes, the content a manager's Write / Merge stores.

The verbatim layer keeps every turn word for word; the managed layers are an index and a compressed
organization on top of it (paper §2, §4.8). A note is what a managed entry should hold instead of a copy of
the turn: one fact, the speaker named, the date absolute. Every writer returns ``Note(layer, key, text)``
tuples in the order the turn states them; ``layer`` says which gate (event / profile) the note is for.

Writers: :class:`RuleNoteWriter` (offline, deterministic; its rules are on the class),
:class:`OracleNoteWriter` (the data's fact annotations; analysis only, never a default) and
:class:`LLMNoteWriter` (an OpenAI-compatible model).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, Protocol

from memprm.configtools import ConfigError
from memprm.data.records import Turn
from memprm.llm.relative_time import find as find_relative
from memprm.llm.relative_time import format_date
from memprm.llm.text import STOP_WORDS

NOTE_LAYERS = ("event", "profile")


@dataclass(frozen=True)
class Note:
    layer: str  # "event" | "profile": the gate this note is written at
    key: str  # profile: "<person>/<attribute>" ("Ana/job"); events: ""
    text: str


class NoteWriter(Protocol):
    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        """The notes of ``turn``, said on ``said_on`` (the session date; None when unknown)."""
        ...


@dataclass(frozen=True)
class NoteWriterConfig:
    #: ``rules`` (offline :class:`RuleNoteWriter`), ``llm`` (an endpoint, ``llm.notes``) or ``oracle``
    #: (the data's fact annotations; analysis only, never a default: ``fit`` refuses it, see
    #: :func:`refuse_oracle_notes`).
    kind: str = "rules"

    def __post_init__(self) -> None:
        if self.kind not in ("rules", "llm", "oracle"):
            raise ValueError(f"notes.kind must be 'rules', 'llm' or 'oracle', got {self.kind!r}")


def refuse_oracle_notes(cfg: NoteWriterConfig) -> None:
    """Raises :class:`~memprm.configtools.ConfigError` (one line) when ``cfg.kind`` is ``oracle``: the oracle
    writer reads the data's fact annotations, so it may serve ``tools/policy_gap.py``'s analysis but never a
    run that trains, reports or measures a manager's training signal (``fit``, ``tools/reward_alignment.py``)."""
    if cfg.kind == "oracle":
        raise ConfigError(
            "notes.kind=oracle writes the data's fact annotations as notes and is only for tools/policy_gap.py; "
            "use notes.kind=rules or notes.kind=llm to train, test or measure a manager"
        )


def notes_for(writer: NoteWriter, turn: Turn, timestamp: str | None, layer: str) -> tuple[Note, ...]:
    """The notes ``writer`` gives ``turn`` for one gate's ``layer`` (``timestamp``: the session's ISO date)."""
    said_on = datetime.fromisoformat(timestamp) if timestamp else None
    return tuple(n for n in writer.notes(turn, said_on) if n.layer == layer)


class CachedNotes:
    """Memoizes a writer on (turn id, text, date): a turn opens one gate per layer, and forks replay it."""

    def __init__(self, writer: NoteWriter, max_size: int = 100_000):
        self.writer, self.max_size = writer, max_size
        self._memo: dict[tuple[str, str, str], tuple[Note, ...]] = {}

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        key = (turn.id, turn.render, said_on.isoformat() if said_on else "")
        out = self._memo.get(key)
        if out is None:
            if len(self._memo) >= self.max_size:
                self._memo.clear()
            out = self._memo[key] = tuple(self.writer.notes(turn, said_on))
        return out


# --- the rule set --------------------------------------------------------------------------------------------
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|myself|we|we're|we've|our|us)\b", re.I)
_THIRD_PARTY = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(sister|brother|cousin|uncle|aunt|nephew|niece|neighbou?rs?|friend|friends|"
    r"parents|mum|mom|dad|father|mother|grandmother|grandfather|colleague|coworker|boss|roommate|son|"
    r"daughter|kids)\b|\bfriend of mine\b",
    re.I,
)
_CHATTER = frozenset(
    "guess tell news side oh wow honestly really totally so much fun buzzing exhausting worth expected "
    "experience smiling stop love loved great awesome amazing lovely nice cool happy glad excited crazy wild "
    "again better best ever still just actually basically literally believe know think guess hey hi thanks "
    "thank okay ok yeah yes no well anyway though big change alert twist plot meet family member new "
    "weirdly attached pretty full keeps toes kind perks something going always usual tired days shift "
    "long hard but how goes can't cannot don't won't stop smiling must idea".split()
)
#: words that carry no fact: the project's stop words, contractions, and the chatter lexicon above.
_NOT_CONTENT = STOP_WORDS | _CHATTER | frozenset("i'm i've i'd i'll it's that's".split())
_FACT_VERBS = frozenset(
    "adopted bought moved started joined visited ran won finished graduated married quit began travelled "
    "traveled went got learned learnt took made painted baked signed launched opened volunteered attended "
    "completed met hiked played built fixed planted watched organised organized sang did tried helped had "
    "read gave sold switched retrained left".split()
)
_LEADING = _NOT_CONTENT | {"now", "new"}  # words a captured value never starts with
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_END = (
    r"(?=\s*(?:[,.!?;:]|\s(?:and|but|at|with|every|for|in|on|since|so|which|who|as|now|instead|lessons|"
    r"club|match|is getting)\b|$))"
)
_VALUE = rf"(?P<v>[A-Za-z0-9][\w'’\-]*(?:\s+[A-Za-z0-9][\w'’\-]*){{0,3}}?){_END}"
_ART = r"(?:an?\s+|the\s+)?"

#: (attribute key, pattern): first-person constructions stating the speaker's own attribute value.
PROFILE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(rx, re.I))
    for key, rx in (
        ("job", rf"\b(?:i work as|working as|job as|now i'm|shift as|being)\s+an?\s+{_VALUE}"),
        (
            "city",
            rf"\b(?:i live in|living in|moved (?:from \w+ )?to|settled in|new place in|here in|being in)\s+{_VALUE}",
        ),
        ("dog", rf"\b(?:(?:my|a|new) dog (?:called|named|is called)|my dog)\s+{_VALUE}"),
        ("food", rf"\b(?:favou?rite food is|nothing beats|favou?rite food, it would be)\s+{_VALUE}"),
        ("food", r"\b(?P<v>(?:[A-Za-z][\w'’\-]*\s+)?[A-Za-z][\w'’\-]*)\s+is my (?:new )?favou?rite food"),
        ("partner", rf"\b(?:partner is called|dating someone called|my partner,?|dating)\s+{_VALUE}"),
        (
            "car",
            rf"\b(?:i drive|my car is|bought|car alert: i got|i got)\s+{_ART}{_VALUE}(?=\s+as my car|\s*[.!]?\s*$|,? it's)",
        ),
        ("car", rf"\b(?:i drive|my car is|bought)\s+{_ART}{_VALUE}"),
        (
            "instrument",
            rf"\b(?:playing the|play the|instrument is the|learning the|practi[sc]ed the|it's the)\s+{_VALUE}",
        ),
        ("drink", rf"\b(?:go-to drink is|drink from \w+(?: \w+)? to|without my|sipping)\s+{_ART}{_VALUE}"),
        ("book", rf"\b(?:i'm reading|reading right now is|my way through)\s+{_VALUE}"),
        ("language", rf"\b(?:i'm learning|started learning|signed up for|project this year is)\s+{_VALUE}"),
        ("language", r"\bmy (?P<v>[A-Z][a-z]+) is getting better"),
        ("sport", rf"\b(?:i play|playing|joined an?|my sport is|had a great)\s+{_VALUE}"),
    )
)
#: how a profile note names its attribute (default: the key itself).
ATTRIBUTE_NAMES = {
    "city": "home city",
    "food": "favourite food",
    "drink": "go-to drink",
    "book": "current book",
}


#: fact verbs too common to mark an event without a relative time expression ("I had no idea").
_WEAK_VERBS = frozenset("had got did made took went tried read met left gave".split())


def _profile_value(text: str) -> tuple[str, str] | None:
    """The last (key, value) a first-person attribute pattern finds in ``text`` (see step 3)."""
    best: tuple[int, str, str] | None = None
    for key, rx in PROFILE_PATTERNS:
        for m in rx.finditer(text):
            words = m.group("v").strip(" '’").split()
            while words and words[0].lower() in _LEADING:
                words.pop(0)
            value = " ".join(words)
            if not value or value.lower() in _NOT_CONTENT:
                continue
            if best is None or m.start("v") > best[0]:
                best = (m.start("v"), key, value)
    return None if best is None else (best[1], best[2])


_PRONOUNS = (
    (r"\bi'm\b", "{n} is"),
    (r"\bi've\b", "{n} has"),
    (r"\bi'd\b", "{n} would"),
    (r"\bi'll\b", "{n} will"),
    (r"\bi am\b", "{n} is"),
    (r"\bmyself\b", "{n}"),
    (r"\bmine\b", "{n}'s"),
    (r"\bmy\b", "{n}'s"),
    (r"\bme\b", "{n}"),
    (r"\bwe're\b", "{n} and others are"),
    (r"\bour\b", "{n}'s"),
    (r"\bwe\b", "{n} and others"),
    (r"\bus\b", "{n} and others"),
    (r"\bi\b", "{n}"),
)
_PRONOUN_RX = tuple((re.compile(p, re.I), r) for p, r in _PRONOUNS)
_LEAD = re.compile(
    r"^(?:(?:so|and|but|oh|well|okay|ok|also|then|anyway|guess what|big news from my side)\b[\s,!]*)+", re.I
)


def resolve_first_person(text: str, speaker: str) -> str:
    """``"I adopted my dog"`` said by Ana → ``"Ana adopted Ana's dog"`` (step 4)."""
    for rx, repl in _PRONOUN_RX:
        text = rx.sub(repl.format(n=speaker), text)
    return text


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in re.split(r"[,;:]", sentence) if c.strip()]


_SUBJECT = re.compile(r"\b(i|i'm|i've|i'd|i'll|we|we're|we've)\b", re.I)


def _about_others(clause: str) -> bool:
    """A clause whose only first-person words belong to a relative or friend ("My sister works as …")."""
    return bool(_THIRD_PARTY.search(clause)) and not _SUBJECT.search(clause)


def _keep(clause: str) -> bool:
    """Step 2: a first-person clause with a content word outside the chatter lexicon, not about others."""
    if not _FIRST_PERSON.search(clause) or _about_others(clause):
        return False
    words = [w.lower() for w in _WORD.findall(clause)]
    return any(w not in _NOT_CONTENT for w in words)


class RuleNoteWriter:
    """The offline note writer: a real, deterministic rule set, step by step.

    1. *Sentences and clauses.* The turn is split into sentences (``.``, ``!``, ``?``) and each sentence into
       clauses at ``,``, ``;`` and ``:``. Questions are dropped whole.
    2. *Small talk and fillers dropped.* A clause is kept only when it has a first-person word (I, my, me,
       we, our …) and a content word outside a lexicon of discourse markers, sentiment and chit-chat words
       ("guess", "tell", "fun", "buzzing", "honestly" …). Statements whose subject is somebody else (my
       sister, my cousin, our neighbours …) describe a third party, not a speaker, and are dropped too.
    3. *Profile facts, current-state form.* A kept clause that matches one of the attribute patterns of
       :data:`PROFILE_PATTERNS` (first-person constructions such as "I work as a(n) X", "I moved to X", "my
       dog called X", "X is my favourite food") becomes ``"<Speaker>'s <attribute>: <X> (as of <session
       date>)"`` in the profile layer, key ``<Speaker>/<attribute>``. When a clause names an old and a new
       value ("I quit being a nurse, and now I work as a teacher"), the last match in the turn wins: a change
       is stated old-then-new.
    4. *Events, dated.* Otherwise a kept clause with a past-tense fact verb or a relative time expression
       becomes an event note: the first relative expression ("yesterday", "last Friday", "two days ago", …;
       :mod:`memprm.llm.relative_time`) is cut out and resolved against the session date, first person is
       resolved to the speaker's name ("I" → "Ana", "my" → "Ana's", "I'm" → "Ana is"), and the date leads:
       ``"On 7 May 2023, Ana ran a half marathon and finished in two hours."`` (``"In the week before …"`` for
       "last week"). Events have no key (two different events are no copies of each other). Consecutive kept
       event clauses of one sentence stay one note.

    A turn with no kept clause yields no note (``()``): the manager's only sensible action there is Noop. The
    rules are written for conversational English and are a baseline: they miss facts phrased in ways they do
    not know, and they never invent one.
    """

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        speaker = turn.speaker
        out: list[Note] = []
        for sentence in re.split(r"(?<=[.!?])\s+", turn.text.strip()):
            if not sentence or sentence.rstrip().endswith("?"):
                continue
            kept = [c for c in _clauses(sentence.rstrip(".!")) if _keep(c)]
            if not kept:
                continue
            profile = _profile_value(" , ".join(c for c in _clauses(sentence) if not _about_others(c)))
            if profile is not None:
                note = profile_note(speaker, *profile, said_on)
                out = [n for n in out if n.key != note.key]  # the last statement of an attribute wins
                out.append(note)
                continue
            event = self._event(kept, speaker, said_on)
            if event is not None:
                out.append(event)
        return tuple(out)

    @staticmethod
    def _event(clauses: list[str], speaker: str, said_on: datetime | None) -> Note | None:
        text = " ".join(clauses)
        words = [w.lower() for w in _WORD.findall(text)]
        verbs = [w for w in words if w in _FACT_VERBS]
        hit = find_relative(text, said_on) if said_on else None
        if hit is None and not any(v not in _WEAK_VERBS for v in verbs):
            return None
        lead = ""
        if hit is not None:
            start, end, resolved = hit
            text = (text[:start] + text[end:]).strip()
            lead = f"In {resolved}, " if resolved.startswith("the ") else f"On {resolved}, "
        body = _LEAD.sub("", resolve_first_person(text, speaker)).strip(" ,")
        body = re.sub(r"\s+", " ", body).rstrip(" ,.!")
        if not body:
            return None
        return Note("event", "", f"{lead}{body}.")


def profile_note(speaker: str, attribute: str, value: str, said_on: datetime | None) -> Note:
    """The current-state form ``"Ana's job: nurse (as of 7 May 2023)"``, keyed ``"Ana/job"``: one key per
    (person, attribute), so a second Write of the same key is a contradictory copy that should have merged."""
    when = f" (as of {format_date(said_on)})" if said_on else ""
    text = f"{speaker}'s {ATTRIBUTE_NAMES.get(attribute, attribute)}: {value}{when}"
    return Note("profile", f"{speaker}/{attribute}", text)


class OracleNoteWriter:
    """The data's fact annotations as notes (analysis only, never a default).

    It writes the data's own fact annotations (:class:`~memprm.data.records.Fact`: the synthetic generator's
    facts, LoCoMo's ``observation`` lists) as notes; a fact with an attribute ``key`` and ``value`` becomes a
    current-state profile note.
    """

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        out = []
        for f in turn.facts:
            if f.value and not f.key.startswith("event"):
                out.append(profile_note(f.speaker or turn.speaker, f.key, f.value, said_on))
            else:
                out.append(Note("event", "", f.text))
        return tuple(out)


class LLMNoteWriter:
    """Notes from an OpenAI-compatible model (``complete_json``); failures yield no notes, counted.

    The prompt is ``memprm/prompts/note_writer.txt``; the reply is
    ``{"notes": [{"layer": "event"|"profile", "key": str, "text": str}, ...]}``. A failed call yields no notes
    and is counted in ``failed``.
    """

    def __init__(self, client: Any):
        self.client = client
        self.template = (
            resources.files("memprm.prompts").joinpath("note_writer.txt").read_text(encoding="utf-8")
        )
        self.failed = 0

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        date = format_date(said_on) if said_on else "unknown"
        prompt = self.template.format(turn=turn.render, date=date, speaker=turn.speaker)
        result = self.client.complete_json([{"role": "user", "content": prompt}], validate_notes)
        if not isinstance(result, tuple):
            self.failed += 1
            return ()
        return result


def validate_notes(obj: dict) -> tuple[Note, ...]:
    notes = obj.get("notes") if isinstance(obj, dict) else None
    if not isinstance(notes, list):
        raise ValueError(f"expected {{'notes': [...]}}, got {json.dumps(obj)[:200]}")
    out = []
    for i, n in enumerate(notes):
        if not isinstance(n, dict) or n.get("layer") not in NOTE_LAYERS or not str(n.get("text", "")).strip():
            raise ValueError(f"notes[{i}] must be {{'layer': 'event'|'profile', 'key': str, 'text': str}}")
        out.append(Note(n["layer"], str(n.get("key", "")), str(n["text"]).strip()))
    return tuple(out)
