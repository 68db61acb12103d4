"""Shared text utilities: LoCoMo's answer normalization, answer tokens, a Porter stemmer, stop words, words.

Answers are compared as LoCoMo's scorer (``task_eval/evaluation.py``) compares them: normalized
(:func:`normalize_answer`), then stemmed with Porter's algorithm (:func:`stem`, written here because nltk is
not a dependency); :func:`answer_tokens` is the multiset token F1 is computed over. Where and why these
depart from upstream is on each function.
"""

from __future__ import annotations

import re
import string
import unicodedata

_ASCII_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str) -> str:
    """LoCoMo's answer normalization: ``"The Dog, Biscuit!"`` -> ``"dog biscuit"``.

    It follows LoCoMo's scorer (``task_eval/evaluation.py``): lowercase, delete punctuation, delete the words
    *a*, *an*, *the* **and** *and* (upstream's regex has ``and`` too), collapse whitespace. Punctuation is
    ASCII ``string.punctuation`` as upstream, plus every Unicode punctuation character (curly quotes, dashes,
    ellipses), which upstream would keep; that only makes ``Caroline’s`` equal ``Caroline's``. Deleting
    punctuation joins words (``don't`` -> ``dont``, ``me-time`` -> ``metime``), exactly as upstream.
    """
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if not _is_punct(ch))
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def answer_tokens(text: str) -> list[str]:
    """Normalized, stemmed tokens of an answer: the multiset token F1 is computed over."""
    return [stem(w) for w in normalize_answer(text).split()]


# --- Porter stemmer -----------------------------------------------------------------------------------------
_VOWELS = frozenset("aeiou")
_IRREGULAR = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}
_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("abli", "able"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _cons(w: str, i: int) -> bool:
    """Is ``w[i]`` a consonant? ``y`` is one at the start or after a vowel."""
    if w[i] in _VOWELS:
        return False
    return w[i] != "y" or i == 0 or not _cons(w, i - 1)


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``[C](VC)^m[V]``."""
    m, prev_vowel = 0, False
    for i in range(len(stem_)):
        vowel = not _cons(stem_, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _cons(stem_, i) for i in range(len(stem_)))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    """Porter's ``*o``: ``w`` ends consonant-vowel-consonant, the last not ``w``, ``x`` or ``y`` (``hop``);
    or, as nltk's default mode, ``w`` is two letters, a vowel then a consonant (``on``, ``us``, ``at``, any
    consonant), so ``one``, ``use``, ``ate`` keep their ``e`` and ``used`` becomes ``use``."""
    n = len(w)
    if n == 2:
        return not _cons(w, 0) and _cons(w, 1)
    return n >= 3 and _cons(w, n - 3) and not _cons(w, n - 2) and _cons(w, n - 1) and w[-1] not in "wxy"


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    """The longest matching suffix's rule, applied if the stem's measure exceeds ``min_m``; one rule only."""
    for suffix, repl in sorted(rules, key=lambda r: -len(r[0])):
        if w.endswith(suffix):
            base = w[: len(w) - len(suffix)]
            return base + repl if _measure(base) > min_m else w
    return w


def _step1(w: str) -> str:
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("ies", "ied")):
        w = w[:-1] if len(w) == 4 else w[:-2]  # ties -> tie, ponies -> poni
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith(("ed", "ing")):
        base = w[:-2] if w.endswith("ed") else w[:-3]
        if _has_vowel(base):
            w = base
            if w.endswith(("at", "bl", "iz")):
                w += "e"
            elif _double_cons(w) and w[-1] not in "lsz":
                w = w[:-1]
            elif _measure(w) == 1 and _cvc(w):
                w += "e"
    if w.endswith("y") and len(w) > 2 and _cons(w, len(w) - 2):
        w = w[:-1] + "i"
    return w


def stem(word: str) -> str:
    """Porter stem of a lowercase word: ``running`` -> ``run``.

    Upstream stems answer tokens with nltk's ``PorterStemmer`` (nltk is not a dependency here). This is
    Porter's 1980 algorithm (steps 1a-5b) written from the paper, with the nltk default mode's best-known
    departures: words of up to two letters are left alone, a few irregular words are looked up (``dying`` ->
    ``die``, ``news``), ``-ies``/``-ied`` on four-letter words keep ``ie`` (``ties`` -> ``tie``), ``y``
    becomes ``i`` only after a consonant that is not the word's first letter (``say`` stays), and a
    two-letter stem vowel-consonant counts as ``*o`` (``one``, ``use``, ``ate`` keep their ``e``). nltk has a few
    more rules (e.g. for ``-fulli``, ``-lessli``, ``-logi``), so rare words may stem differently.
    """
    if len(word) <= 2:
        return word
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    w = _replace(_replace(_step1(word), _STEP2, 0), _STEP3, 0)
    for suffix in sorted(_STEP4, key=len, reverse=True):
        if w.endswith(suffix):
            base = w[: len(w) - len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    if w.endswith("e"):
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            w = base
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


# --- stop words and words -----------------------------------------------------------------------------------
#: English function words (articles, pronouns, auxiliaries, prepositions, conjunctions, a few fillers), used
#: to find content words; the answer scorer does not use them.
STOP_WORDS = frozenset(
    "a an the and or but nor so yet if then than because as while until of at by for with about against "
    "between into through during before after above below to from up down in out on off over under again "
    "further once here there when where why how all any both each few more most other some such no not only "
    "own same too very can will just should could would may might must shall do does did doing done have has "
    "had having be is are was were been being am i me my mine myself we us our ours ourselves you your yours "
    "yourself he him his himself she her hers herself it its itself they them their theirs themselves what "
    "which who whom whose this that these those also really just even still ever oh ok okay well like".split()
)

#: a word: a number (``18th``, ``3.5``, ``10:30``) or letters and digits joined by ``'``/``’``/``-``, plus a
#: trailing ``+`` (``LGBTQ+``). A possessive ``'s`` stays part of the word.
WORD = re.compile(r"\d+(?:[.,:]\d+)*(?:st|nd|rd|th)?\b|[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*\+*")


def word_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of the words of ``text``, in order."""
    return [m.span() for m in WORD.finditer(text)]


#: English irregular past-tense forms spelled unlike the present ("went", "caught"); ``AMBIGUOUS_PAST`` are
#: spelled like it ("read", "put"), so only a subject before them says they are past.
IRREGULAR_PAST = frozenset(
    "went came saw took made got gave found ran won began bought brought caught taught built sent spent left met "
    "kept slept swam sang drove rode wrote ate drank flew fell felt held heard lost paid sat sold stood told wore "
    "woke dug hung led lit shot spoke threw chose forgot froze grew knew hid broke blew drew fought struck stuck "
    "swung tore did had thought".split()
)
AMBIGUOUS_PAST = frozenset("read put set cut hit let quit shut".split())


def is_past_form(word: str, *, ambiguous: bool = False) -> bool:
    """An English past-tense verb form: regular (-ed, not -eed: "painted", not "need") or irregular
    (:data:`IRREGULAR_PAST`, plus :data:`AMBIGUOUS_PAST` when ``ambiguous``); no part-of-speech model.

    >>> [is_past_form(w) for w in ("painted", "caught", "need", "read")], is_past_form("read", ambiguous=True)
    ([True, True, False, False], True)
    """
    w = word.lower()
    if w in IRREGULAR_PAST or (ambiguous and w in AMBIGUOUS_PAST):
        return True
    return len(w) > 4 and w.endswith("ed") and not w.endswith("eed")
