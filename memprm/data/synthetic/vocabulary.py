"""The synthetic generator's vocabulary: people, activities, months and relative times, and the record
types of every word list (:class:`Attribute` entries live in ``attributes.py``, dialogue lines in ``lines.py``).

Only data lives here; the generator decides what to say when. Templates are filled with ``str.format``
(``{v}`` a value, ``{a_v}`` it with its article, ``{old}`` the value it replaces, ``{who}`` a question's
subject, ...), and the word lists are written so that answers and signals stay clean: every answer span
appears in its turn exactly as written, and distractors contain no relative time expression and no
attribute keyword. The full list of placeholders and conventions is in ``docs/design/synthetic_data.md``
("Template conventions").
"""

from __future__ import annotations

from dataclasses import dataclass

from memprm.data.dates import MONTH_NAMES

MONTHS = MONTH_NAMES  # one month table for the generator, the reader and the notes (memprm.data.dates)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Person:
    """A speaker: name and the pronouns the third-person fact texts need."""

    name: str
    poss: str  # possessive determiner: "her" / "his"


@dataclass(frozen=True)
class Attribute:
    """A profile attribute type (job, city, ...): stated once, maybe overturned, maybe restated."""

    key: str
    #: Values; a dialogue draws each value at most once (over both speakers and all versions), so a current
    #: value identifies its holder.
    values: tuple[str, ...]
    state: tuple[str, ...]  # first-person statements of {v}
    change: tuple[str, ...]  # first-person overturns: {old} -> {v}
    restate: tuple[str, ...]  # first-person mentions of the unchanged current value {v}
    fact: str  # canonical third-person statement of {v}
    fact_change: str  # canonical third-person statement of the change {old} -> {v}
    ask: tuple[str, ...]  # question about the value of {who}
    ask_now: tuple[str, ...]  # question about the current value of {who}
    ask_before: tuple[str, ...]  # question about the value before {new}
    ident: str  # noun phrase naming the holder of the current value {v}
    near_miss: tuple[str, ...]  # distractor that mentions a value nobody in the dialogue holds
    #: Distractors in which the speaker tells the same attribute of a relative, friend or neighbour ("My
    #: sister works as {a_v}"), always with a value no speaker of the dialogue ever holds; they contain no
    #: keyword of another attribute type or of an activity.
    third_party: tuple[str, ...]
    #: Every ``ask`` template contains one of these words; unanswerable questions are only asked about a type
    #: whose keywords and values appear nowhere in the dialogue.
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Activity:
    """A datable event a speaker tells about ("ran a half marathon")."""

    key: str
    past: str  # past-tense verb phrase, same in first and third person; may hold {poss} and {d}; words the
    # fact annotation, and turns and questions unless ``said`` is set
    base: str  # infinitive phrase for "When did {who} ...?"
    keywords: tuple[str, ...]  # distinctive words of ``base``; see ``Attribute.keywords``
    topic: str  # noun phrase for topical distractors ("pottery")
    details: tuple[str, ...] = ()  # values of {d}; empty when ``past`` has no detail
    ask_detail: str = ""  # single-hop question whose answer is the detail
    #: The past-tense phrase said in turns and questions when it differs from ``past``, which then only
    #: words the canonical fact annotation (the held-out family); same slots as ``past``. Empty: ``past``.
    said: str = ""

    @property
    def spoken(self) -> str:
        """The past-tense phrase of turns and questions: ``said``, or ``past`` when there is none."""
        return self.said or self.past


@dataclass(frozen=True)
class RelativeTime:
    """A relative time expression, resolved against the session date.

    Exactly one of: ``days`` (that many days before the session date, 0 = the session date),
    ``weekday`` (0 = Monday; the most recent such weekday strictly before the session date), or ``week``
    (the week before the session date; answered LoCoMo-style as "the week before 8 May 2023").
    """

    text: str
    days: int | None = None
    weekday: int | None = None
    week: bool = False


RELATIVE_TIMES: tuple[RelativeTime, ...] = (
    RelativeTime("this morning", days=0),
    RelativeTime("yesterday", days=1),
    RelativeTime("two days ago", days=2),
    RelativeTime("three days ago", days=3),
    RelativeTime("four days ago", days=4),
    RelativeTime("five days ago", days=5),
    RelativeTime("a week ago", days=7),
    *(RelativeTime(f"last {w}", weekday=i) for i, w in enumerate(WEEKDAYS)),
    RelativeTime("last week", week=True),
)

PEOPLE: tuple[Person, ...] = tuple(
    Person(n, "her" if g == "f" else "his")
    for n, g in (
        ("Ana", "f"),
        ("Marco", "m"),
        ("Priya", "f"),
        ("Tom", "m"),
        ("Lena", "f"),
        ("Omar", "m"),
        ("Sofia", "f"),
        ("Daniel", "m"),
        ("Mei", "f"),
        ("Lucas", "m"),
        ("Nadia", "f"),
        ("Ethan", "m"),
        ("Clara", "f"),
        ("Ravi", "m"),
        ("Julia", "f"),
        ("Hugo", "m"),
        ("Amara", "f"),
        ("Felix", "m"),
        ("Ines", "f"),
        ("Kenji", "m"),
    )
)

ACTIVITIES: tuple[Activity, ...] = (
    Activity(
        "marathon",
        "ran a half marathon and finished in {d}",
        "run the half marathon",
        ("marathon",),
        "half marathons",
        (
            "two hours",
            "one hour and fifty minutes",
            "two hours and ten minutes",
            "one hour and forty minutes",
        ),
        "How long did it take {who} to finish the half marathon?",
    ),
    Activity(
        "pottery",
        "went to a pottery class and made {d}",
        "go to the pottery class",
        ("pottery",),
        "pottery",
        ("a small vase", "a coffee mug", "a fruit bowl", "a plant pot"),
        "What did {who} make at the pottery class?",
    ),
    Activity(
        "cake",
        "baked {d} for {poss} sister's birthday",
        "bake a cake for {poss} sister's birthday",
        ("cake", "birthday"),
        "birthday cakes",
        ("a lemon cake", "a carrot cake", "a chocolate cake", "a cheesecake"),
        "What did {who} bake for {poss} sister's birthday?",
    ),
    Activity(
        "camping",
        "went camping at {d}",
        "go camping",
        ("camping",),
        "camping",
        ("Lake Tahoe", "Yosemite", "the Lake District", "Big Sur", "Banff"),
        "Where did {who} go camping?",
    ),
    Activity(
        "grandmother",
        "visited {poss} grandmother",
        "visit {poss} grandmother",
        ("grandmother",),
        "visiting grandparents",
    ),
    Activity(
        "tattoo",
        "got a tattoo of {d}",
        "get the tattoo",
        ("tattoo",),
        "tattoos",
        ("a swallow", "a compass", "a small wave", "a sunflower"),
        "What tattoo did {who} get?",
    ),
    Activity(
        "concert",
        "went to the {d} concert",
        "go to the concert",
        ("concert",),
        "big concerts",
        ("Taylor Swift", "Coldplay", "Arctic Monkeys", "Billie Eilish", "Stromae"),
        "Whose concert did {who} go to?",
    ),
    Activity(
        "shelter",
        "volunteered at the animal shelter",
        "volunteer at the animal shelter",
        ("shelter", "volunteer"),
        "animal shelters",
    ),
    Activity(
        "climbing",
        "tried rock climbing for the first time",
        "try rock climbing",
        ("climbing",),
        "rock climbing",
    ),
    Activity(
        "mural",
        "painted a mural of {d} at the community centre",
        "paint the mural",
        ("mural",),
        "street murals",
        ("a hummingbird", "a lighthouse", "a field of poppies", "a giant octopus"),
        "What did {who} paint on the mural at the community centre?",
    ),
    Activity(
        "wedding",
        "went to a friend's wedding in {d}",
        "go to the friend's wedding",
        ("wedding",),
        "weddings",
        ("Napa", "Santorini", "Edinburgh", "Kyoto", "Cape Town"),
        "Where was the wedding that {who} went to?",
    ),
    Activity(
        "garden", "started a vegetable garden", "start the vegetable garden", ("garden",), "vegetable gardens"
    ),
    Activity("skydiving", "went skydiving", "go skydiving", ("skydiving",), "skydiving"),
    Activity(
        "poem",
        "read a poem at an open mic night",
        "read a poem at the open mic night",
        ("poem", "mic"),
        "open mic nights",
    ),
    Activity(
        "cooking",
        "took a {d} cooking class",
        "take the cooking class",
        ("cooking",),
        "cooking classes",
        ("Thai", "Mexican", "Moroccan", "Ethiopian", "Indian"),
        "What kind of cooking class did {who} take?",
    ),
    Activity(
        "beach",
        "went to the beach with {poss} cousins",
        "go to the beach with {poss} cousins",
        ("beach",),
        "beach trips",
    ),
    Activity(
        "jigsaw",
        "finished a 1000-piece jigsaw puzzle",
        "finish the jigsaw puzzle",
        ("jigsaw", "puzzle"),
        "jigsaw puzzles",
    ),
    Activity(
        "kitten",
        "adopted a kitten named {d}",
        "adopt the kitten",
        ("kitten",),
        "kittens",
        ("Mochi", "Pumpkin", "Whiskers", "Nacho", "Pickle"),
        "What is the name of the kitten that {who} adopted?",
    ),
    Activity(
        "brother",
        "helped {poss} brother paint his flat",
        "help {poss} brother paint his flat",
        ("brother",),
        "painting flats",
    ),
    Activity(
        "hike",
        "went on a hike up {d}",
        "go on the hike",
        ("hike",),
        "mountain hikes",
        ("Mount Tamalpais", "Mount Rainier", "Snowdon", "Table Mountain"),
        "Which mountain did {who} hike up?",
    ),
    Activity(
        "charity",
        "organised a charity bake sale",
        "organise the charity bake sale",
        ("charity",),
        "charity events",
    ),
    Activity("comedy", "went to a comedy show", "go to the comedy show", ("comedy",), "stand-up comedy"),
    Activity("trivia", "won a trivia night at the pub", "win the trivia night", ("trivia",), "pub trivia"),
    Activity("meteor", "watched a meteor shower", "watch the meteor shower", ("meteor",), "meteor showers"),
    Activity(
        "aquarium",
        "took {poss} niece to the aquarium",
        "take {poss} niece to the aquarium",
        ("aquarium", "niece"),
        "aquariums",
    ),
    Activity(
        "yoga",
        "went to a yoga retreat in {d}",
        "go to the yoga retreat",
        ("yoga",),
        "yoga retreats",
        ("Bali", "Tulum", "Sedona", "Goa"),
        "Where was the yoga retreat that {who} went to?",
    ),
    Activity("birdhouse", "built a birdhouse", "build the birdhouse", ("birdhouse",), "birdhouses"),
    Activity(
        "kayaking",
        "went kayaking on {d}",
        "go kayaking",
        ("kayaking",),
        "kayaking",
        ("Lake Union", "the Thames", "Loch Lomond", "the Colorado River"),
        "Where did {who} go kayaking?",
    ),
    Activity(
        "firstaid", "got certified in first aid", "get certified in first aid", ("aid",), "first aid courses"
    ),
    Activity(
        "market",
        "went to the farmers market and bought {d}",
        "go to the farmers market",
        ("market",),
        "farmers markets",
        ("fresh honey", "a basket of peaches", "sourdough bread", "wild mushrooms"),
        "What did {who} buy at the farmers market?",
    ),
    Activity(
        "karaoke",
        "sang karaoke with {poss} coworkers",
        "sing karaoke with {poss} coworkers",
        ("karaoke",),
        "karaoke",
    ),
    Activity("skating", "went ice skating", "go ice skating", ("skating",), "ice skating"),
    Activity(
        "museum",
        "visited a museum exhibition about {d}",
        "visit the museum exhibition",
        ("museum", "exhibition"),
        "museum exhibitions",
        ("ancient Egypt", "the Vikings", "space travel", "dinosaurs"),
        "What was the museum exhibition that {who} visited about?",
    ),
    Activity("wine", "went to a wine tasting", "go to the wine tasting", ("wine",), "wine tastings"),
    Activity(
        "planted",
        "planted a cherry tree in {poss} backyard",
        "plant the cherry tree",
        ("cherry",),
        "fruit trees",
    ),
    Activity(
        "surfing", "had {poss} first surfing lesson", "have the first surfing lesson", ("surfing",), "surfing"
    ),
    Activity(
        "picnic",
        "had a picnic in the park with {poss} friends",
        "have the picnic in the park",
        ("picnic",),
        "picnics",
    ),
    Activity(
        "bowling",
        "went bowling with {poss} neighbours",
        "go bowling with {poss} neighbours",
        ("bowling",),
        "bowling",
    ),
    Activity("bicycle", "fixed up an old bicycle", "fix up the old bicycle", ("bicycle",), "old bicycles"),
    Activity(
        "escape", "did an escape room with {poss} cousins", "do the escape room", ("escape",), "escape rooms"
    ),
)
