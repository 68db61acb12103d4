"""The offline rule note writer (:class:`RuleNoteWriter`): English constructions, step by step.

Its rule tables (first-person attribute constructions, constructions around attribute nouns, past-tense
predicates, relative times via :mod:`memprm.llm.relative_time`) and the writer itself; the notes it returns,
the other writers and ``profile_note`` are in :mod:`memprm.llm.notes`.
"""

from __future__ import annotations

import re
from datetime import datetime

from memprm.data.records import Turn
from memprm.llm.notes import ATTRIBUTE_NAMES, Note, profile_note
from memprm.llm.relative_time import find as find_relative
from memprm.llm.text import STOP_WORDS, is_past_form

# --- the rule set --------------------------------------------------------------------------------------------
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|myself|we|we're|we've|our|us)\b", re.I)
_THIRD_PARTY = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(sister|brother|cousin|uncle|aunt|nephew|niece|neighbou?rs?|friend|friends|"
    r"parents|mum|mom|dad|father|mother|grandmother|grandfather|colleague|coworker|boss|roommate|son|"
    r"daughter|kids|mates?|pals?|buddy)\b|\bfriend of mine\b",
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
NOT_CONTENT = STOP_WORDS | _CHATTER | frozenset("i'm i've i'd i'll it's that's".split())
_FACT_VERBS = frozenset(
    "adopted bought moved started joined visited ran won finished graduated married quit began travelled "
    "traveled went got learned learnt took made painted baked signed launched opened volunteered attended "
    "completed met hiked played built fixed planted watched organised organized sang did tried helped had "
    "read gave sold switched retrained left".split()
)
_LEADING = NOT_CONTENT | {"now", "new"}  # words a captured value never starts with
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_END = (
    r"(?=\s*(?:[,.!?;:]|\s(?:and|but|at|with|by|every|for|in|on|since|so|which|who|as|now|instead|lessons|"
    r"club|match|is getting)\b|$))"
)
_VALUE = rf"(?P<v>[A-Za-z0-9][\w'’\-]*(?:\s+[A-Za-z0-9][\w'’\-]*){{0,3}}?){_END}"
_ART = r"(?:an?\s+|the\s+)?"

_I = r"(?:i|i'm|i am|i've been|i have been)"  # the speaker as the subject of a habitual activity
_NAME = r"(?-i:(?P<v>[A-Z][\w'’\-]*(?:\s+(?:[A-Z][\w'’\-]*|\d+))*))"  # capitalized words, case-sensitive
_ATTR = r"(?-i:(?P<a>(?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]*))"  # the attribute noun phrase of "my <a> is …"

#: (attribute key, pattern): first-person constructions of English that state the speaker's own attribute.
#: A key of ``None`` takes the attribute from the pattern's ``a`` group (its last word is the key, the phrase
#: as said names it in the note: "my go-to drink is kombucha" → key ``drink``, "go-to drink: kombucha").
#: The verb rules map a habitual activity to the attribute English reads off its grammar ("play the X" is an
#: instrument, "play X" a sport or game, "drive a X" a car, "I'm reading X" a book, "dating X" a partner).
PROFILE_PATTERNS: tuple[tuple[str | None, re.Pattern[str]], ...] = tuple(
    (key, re.compile(rx, re.I))
    for key, rx in (
        ("job", r"\bbeing\s+an?\s+(?P<v>[a-z]+(?:\s+[a-z]+)?)\s+(?:means|is|has|keeps|makes|pays)\b"),  # first: ties
        ("job", rf"\b(?:i work as|i'm working as|i am working as|working as|job as|career as|i'm employed as|"
                rf"i became|i'm now|i am now|now i'm|i'm|i am|being|hired as|employed as|taken on as|"
                rf"(?:a|the) (?:post|position|role) as|trained as|qualified as)\s+an?\s+{_VALUE}"),  # fmt: skip
        ("city", rf"\b(?:i live in|i'm living in|i am living in|living in|(?:i |we )?moved (?:from \w+ )?to|"
                 rf"i relocated to|relocated to|i'm based in|based in|settled in|here in|being in|"
                 rf"my (?:new )?(?:place|home|flat|apartment|house) in)\s+{_NAME}"),  # fmt: skip
        ("city", rf"\b(?:made|make|making)\s+{_NAME}\s+(?:my|our)\s+(?:new\s+)?home\b"),
        (None, rf"\bmy\s+{_ATTR}\s+(?:is|was)\s+(?:called\s+|named\s+)?{_ART}{_VALUE}"),
        (None, r"\b(?P<v>(?:[A-Za-z][\w'’\-]*\s+)?[A-Za-z][\w'’\-]*)\s+is my (?:new |current |absolute )?"
               r"(?P<a>(?:favou?rite|go-to|usual)\s+[a-z]+)\b"),  # fmt: skip
        (None, rf"\bmy\s+(?:new\s+)?(?-i:(?P<a>[a-z]+))\s*,?\s+(?:(?:is\s+)?(?:called|named)\s+)?{_NAME}"),
        (None, rf"\b(?:i have|i've got|i own)\s+an?\s+(?:new\s+)?(?-i:(?P<a>[a-z]+))\s+(?:called|named)\s+{_NAME}"),
        (None, rf"\bthe\s+(?-i:(?P<a>[a-z]+))\s+i(?:'m| am)\s+\w+ing(?:\s+(?:right\s+)?now)?\s+is\s+{_ART}{_VALUE}"),
        (None, rf"\b(?:switched|changed)\s+my\s+{_ATTR}\s+from\s+.+?\s+to\s+{_ART}{_VALUE}"),
        ("instrument", rf"\b{_I}\s+(?:(?:learning|starting)\s+to\s+)?(?:play(?:ing)?|practi[sc](?:e|ed|ing))\s+the\s+"
                       rf"{_VALUE}"),  # fmt: skip
        ("instrument", rf"\b(?:practi[sc]ing\s+the|(?:taken|took|picked)\s+up\s+the)\s+{_VALUE}"),
        ("sport", rf"\b{_I}\s+play(?:ing)?\s+{_VALUE}"),
        ("car", rf"\b(?:i drive|i'm driving|i am driving)\s+{_ART}{_VALUE}"),
        ("book", rf"\b(?:i'm|i am)\s+(?:reading|re-reading)\s+{_VALUE}"),
        ("learning", rf"\b(?:i'm|i am|i've been|i started|started)\s+(?:learning|studying)\s+{_VALUE}"),
        ("learning", rf"\b(?:have|take|taking|started|attend|attending)\s+{_NAME}\s+(?:lessons|classes)\b"),
        ("partner", rf"\b(?:i'm|i am)\s+(?:dating|seeing|engaged to|married to)\s+(?:someone\s+(?:called|named)\s+)?"
                    rf"{_NAME}"),  # fmt: skip
        ("drink", rf"\b{_I}\s+(?:drink|drinking|sip|sipping)\s+{_ART}{_VALUE}"),
    )
)
#: common English nouns for a person's own attributes (possessions, tastes, occupation, home, pursuits,
#: relationships) → the key a note files them under. Not the data's attribute list: a noun from here lets
#: the constructions of :data:`NOUN_PATTERNS` read a value that has no grammar of its own around it
#: ("my favourite drink, kombucha", "the instrument I love most is the ukulele").
ATTRIBUTE_NOUNS = {
    **dict.fromkeys("food dish meal snack cuisine".split(), "food"),
    **dict.fromkeys("drink beverage".split(), "drink"),
    **dict.fromkeys("book novel".split(), "book"),
    **dict.fromkeys("car vehicle".split(), "car"),
    **dict.fromkeys("dog puppy pup".split(), "dog"),
    **dict.fromkeys("cat kitten".split(), "cat"),
    **dict.fromkeys("city town hometown".split(), "city"),
    **dict.fromkeys("job career profession occupation".split(), "job"),
    **dict.fromkeys(["instrument"], "instrument"),
    **dict.fromkeys(["language"], "language"),
    **dict.fromkeys("sport team".split(), "sport"),
    **dict.fromkeys("partner girlfriend boyfriend husband wife fiance fiancee".split(), "partner"),
    **dict.fromkeys("pet bike motorbike band song album show series film movie hobby colour color subject".split(), None),
}
_NOUN = r"(?P<a>" + "|".join(sorted(ATTRIBUTE_NOUNS, key=len, reverse=True)) + r")"
_QUAL = r"(?:(?:new|favou?rite|usual|current|top|go-to|absolute|latest|main|beloved|own)\s+)*"
_TAIL = r"(?=\s*(?:[,.!?;:]|$))"  # the value closes the clause
_SHORT = rf"(?P<v>[A-Za-z0-9][\w'’\-]*(?:\s+[A-Za-z0-9][\w'’\-]*){{0,2}}){_TAIL}"

#: (pattern) English constructions around an attribute noun of :data:`ATTRIBUTE_NOUNS` that state the
#: speaker's value: apposition either way ("my favourite drink, kombucha"; "chai, my drink of choice"), a
#: colon ("a new partner in the picture: Rowan"), a cleft either way ("the instrument I love most is the
#: ukulele"; "dumplings is now the food I crave most"), "X … as my top food", and a name after "called".
NOUN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(rx, re.I)
    for rx in (
        rf"\b(?:my|a|an|the)\s+{_QUAL}{_NOUN}(?:\s+of\s+choice)?\s*,\s+(?:an?\s+|the\s+)?{_SHORT}",
        rf"^(?:[\w'’]+\s+){{0,8}}?(?:an?\s+|the\s+)?(?P<v>[A-Za-z][\w'’\-]*(?:\s+[A-Za-z0-9][\w'’\-]*)?)\s*,\s+"
        rf"my\s+{_QUAL}{_NOUN}(?:\s+of\s+choice)?{_TAIL}",
        rf"\b{_NOUN}\b[^:.!?]*:\s+(?:an?\s+|the\s+)?(?P<v>[A-Za-z0-9][\w'’\-]*(?:\s+[A-Za-z0-9][\w'’\-]*){{0,4}}){_TAIL}",
        rf"\bthe\s+{_NOUN}\s+(?:that\s+)?(?:i|i'd|i'm|i've|i'll)\s+[^,;:.!?]*?\bis\s+(?:an?\s+|the\s+)?{_SHORT}",
        rf"(?P<v>[A-Za-z][\w'’\-]*)\s+(?:is|are)\s+(?:now\s+|still\s+)?(?:the|my)\s+{_QUAL}{_NOUN}\s+"
        rf"(?:that\s+)?(?:i|i'd|i'm|i've)\b",
        rf"(?P<v>[A-Za-z][\w'’\-]*)\s+(?:has|have)\s+(?:\w+\s+){{0,2}}as\s+my\s+{_QUAL}{_NOUN}\b",
        rf"\b(?:a|my)\s+{_QUAL}{_NOUN}\b[^,;:.!?]{{0,20}}?\b(?:called|named)\s+{_NAME}",
        r"\b(?:i'm|i am|i play)\s+(?:on|in|for)\s+(?:a|the|our)\s+(?P<v>[a-z]+)\s+(?P<a>team)\b",
        r"\ba\s+(?:game|match)\s+of\s+(?P<v>[a-z]+)\b[^.!?]*\b(?P<a>sport)\b",
    )
)
#: a verb that introduces the value after a colon ("A new sport for me: I've taken up rugby").
_TAKE_UP = re.compile(
    r"^(?:(?:i've|i have|i'm|i am|i|we've|we)\s+)?(?:just\s+)?(?:taken up|took up|take up|signed up for|started|"
    r"moved on to|switched to|learning|playing|reading|driving|dating)\s+(?:an?\s+|the\s+)?",
    re.I,
)
#: English words that open a phrase but never name an attribute or its value ("my point is", "I'm a bit …").
_NOT_ATTRIBUTE = frozenset(
    "point guess bad plan idea problem question answer thing way day week weekend time life head mind bit lot "
    "little huge big total real fan mess wreck sort kind type favourite favorite usual".split()
)


#: fact verbs too common to mark an event without a relative time expression ("I had no idea").
_WEAK_VERBS = frozenset(
    "had got did made took went tried read met left gave put let set kept felt thought knew saw heard found".split()
)
#: "I / we" (an adverb may intervene) and the next word: the candidate verb of a first-person predicate.
_SUBJECT_VERB = re.compile(
    r"\b(?:i|we)\s+(?:(?:just|finally|actually|also|really|even|then|once|recently|first|only|somehow)\s+)?"
    r"(?P<verb>[a-z]+)\b",
    re.I,
)
#: a clause that continues the previous one's predicate with no subject of its own ("and finished in …").
_CONTINUATION = re.compile(r"^(?:and|then|before|after)\s+(?!i\b|we\b|it\b|let\b)[a-z]+ed\b", re.I)


def _past_predicate(clause: str) -> str | None:
    """The past-tense verb of a first-person predicate in ``clause`` ("I finally fixed …" → "fixed"): a fact
    verb, an irregular past form, or a regular -ed form ("need", "used to" are not)."""
    for m in _SUBJECT_VERB.finditer(clause):
        v = m.group("verb").lower()
        if v in _FACT_VERBS or (is_past_form(v, ambiguous=True) and v != "used"):
            return v
    return None


def _profile_value(text: str, dated: bool = False) -> tuple[str, str, str] | None:
    """The last (key, attribute name, value) a first-person attribute pattern finds in ``text`` (step 3); a
    construction around an attribute noun (:data:`NOUN_PATTERNS`) comes first, unless the sentence is
    ``dated`` (it has a relative time expression: "I adopted a kitten named Mochi two days ago" is an event)."""
    for rx in () if dated else NOUN_PATTERNS:
        for m in rx.finditer(text):
            words = _TAKE_UP.sub("", m.group("v").strip(" '’")).split()
            while words and words[0].lower() in _LEADING | _NOT_ATTRIBUTE:
                words.pop(0)
            value = " ".join(words)
            noun = m.group("a").lower()
            if value and value.lower() not in NOT_CONTENT and value.lower() not in ATTRIBUTE_NOUNS:
                key = ATTRIBUTE_NOUNS[noun] or noun
                return key, ATTRIBUTE_NAMES.get(key, key), value
    best: tuple[tuple[bool, int], str, str, str] | None = None
    for key, rx in PROFILE_PATTERNS:
        for m in rx.finditer(text):
            words = m.group("v").strip(" '’").split()
            if words and words[0].lower() in _NOT_ATTRIBUTE:  # "I'm a bit tired", "my guess is …"
                continue
            while words and words[0].lower() in _LEADING | _NOT_ATTRIBUTE:
                words.pop(0)
            value = " ".join(words)
            if not value or value.lower() in NOT_CONTENT or any(w.lower() in _NOT_ATTRIBUTE for w in words):
                continue
            if key is None:
                phrase = m.group("a").lower().split()
                if phrase[-1] in NOT_CONTENT | _NOT_ATTRIBUTE or _THIRD_PARTY.search(f"my {phrase[-1]}"):
                    continue
                if words[0].lower().endswith("ing"):  # "my street is selling …": a verb, not a value
                    continue
                k, name = phrase[-1], " ".join(phrase)
            else:
                k, name = key, ATTRIBUTE_NAMES.get(key, key)
            # an attribute English names (a keyed rule, a noun of ATTRIBUTE_NOUNS) outranks any other noun
            # ("Being a designer means my calendar is packed" is about the job); then the last one wins
            rank = (key is not None or k in ATTRIBUTE_NOUNS, m.start("v"))
            if best is None or rank > best[0]:
                best = (rank, k, name, value)
    return None if best is None else best[1:]


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


def _own_statements(sentence: str) -> str:
    """``sentence`` without its clauses about others (step 2), each kept clause with the mark that closed it."""
    parts = re.split(r"([,;:])", sentence)  # clause, mark, clause, mark, …
    kept = [(c.strip(), m) for c, m in zip(parts[::2], [*parts[1::2], ""], strict=True) if c.strip()]
    return " ".join(f"{c}{m}" for c, m in kept if not _about_others(c)).rstrip(",;: ")


_SUBJECT = re.compile(r"\b(i|i'm|i've|i'd|i'll|we|we're|we've)\b", re.I)


def _about_others(clause: str) -> bool:
    """A clause whose only first-person words belong to a relative or friend ("My sister works as …")."""
    return bool(_THIRD_PARTY.search(clause)) and not _SUBJECT.search(clause)


def _keep(clause: str) -> bool:
    """Step 2: a first-person clause with a content word outside the chatter lexicon, not about others."""
    if not _FIRST_PERSON.search(clause) or _about_others(clause):
        return False
    words = [w.lower() for w in WORD.findall(clause)]
    return any(w not in NOT_CONTENT for w in words)


class RuleNoteWriter:
    """The offline note writer: a real, deterministic rule set, step by step.

    1. *Sentences and clauses.* The turn is split into sentences (``.``, ``!``, ``?``) and each sentence into
       clauses at ``,``, ``;`` and ``:``. Questions are dropped whole, except a tag question ("…, did you
       know?": a last clause of at most four words), which keeps its statement.
    2. *Small talk and fillers dropped.* A clause is kept only when it has a first-person word (I, my, me,
       we, our …) and a content word outside a lexicon of discourse markers, sentiment and chit-chat words
       ("guess", "tell", "fun", "buzzing", "honestly" …). Statements whose subject is somebody else (my
       sister, my cousin, our neighbours …) describe a third party, not a speaker, and are dropped too.
    3. *Profile facts, current-state form.* A kept clause that matches one of the English constructions of
       :data:`PROFILE_PATTERNS` becomes ``"<Speaker>'s <attribute>: <X> (as of <session date>)"`` in the
       profile layer, key ``<Speaker>/<attribute>``: a possessive copula ("my go-to drink is X", "X is my
       favourite food"), a name in apposition ("my dog Milo", "a cat named X"), a cleft ("the book I'm reading
       is X"), a change ("I switched my X from A to B"), an occupation ("I work as / I'm a(n) X"), a residence
       ("I live in / moved to / my flat in <Name>") or a habitual activity ("I play the X" → instrument,
       "I drive a X" → car, "I'm dating <Name>" → partner). The attribute is the phrase's own noun, so no
       list of the data's attributes is needed. When a clause names an old and a new value ("I quit being a
       nurse, and now I work as a teacher"), the last match in the turn wins: a change is stated old-then-new.
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
            if sentence.rstrip().endswith("?"):  # a question; but "I'm a nurse by trade, did you know?" states
                head, _, tag = sentence.rstrip(" ?").rpartition(",")
                sentence = head if head and len(tag.split()) <= 4 else ""
            if not sentence:
                continue
            kept = [c for c in _clauses(sentence.rstrip(".!")) if _keep(c)]
            if not kept:
                continue
            dated = said_on is not None and find_relative(sentence, said_on) is not None
            profile = _profile_value(_own_statements(sentence), dated)
            if profile is not None:
                key, name, value = profile
                note = profile_note(speaker, key, value, said_on, name=name)
                out = [n for n in out if n.key != note.key]  # the last statement of an attribute wins
                out.append(note)
                continue
            event = self._event(sentence.rstrip(".!"), kept, speaker, said_on)
            if event is not None:
                out.append(event)
        return tuple(out)

    @staticmethod
    def _event(sentence: str, clauses: list[str], speaker: str, said_on: datetime | None) -> Note | None:
        hit = find_relative(sentence, said_on) if said_on else None
        first = next((i for i, c in enumerate(clauses) if _past_predicate(c)), None)
        if first is None:
            if hit is None or not any(_FIRST_PERSON.search(c) for c in clauses):
                return None
            first = 0
        elif hit is None and _past_predicate(clauses[first]) in _WEAK_VERBS:
            return None
        body_clauses = [clauses[first]]
        for c in clauses[first + 1 :]:  # "…, and finished in two hours": the same subject's next predicate
            if not _CONTINUATION.match(c):
                break
            body_clauses.append(c)
        text = " ".join(body_clauses)
        own = find_relative(text, said_on) if said_on else None
        if own is not None:  # the date is said inside the event's own clause: cut it out
            text = (text[: own[0]] + text[own[1] :]).strip()
        lead = ""
        if hit is not None:
            resolved = hit[2]
            lead = f"In {resolved}, " if resolved.startswith("the ") else f"On {resolved}, "
        body = _LEAD.sub("", resolve_first_person(text, speaker)).strip(" ,")
        body = re.sub(r"\s+", " ", body).rstrip(" ,.!")
        if not body:
            return None
        return Note("event", "", f"{lead}{body}.")
