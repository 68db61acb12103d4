"""The blind family's relative time expressions and activity phrasings (see ``phrasing.py``).

Every entry rewords its standard counterpart (``vocabulary.py``) in the same order: an activity keeps its key,
canonical ``past`` (the fact annotation) and details and gets new ``said``, ``base``, ``keywords``, ``topic``
and ``ask_detail`` texts; a relative time keeps its offset. Conventions: ``docs/design/synthetic_data.md``.
"""

from __future__ import annotations

from dataclasses import replace

from memprm.data.synthetic.tuning_vocabulary import reword
from memprm.data.synthetic.vocabulary import ACTIVITIES, WEEKDAYS, Activity, RelativeTime

# the same offsets as RELATIVE_TIMES, in the same order; the weekday comes first here ("Friday just gone")
BLIND_RELATIVE_TIMES: tuple[RelativeTime, ...] = (
    RelativeTime("a few hours ago", days=0),
    RelativeTime("last evening", days=1),
    RelativeTime("a couple of days ago", days=2),
    RelativeTime("3 days ago", days=3),
    RelativeTime("4 days ago", days=4),
    RelativeTime("5 days ago", days=5),
    RelativeTime("seven days ago", days=7),
    *(RelativeTime(f"{w} just gone", weekday=i) for i, w in enumerate(WEEKDAYS)),
    RelativeTime("the week just gone", week=True),
)

_STANDARD = {a.key: a for a in ACTIVITIES}


def _act(
    key: str, said: str, base: str, keywords: tuple[str, ...], topic: str, ask_detail: str = ""
) -> Activity:
    """The standard activity ``key`` in new words; its own keywords, however many (no draw depends on them)."""
    surface = reword(_STANDARD[key], said=said, base=base, topic=topic, ask_detail=ask_detail)
    return replace(surface, keywords=keywords)


# key, said (turns and multi-hop subjects), base ("Around when did {who} ...?"), keywords (words of base said
# nowhere else), topic, detail question
BLIND_ACTIVITIES: tuple[Activity, ...] = (
    _act("marathon", "clocked {d} at a half marathon", "race the half marathon", ("marathon",), "road races",
         "What time did {who} clock at the half marathon?"),
    _act("pottery", "shaped {d} out of clay at a beginners' class", "go to the beginners' clay class", ("clay",),
         "clay work", "What did {who} shape out of clay?"),
    _act("cake", "made {poss} sister {d} as a birthday treat", "make {poss} sister's birthday treat",
         ("birthday",), "baking from scratch", "What sort of cake did {who} treat {poss} sister to?"),
    _act("camping", "roughed it under canvas at {d}", "go on the campout", ("campout",), "wild camping",
         "Where did {who} rough it under canvas?"),
    _act("grandmother", "went round to {poss} gran's place", "go round to {poss} gran's", ("gran",),
         "visiting older relatives"),
    _act("tattoo", "got {d} inked on {poss} wrist", "get inked", ("inked",), "tattoo parlours",
         "What did {who} have inked on {poss} wrist?"),
    _act("concert", "was in the crowd when {d} played", "join the crowd at the show", ("crowd",),
         "sold-out tours", "Who was on stage when {who} was in the crowd?"),
    _act("shelter", "helped out for a shift at an animal rescue centre", "do the shift at the animal rescue",
         ("rescue",), "stray animals"),
    _act("climbing", "got roped up on a climbing wall for the very first time", "get roped up on the climbing wall",
         ("roped",), "scaling cliffs"),
    _act("mural", "painted {d} across the front of the community hall", "decorate the community hall", ("hall",),
         "graffiti art", "What image did {who} put on the front of the community hall?"),
    _act("wedding", "flew out to {d} to watch a mate tie the knot", "see {poss} mate tie the knot", ("knot",),
         "big white weddings", "Where did {who} watch a mate tie the knot?"),
    _act("garden", "set up a few raised beds for veg", "put in the raised beds", ("beds",),
         "homegrown vegetables"),
    _act("skydiving", "did a parachute jump from twelve thousand feet", "do the parachute jump", ("parachute",),
         "freefall thrills"),
    _act("poem", "performed some verses of {poss} own in front of strangers", "share {poss} verses on stage",
         ("verses",), "slam poetry"),
    _act("cooking", "learned to cook {d} food at a class", "learn to cook at the class", ("cook",),
         "fusion cooking", "Which cuisine did {who} learn to cook?"),
    _act("beach", "built sandcastles with {poss} cousins", "build sandcastles with {poss} cousins",
         ("sandcastles",), "coastal holidays"),
    _act("jigsaw", "slotted in the last bit of a thousand-piece puzzle", "finish the big puzzle", ("puzzle",),
         "brain teasers"),
    _act("kitten", "brought a tiny kitten home and named it {d}", "bring the tiny kitten home", ("kitten",),
         "cat adoption", "What name did {who} give the tiny kitten?"),
    _act("brother", "gave {poss} brother's flat a fresh coat of paint", "repaint {poss} brother's flat",
         ("brother",), "doing up flats"),
    _act("hike", "trekked all the way up {d}", "go on the mountain trek", ("trek",), "long walks in the hills",
         "Which peak did {who} trek up?"),
    _act("charity", "ran a cake stall as a fundraiser for a local charity", "run the charity fundraiser",
         ("fundraiser",), "community fundraising"),
    _act("comedy", "caught a stand-up set at a little comedy club", "catch the stand-up set", ("stand-up",),
         "live comedy"),
    _act("trivia", "took first place at the pub quiz", "win at the pub quiz", ("quiz",),
         "general knowledge games"),
    _act("meteor", "lay out on a blanket watching shooting stars", "watch the shooting stars", ("shooting",),
         "astronomy"),
    _act("aquarium", "walked {poss} niece past the shark tanks at the aquarium",
         "bring {poss} niece along to the aquarium", ("aquarium",), "ocean creatures"),
    _act("yoga", "stretched and meditated on a retreat in {d}", "go on the retreat", ("retreat",),
         "wellness breaks", "In which place did {who} stretch and meditate?"),
    _act("birdhouse", "hammered together a nesting box for the garden", "build the nesting box", ("nesting",),
         "DIY projects"),
    _act("kayaking", "went out in a kayak on {d}", "get out in a kayak", ("kayak",), "paddle sports",
         "Which body of water did {who} take the kayak onto?"),
    _act("firstaid", "got a certificate in emergency first aid", "earn the first aid certificate",
         ("certificate",), "CPR and bandaging"),
    _act("market", "bagged {d} at an outdoor produce market", "browse the produce market", ("produce",),
         "seasonal groceries", "What did {who} bag at the produce market?"),
    _act("karaoke", "grabbed the mic with {poss} workmates for a singalong",
         "do the singalong with {poss} workmates", ("singalong",), "belting out power ballads"),
    _act("skating", "laced up some skates and wobbled round the ice", "lace up the ice skates", ("skates",),
         "frozen ponds"),
    _act("museum", "wandered round an exhibit on {d}", "see the exhibit", ("exhibit",), "old artefacts",
         "What subject was the exhibit {who} wandered round?"),
    _act("wine", "tried a flight of wines at a winery", "visit the winery", ("winery",), "wine snobbery"),
    _act("planted", "got a cherry sapling into the ground at {poss} place", "plant the little sapling",
         ("sapling",), "fruit growing"),
    _act("surfing", "had a lesson catching waves on a board", "go catch some waves", ("waves",), "board sports"),
    _act("picnic", "took {poss} mates to the park with a hamper", "bring the hamper to the park", ("hamper",),
         "alfresco lunches"),
    _act("bowling", "bowled a few frames at the lanes with {poss} neighbours",
         "hit the lanes with {poss} neighbours", ("lanes",), "strikes and spares"),
    _act("bicycle", "fixed up a battered old bike", "do up the battered bike", ("bike",), "cycling"),
    _act("escape", "cracked the codes to get out of a locked room with {poss} cousins",
         "get out of the locked room", ("locked",), "clue hunts"),
)  # fmt: skip
