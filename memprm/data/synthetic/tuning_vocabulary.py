"""The tuning family's relative time expressions and activity phrasings (see ``phrasing.py``).

Every entry rewords its standard counterpart (``vocabulary.py``) in the same order: an activity keeps its key,
canonical ``past`` (the fact annotation), details and keywords and gets new ``said``, ``base``, ``topic`` and
``ask_detail`` texts; a relative time keeps its offset. Conventions: ``docs/design/synthetic_data.md``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from memprm.data.synthetic.vocabulary import ACTIVITIES, WEEKDAYS, Activity, Attribute, RelativeTime

_Entry = TypeVar("_Entry", Activity, Attribute)


def reword(standard: _Entry, **surface: str | tuple[str, ...]) -> _Entry:
    """``standard`` with new surface texts; a table keeps its length, so both families draw alike."""
    for name, table in surface.items():
        old = getattr(standard, name)
        if isinstance(old, tuple) and len(table) != len(old):
            raise ValueError(
                f"{standard.key}.{name}: {len(table)} entries, the standard family has {len(old)}"
            )
    return replace(standard, **surface)


# the same offsets as RELATIVE_TIMES, in the same order: said after an event ("I went skydiving today")
TUNING_RELATIVE_TIMES: tuple[RelativeTime, ...] = (
    RelativeTime("today", days=0),
    RelativeTime("last night", days=1),
    RelativeTime("the night before last", days=2),
    RelativeTime("three nights ago", days=3),
    RelativeTime("four nights ago", days=4),
    RelativeTime("five nights ago", days=5),
    RelativeTime("a full week ago", days=7),
    *(RelativeTime(f"on {w}", weekday=i) for i, w in enumerate(WEEKDAYS)),
    RelativeTime("the previous week", week=True),
)

_STANDARD = {a.key: a for a in ACTIVITIES}


def _act(key: str, said: str, base: str, topic: str, ask_detail: str = "") -> Activity:
    return reword(_STANDARD[key], said=said, base=base, topic=topic, ask_detail=ask_detail)


# key, said (turns and multi-hop subjects), base ("On what date did {who} ...?"), topic, detail question
TUNING_ACTIVITIES: tuple[Activity, ...] = (
    _act("marathon", "completed a half marathon in {d}", "complete the half marathon", "running races",
         "How much time did {who} need to complete the half marathon?"),
    _act("pottery", "made {d} at a pottery workshop", "attend the pottery workshop", "ceramics",
         "What did {who} create during the pottery workshop?"),
    _act("cake", "whipped up {d} for {poss} sister's birthday", "make the birthday cake for {poss} sister",
         "cake decorating", "Which cake did {who} make for {poss} sister?"),
    _act("camping", "pitched a tent at {d}", "go on the camping trip", "nights under canvas",
         "Where did {who} set up camp?"),
    _act("grandmother", "dropped in on {poss} grandmother", "pay {poss} grandmother a visit",
         "family elders"),
    _act("tattoo", "had {d} tattooed", "have the tattoo done", "getting inked",
         "What design did {who} choose for the tattoo?"),
    _act("concert", "caught {d} in concert", "attend the concert", "stadium gigs",
         "Which artist did {who} see in concert?"),
    _act("shelter", "helped out at an animal shelter as a volunteer", "do the volunteer shift at the shelter",
         "animal welfare"),
    _act("climbing", "gave rock climbing a first try", "give rock climbing a go", "indoor bouldering"),
    _act("mural", "covered a wall of the community centre with a mural of {d}", "do the community centre mural",
         "public wall art", "What subject did {who} choose for the community centre mural?"),
    _act("wedding", "watched a good friend get married in {d}", "be at the friend's wedding",
         "weddings abroad", "Where did the friend of {who} get married?"),
    _act("garden", "dug out a vegetable patch", "set up the vegetable garden", "allotments"),
    _act("skydiving", "did a tandem skydive", "do the skydiving jump", "adrenaline hobbies"),
    _act("poem", "recited a poem on open mic night", "recite the poem on open mic night",
         "spoken word"),
    _act("cooking", "went along to a {d} cooking workshop", "do the cooking workshop", "learning new recipes",
         "What cuisine did {who} learn at the cooking workshop?"),
    _act("beach", "spent a beach day with {poss} cousins", "have the beach day with {poss} cousins",
         "seaside days out"),
    _act("jigsaw", "completed a thousand-piece jigsaw", "complete the jigsaw", "rainy-day pastimes"),
    _act("kitten", "brought home a kitten called {d}", "take in the kitten", "rescue cats",
         "What did {who} call the new kitten?"),
    _act("brother", "pitched in to paint {poss} brother's flat", "give {poss} brother a hand with the painting",
         "redecorating"),
    _act("hike", "hiked to the top of {d}", "do the mountain hike", "mountain trails",
         "Which summit did {who} reach on the hike?"),
    _act("charity", "put together a bake sale for charity", "run the bake sale for charity", "raising money for good causes"),
    _act("comedy", "saw a stand-up comedy set", "see the comedy show", "comedy clubs"),
    _act("trivia", "won first prize at pub trivia", "come top at the trivia night", "pub quizzes"),
    _act("meteor", "saw a meteor shower light up the sky", "catch the meteor shower", "shooting stars"),
    _act("aquarium", "showed {poss} niece round the aquarium", "visit the aquarium with {poss} niece",
         "marine life"),
    _act("yoga", "joined a yoga retreat held in {d}", "join the yoga retreat", "mindfulness getaways",
         "Where did {who} do the yoga retreat?"),
    _act("birdhouse", "knocked together a birdhouse", "make the birdhouse", "woodworking"),
    _act("kayaking", "paddled a kayak on {d}", "head out kayaking", "river paddling",
         "What stretch of water did {who} kayak on?"),
    _act("firstaid", "passed a first aid course", "do the first aid training", "life-saving skills"),
    _act("market", "came home from the farmers market with {d}", "visit the farmers market", "buying from local growers",
         "What did {who} come away from the farmers market with?"),
    _act("karaoke", "belted out karaoke songs with {poss} colleagues", "do karaoke with {poss} colleagues",
         "karaoke bars"),
    _act("skating", "went out on the ice at a skating rink", "head to the skating rink", "winter pastimes"),
    _act("museum", "went round an exhibition on {d} at the museum", "see the museum exhibition",
         "history displays", "What was the theme of the exhibition {who} saw at the museum?"),
    _act("wine", "sampled wine at a tasting event", "attend the wine tasting", "vineyards"),
    _act("planted", "put in a cherry tree at the back of {poss} house", "put in the cherry tree", "planting trees"),
    _act("surfing", "caught {poss} first waves at a surfing lesson", "do the surfing lesson", "riding waves"),
    _act("picnic", "met {poss} friends in the park for a picnic", "have the park picnic", "picnic spots"),
    _act("bowling", "bowled a few games with {poss} neighbours", "have the bowling night with {poss} neighbours",
         "ten-pin alleys"),
    _act("bicycle", "brought an old bicycle back to life", "repair the old bicycle", "vintage bikes"),
    _act("escape", "cracked an escape room together with {poss} cousins", "try the escape room",
         "escape games"),
)  # fmt: skip
