"""The held-out family's relative time expressions and activity phrasings (see ``phrasing.py``).

Each entry rewords its standard counterpart of the same position (the same kind of relative time, the same
activity key, details and canonical ``past``), so the two families draw the same plan. Conventions of
``vocabulary.py`` hold: ``base`` holds the activity's ``keywords``; ``said`` and ``ask_detail`` hold ``{d}``
exactly when the activity has details; no phrase carries a word of time ("morning", "weekend"), which would
clash with the relative time expression it is told with.
"""

from __future__ import annotations

from dataclasses import replace

from memprm.data.synthetic.vocabulary import ACTIVITIES, WEEKDAYS, Activity, RelativeTime

#: Same kinds at the same positions as ``RELATIVE_TIMES`` (days 0-5 and 7, the seven weekdays, the week).
HELDOUT_RELATIVE_TIMES: tuple[RelativeTime, ...] = (
    RelativeTime("earlier today", days=0),
    RelativeTime("yesterday evening", days=1),
    RelativeTime("the day before yesterday", days=2),
    RelativeTime("three days back", days=3),
    RelativeTime("four days back", days=4),
    RelativeTime("five days back", days=5),
    RelativeTime("this time last week", days=7),
    *(RelativeTime(f"this past {w}", weekday=i) for i, w in enumerate(WEEKDAYS)),
    RelativeTime("over the past week", week=True),
)

#: key -> (said, base, keywords, topic, ask_detail): the surface phrase of turns and multi-hop questions, the
#: infinitive after "When was it that {who} got to ...?", its distinctive words, a noun phrase for topical
#: distractors, and the detail question (empty when the activity has no detail).
_REWORDED: dict[str, tuple[str, str, tuple[str, ...], str, str]] = {
    "marathon": (
        "crossed the finish line of a half marathon after {d}",
        "run in the half marathon",
        ("marathon",),
        "long-distance running",
        "What was {who}'s finishing time in the half marathon?",
    ),
    "pottery": (
        "sat down at a pottery wheel and shaped {d}",
        "sit at the pottery wheel",
        ("pottery",),
        "handmade ceramics",
        "What did {who} shape on the pottery wheel?",
    ),
    "cake": (
        "surprised {poss} sister with {d} for her birthday",
        "bake a birthday cake for {poss} sister",
        ("cake", "birthday"),
        "home baking",
        "Which cake did {who} surprise {poss} sister with?",
    ),
    "camping": (
        "pitched a tent at {d} for a couple of nights",
        "sleep in a tent at the campsite",
        ("tent", "campsite"),
        "sleeping outdoors",
        "Where did {who} pitch a tent?",
    ),
    "grandmother": (
        "popped over to see {poss} grandmother",
        "pop over to see {poss} grandmother",
        ("grandmother",),
        "spending time with grandparents",
        "",
    ),
    "tattoo": (
        "had {d} tattooed on {poss} arm",
        "have the new tattoo done",
        ("tattoo",),
        "body art",
        "Which design did {who} have tattooed?",
    ),
    "concert": (
        "saw {d} live at the arena",
        "go to the gig at the arena",
        ("gig", "arena"),
        "live music",
        "Who did {who} see live at the arena?",
    ),
    "shelter": (
        "put in a shift cleaning kennels for the animal shelter",
        "lend a hand at the rescue shelter",
        ("shelter",),
        "rescue animals",
        "",
    ),
    "climbing": (
        "had a first go on an indoor climbing wall",
        "try the indoor climbing wall",
        ("climbing",),
        "bouldering",
        "",
    ),
    "mural": (
        "brightened up the community centre with a mural of {d}",
        "work on the community mural",
        ("mural",),
        "public art",
        "What does the mural {who} did for the community centre show?",
    ),
    "wedding": (
        "was a guest when a close friend got married in {d}",
        "be a guest at the wedding",
        ("wedding",),
        "destination weddings",
        "Where did the wedding that {who} was a guest at take place?",
    ),
    "garden": (
        "turned a corner of {poss} garden into a vegetable patch",
        "dig the vegetable patch",
        ("vegetable",),
        "growing your own veg",
        "",
    ),
    "skydiving": (
        "jumped out of a plane on a tandem skydive",
        "do the tandem skydive",
        ("skydive",),
        "jumping out of planes",
        "",
    ),
    "poem": (
        "took the mic at a poetry slam and performed a poem",
        "perform the poem on stage",
        ("poem", "mic"),
        "spoken word poetry",
        "",
    ),
    "cooking": (
        "went to a cookery school to learn {d} recipes",
        "attend the cookery school",
        ("cookery",),
        "cookery courses",
        "Which cuisine was {who} learning at the cookery school?",
    ),
    "beach": (
        "had a seaside day out with {poss} cousins",
        "have the seaside day out with {poss} cousins",
        ("seaside",),
        "days at the seaside",
        "",
    ),
    "jigsaw": (
        "put the final piece into a thousand-piece jigsaw",
        "complete the thousand-piece jigsaw",
        ("jigsaw",),
        "puzzles",
        "",
    ),
    "kitten": (
        "took in a rescue kitten called {d}",
        "take in the rescue kitten",
        ("kitten",),
        "cats",
        "What did {who} call the rescue kitten?",
    ),
    "brother": (
        "gave {poss} brother a hand painting his flat",
        "help repaint {poss} brother's flat",
        ("brother",),
        "home decorating",
        "",
    ),
    "hike": (
        "made it to the summit of {d} on foot",
        "reach the summit",
        ("summit",),
        "hill walking",
        "Which summit did {who} reach on foot?",
    ),
    "charity": (
        "ran a bake sale to raise money for charity",
        "hold the bake sale for charity",
        ("charity",),
        "fundraising",
        "",
    ),
    "comedy": (
        "sat in the front row at a stand-up comedy show",
        "watch the stand-up comedy show",
        ("comedy",),
        "comedians",
        "",
    ),
    "trivia": (
        "led {poss} team to victory at a pub quiz",
        "win the pub quiz",
        ("quiz",),
        "quiz nights",
        "",
    ),
    "meteor": (
        "counted shooting stars during a meteor shower",
        "see the meteor shower",
        ("meteor",),
        "stargazing",
        "",
    ),
    "aquarium": (
        "took {poss} niece to see the sharks at the aquarium",
        "show {poss} niece around the aquarium",
        ("aquarium", "niece"),
        "sea life",
        "",
    ),
    "yoga": (
        "headed off to {d} for a yoga retreat",
        "do the yoga retreat",
        ("yoga",),
        "meditation",
        "Where did {who} head off to for the yoga retreat?",
    ),
    "birdhouse": (
        "nailed together a little wooden birdhouse",
        "make the wooden birdhouse",
        ("birdhouse",),
        "woodwork",
        "",
    ),
    "kayaking": (
        "paddled a kayak along {d}",
        "take the kayak out",
        ("kayak",),
        "paddling",
        "Where did {who} paddle the kayak?",
    ),
    "firstaid": (
        "passed a first aid course and got the certificate",
        "pass the first aid course",
        ("aid",),
        "emergency training",
        "",
    ),
    "market": (
        "came back from the farmers market with {d}",
        "browse the farmers market stalls",
        ("market",),
        "local produce",
        "What did {who} come back from the farmers market with?",
    ),
    "karaoke": (
        "belted out a few songs at karaoke with {poss} coworkers",
        "do karaoke with {poss} coworkers",
        ("karaoke",),
        "singing in public",
        "",
    ),
    "skating": (
        "went round and round the ice rink",
        "go out on the ice rink",
        ("rink",),
        "figure skating",
        "",
    ),
    "museum": (
        "toured a museum show all about {d}",
        "tour the museum show",
        ("museum",),
        "history exhibits",
        "Which subject did the museum show that {who} toured cover?",
    ),
    "wine": (
        "did a tasting at a local vineyard",
        "do the vineyard tasting",
        ("vineyard",),
        "natural wine",
        "",
    ),
    "planted": (
        "put a cherry sapling in the ground behind {poss} house",
        "plant the cherry sapling",
        ("cherry",),
        "orchards",
        "",
    ),
    "surfing": (
        "had a go on a surfboard with an instructor",
        "try out the surfboard",
        ("surfboard",),
        "surf culture",
        "",
    ),
    "picnic": (
        "spread out a picnic blanket on the grass with {poss} friends",
        "host the picnic for {poss} friends",
        ("picnic",),
        "eating outdoors",
        "",
    ),
    "bowling": (
        "knocked down a few pins at the bowling alley with {poss} neighbours",
        "go to the bowling alley with {poss} neighbours",
        ("bowling",),
        "ten-pin bowling",
        "",
    ),
    "bicycle": (
        "brought a rusty old bicycle back to life",
        "restore the rusty bicycle",
        ("bicycle",),
        "bike repairs",
        "",
    ),
    "escape": (
        "worked {poss} way out of an escape room alongside {poss} cousins",
        "beat the escape room",
        ("escape",),
        "locked-room games",
        "",
    ),
}


def _reworded(a: Activity) -> Activity:
    said, base, keywords, topic, ask_detail = _REWORDED[a.key]
    return replace(a, said=said, base=base, keywords=keywords, topic=topic, ask_detail=ask_detail)


#: The standard activities in the standard order, reworded; ``past`` (the fact annotation) is unchanged.
HELDOUT_ACTIVITIES: tuple[Activity, ...] = tuple(_reworded(a) for a in ACTIVITIES)
