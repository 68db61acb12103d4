"""Word lists and sentence templates of the synthetic dialogue generator (``memprm.data.synthetic``).

Only data lives here; the generator decides what to say when. Conventions shared by every template:

- Placeholders are filled with ``str.format``: ``{v}`` a value, ``{a_v}`` the value with its indefinite
  article ("an architect"), ``{old}``/``{a_old}`` the value it replaces, ``{new}``/``{a_new}`` the value that
  replaced it, ``{poss}`` the owner's possessive ("my" when the owner speaks, "her"/"his" in third person),
  ``{name}`` the owner's name, ``{who}`` the subject of a question (a name or a clause like "the person who
  lives in Lisbon"), ``{d}`` an event's detail, ``{rel}``/``{Rel}`` a relative time expression (lower case /
  capitalised), ``{comment}``/``{Comment}`` a closing remark, ``{other}`` the other speaker's name.
- First-person statements never start with a value, so every answer span appears in the turn exactly as
  written (case included).
- Distractor texts (greetings, prompts, reactions, small talk) contain no relative time expression of
  ``RELATIVE_TIMES`` and none of the attributes' ``keywords``, so a type never stated in a dialogue really
  is never mentioned there and the only relative time expressions are those of event turns.
"""

from __future__ import annotations

from dataclasses import dataclass

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
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
    #: Every ``ask`` template contains one of these words; unanswerable questions are only asked about a type
    #: whose keywords and values appear nowhere in the dialogue.
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Activity:
    """A datable event a speaker tells about ("ran a half marathon")."""

    key: str
    past: str  # past-tense verb phrase, same in first and third person; may hold {poss} and {d}
    base: str  # infinitive phrase for "When did {who} ...?"
    keywords: tuple[str, ...]  # distinctive words of ``base``; see ``Attribute.keywords``
    topic: str  # noun phrase for topical distractors ("pottery")
    details: tuple[str, ...] = ()  # values of {d}; empty when ``past`` has no detail
    ask_detail: str = ""  # single-hop question whose answer is the detail


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
        ("Ana", "f"), ("Marco", "m"), ("Priya", "f"), ("Tom", "m"), ("Lena", "f"), ("Omar", "m"),
        ("Sofia", "f"), ("Daniel", "m"), ("Mei", "f"), ("Lucas", "m"), ("Nadia", "f"), ("Ethan", "m"),
        ("Clara", "f"), ("Ravi", "m"), ("Julia", "f"), ("Hugo", "m"), ("Amara", "f"), ("Felix", "m"),
        ("Ines", "f"), ("Kenji", "m"),
    )
)  # fmt: skip

ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        key="job",
        values=("nurse", "teacher", "software engineer", "chef", "accountant", "graphic designer",
                "pharmacist", "electrician", "architect", "librarian", "journalist", "physiotherapist"),
        state=("I work as {a_v}, and I honestly love it.",
               "These days I'm working as {a_v} at a place near the river.",
               "Well, I'm {a_v}, so my weeks are pretty full.",
               "Did I ever tell you I work as {a_v}? It keeps me on my toes."),
        change=("I quit being {a_old}, and now I work as {a_v}!",
                "Big change: I started a new job as {a_v}.",
                "I'm not {a_old} anymore, I retrained and now I'm {a_v}.",
                "I finally left my old role and now I'm working as {a_v}."),
        restate=("Being {a_v} is tiring some days, but I still love it.",
                 "Another long shift as {a_v}, but that's how it goes."),
        fact="{name} works as {a_v}.",
        fact_change="{name} stopped working as {a_old} and now works as {a_v}.",
        ask=("What does {who} do for a living?", "What job does {who} have?"),
        ask_now=("What does {who} do for a living now?", "What is the current job of {who}?"),
        ask_before=("What job did {who} have before becoming {a_new}?",),
        ident="the person who works as {a_v}",
        near_miss=("My cousin is thinking about becoming {a_v}.",
                   "I met {a_v} at the bus stop who had the funniest stories."),
        keywords=("job", "living"),
    ),
    Attribute(
        key="city",
        values=("Lisbon", "Denver", "Toronto", "Melbourne", "Dublin", "Austin", "Seattle", "Glasgow",
                "Portland", "Vienna", "Osaka", "Boston"),
        state=("I live in {v}, it's a great city.",
               "Here in {v} the weather is so unpredictable.",
               "Being in {v} has its perks, there's always something going on.",
               "Ever since I settled in {v}, I walk everywhere."),
        change=("I moved to {v}! I finally left {old}.",
                "We packed everything up and moved from {old} to {v}.",
                "I just settled into my new place in {v}."),
        restate=("Autumn in {v} is lovely, I never get tired of it.",
                 "The trams in {v} were packed, the usual."),
        fact="{name} lives in {v}.",
        fact_change="{name} moved from {old} to {v}.",
        ask=("Which city does {who} live in?", "Where does {who} live?"),
        ask_now=("Which city does {who} live in now?", "Where does {who} live these days?"),
        ask_before=("Where did {who} live before moving to {new}?",),
        ident="the person who lives in {v}",
        near_miss=("A friend of mine just got back from {v}.", "Have you ever been to {v}?"),
        keywords=("city", "live"),
    ),
    Attribute(
        key="dog",
        values=("Biscuit", "Luna", "Pepper", "Milo", "Daisy", "Rocky", "Maple", "Ziggy", "Bruno", "Coco"),
        state=("I have a dog called {v}, and he runs the house.",
               "My dog {v} keeps me busy, honestly.",
               "Oh, you haven't met my dog? His name is {v}."),
        change=("My parents took {old} in, and I adopted a new dog called {v}.",
                "{old} lives with my aunt now, and I have a new dog named {v}.",
                "Meet the new family member: a dog named {v}!"),
        restate=("My dog {v} chewed up my slippers again!",
                 "Took my dog {v} to the vet for a check-up, all good."),
        fact="{name} has a dog named {v}.",
        fact_change="{name} gave {poss} dog {old} to family and adopted a new dog named {v}.",
        ask=("What is the name of the dog that belongs to {who}?", "What is the dog of {who} called?"),
        ask_now=("What is the name of the dog that {who} has now?",),
        ask_before=("What was the name of the dog {who} had before {new}?",),
        ident="the person whose dog is called {v}",
        near_miss=("Our neighbours have a dog called {v}, so cute.",
                   "There was a dog named {v} on the news, it found its way home."),
        keywords=("dog",),
    ),
    Attribute(
        key="food",
        values=("sushi", "lasagna", "ramen", "tacos", "paella", "dumplings", "curry", "pho", "risotto",
                "falafel"),
        state=("My favourite food is {v}, I could eat it every day.",
               "Honestly nothing beats {v}, it's my favourite food.",
               "If I had to pick one favourite food, it would be {v}."),
        change=("I used to love {old}, but now {v} is my favourite food.",
                "Plot twist: my new favourite food is {v}.",
                "I'm so over {old}, {v} is my favourite food now."),
        restate=("Had {v} again for dinner, still my favourite food.",),
        fact="{name}'s favourite food is {v}.",
        fact_change="{name}'s favourite food changed from {old} to {v}.",
        ask=("What is the favourite food of {who}?",),
        ask_now=("What is the favourite food of {who} now?",),
        ask_before=("What was the favourite food of {who} before {new}?",),
        ident="the person whose favourite food is {v}",
        near_miss=("A new {v} place opened near the station.",),
        keywords=("food",),
    ),
    Attribute(
        key="partner",
        values=("Jordan", "Riley", "Casey", "Morgan", "Emery", "Jamie", "Avery", "Quinn", "Rowan",
                "Skyler"),
        state=("My partner {v} and I have been together for a while now.",
               "I'm dating someone called {v}, they're wonderful.",
               "You'd like my partner, {v}, they're hilarious."),
        change=("{old} and I broke up, and I've started dating {v}.",
                "So things ended with {old}, but I'm now dating {v} and I'm happy.",
                "I'm seeing someone new, my partner is called {v}."),
        restate=("My partner {v} made the most amazing dinner.",
                 "My partner {v} says hi, by the way."),
        fact="{name} is dating {v}.",
        fact_change="{name} broke up with {old} and is now dating {v}.",
        ask=("Who is {who} dating?", "What is the name of the partner of {who}?"),
        ask_now=("Who is {who} dating now?", "What is the name of the current partner of {who}?"),
        ask_before=("Who was {who} dating before {new}?",),
        ident="the person who is dating {v}",
        near_miss=("I bumped into {v} from school at the supermarket.",
                   "Do you remember {v}, the one who organised the quiz?"),
        keywords=("dating", "partner"),
    ),
    Attribute(
        key="car",
        values=("Toyota Corolla", "Honda Civic", "Ford Focus", "Subaru Outback", "Volkswagen Golf",
                "Mazda 3", "Tesla Model 3", "Kia Soul", "Volvo XC60", "Jeep Wrangler"),
        state=("I drive {a_v}, it's not fancy but it never lets me down.",
               "My car is {a_v}, and I'm weirdly attached to it.",
               "Oh, I got {a_v} as my car, it's great on long trips."),
        change=("I sold my {old} and bought {a_v}!",
                "I finally traded in the {old}, now I drive {a_v}.",
                "New car alert: I got {a_v}."),
        restate=("My {v} needed new tyres, but it still runs great.",),
        fact="{name} drives {a_v}.",
        fact_change="{name} sold {poss} {old} and now drives {a_v}.",
        ask=("What car does {who} drive?", "Which car does {who} have?"),
        ask_now=("What car does {who} drive now?",),
        ask_before=("What car did {who} drive before the {new}?",),
        ident="the person who drives {a_v}",
        near_miss=("My uncle keeps talking about buying {a_v}.",),
        keywords=("car", "drive"),
    ),
    Attribute(
        key="instrument",
        values=("guitar", "piano", "violin", "cello", "saxophone", "drums", "ukulele", "flute", "trumpet",
                "banjo"),
        state=("I've been playing the {v} for years, it's my favourite instrument.",
               "My instrument is the {v}, I practise most evenings.",
               "I play the {v} in a little community band."),
        change=("I gave up the {old} and started learning the {v}.",
                "Guess what, I switched instruments, it's the {v} now!"),
        restate=("I practised the {v} for an hour, my neighbours must love me.",),
        fact="{name} plays the {v}.",
        fact_change="{name} gave up the {old} and now plays the {v}.",
        ask=("What instrument does {who} play?", "Which musical instrument does {who} play?"),
        ask_now=("What instrument does {who} play now?",),
        ask_before=("What instrument did {who} play before the {new}?",),
        ident="the person who plays the {v}",
        near_miss=("There was a street musician playing the {v} outside the station.",),
        keywords=("instrument",),
    ),
    Attribute(
        key="drink",
        values=("oat latte", "green tea", "espresso", "chai", "iced coffee", "kombucha", "hot chocolate",
                "matcha", "lemonade", "mint tea"),
        state=("My go-to drink is {v}, I have one every afternoon.",
               "I can't start the day without my {v}, it's my go-to drink."),
        change=("I switched my go-to drink from {old} to {v}.",
                "My new go-to drink is {v}, goodbye {old}!"),
        restate=("I'm sipping {a_v} as we speak, my go-to drink as always.",),
        fact="{name}'s go-to drink is {v}.",
        fact_change="{name} switched {poss} go-to drink from {old} to {v}.",
        ask=("What is the go-to drink of {who}?",),
        ask_now=("What is the go-to drink of {who} now?",),
        ask_before=("What was the go-to drink of {who} before {new}?",),
        ident="the person whose go-to drink is {v}",
        near_miss=("The café downstairs started selling {v}.",),
        keywords=("drink",),
    ),
    Attribute(
        key="book",
        values=("Dune", "The Hobbit", "Middlemarch", "Circe", "Beloved", "Educated", "Persuasion",
                "Frankenstein", "Dracula", "The Overstory"),
        state=("I'm reading {v} at the moment and I can't put the book down.",
               "The book I'm reading right now is {v}.",
               "Right now I'm reading {v}, it's such a good book."),
        change=("I finished {old} and now I'm reading {v}.",
                "New book on my nightstand: I'm reading {v}."),
        restate=("Still working my way through {v}, what a book.",),
        fact="{name} is reading {v}.",
        fact_change="{name} finished {old} and is now reading {v}.",
        ask=("What book is {who} reading?", "Which book is {who} reading?"),
        ask_now=("What book is {who} reading now?",),
        ask_before=("What book was {who} reading before {new}?",),
        ident="the person who is reading {v}",
        near_miss=("Everyone at the library seems to be borrowing {v}.",),
        keywords=("book",),
    ),
    Attribute(
        key="language",
        values=("Spanish", "Japanese", "German", "Portuguese", "Korean", "Mandarin", "French", "Swahili",
                "Dutch", "Arabic"),
        state=("I'm learning {v}, the language is hard but fun.",
               "I signed up for {v} lessons, learning a language is so rewarding.",
               "My language project this year is {v}."),
        change=("I stopped learning {old} and started learning {v} instead.",
                "Switched languages: I'm learning {v} now."),
        restate=("My {v} is getting better, learning this language is paying off.",),
        fact="{name} is learning {v}.",
        fact_change="{name} stopped learning {old} and is now learning {v}.",
        ask=("Which language is {who} learning?", "What language is {who} studying?"),
        ask_now=("Which language is {who} learning now?",),
        ask_before=("Which language was {who} learning before {new}?",),
        ident="the person who is learning {v}",
        near_miss=("My nephew is learning {v} at school.",),
        keywords=("language",),
    ),
    Attribute(
        key="sport",
        values=("tennis", "badminton", "volleyball", "basketball", "squash", "netball", "rugby",
                "hockey", "cricket", "handball"),
        state=("I play {v} every week, it's my favourite sport.",
               "My sport is {v}, I'm in a weekly league.",
               "Oh, I play {v} with a local club, best sport ever."),
        change=("I stopped playing {old} and joined a {v} club.",
                "I've switched sports, I play {v} now."),
        restate=("Had a great {v} match, my sport never gets old.",),
        fact="{name} plays {v} regularly.",
        fact_change="{name} stopped playing {old} and now plays {v} regularly.",
        ask=("Which sport does {who} play?", "What sport does {who} play?"),
        ask_now=("Which sport does {who} play now?",),
        ask_before=("Which sport did {who} play before {new}?",),
        ident="the person who plays {v}",
        near_miss=("Did you see the {v} highlights on TV?",),
        keywords=("sport",),
    ),
)  # fmt: skip

ACTIVITIES: tuple[Activity, ...] = (
    Activity("marathon", "ran a half marathon and finished in {d}", "run the half marathon", ("marathon",),
             "half marathons", ("two hours", "one hour and fifty minutes", "two hours and ten minutes",
                                "one hour and forty minutes"),
             "How long did it take {who} to finish the half marathon?"),
    Activity("pottery", "went to a pottery class and made {d}", "go to the pottery class", ("pottery",),
             "pottery", ("a small vase", "a coffee mug", "a fruit bowl", "a plant pot"),
             "What did {who} make at the pottery class?"),
    Activity("cake", "baked {d} for {poss} sister's birthday", "bake a cake for {poss} sister's birthday",
             ("cake", "birthday"), "birthday cakes",
             ("a lemon cake", "a carrot cake", "a chocolate cake", "a cheesecake"),
             "What did {who} bake for {poss} sister's birthday?"),
    Activity("camping", "went camping at {d}", "go camping", ("camping",), "camping",
             ("Lake Tahoe", "Yosemite", "the Lake District", "Big Sur", "Banff"),
             "Where did {who} go camping?"),
    Activity("grandmother", "visited {poss} grandmother", "visit {poss} grandmother", ("grandmother",),
             "visiting grandparents"),
    Activity("tattoo", "got a tattoo of {d}", "get the tattoo", ("tattoo",), "tattoos",
             ("a swallow", "a compass", "a small wave", "a sunflower"), "What tattoo did {who} get?"),
    Activity("concert", "went to the {d} concert", "go to the concert", ("concert",), "big concerts",
             ("Taylor Swift", "Coldplay", "Arctic Monkeys", "Billie Eilish", "Stromae"),
             "Whose concert did {who} go to?"),
    Activity("shelter", "volunteered at the animal shelter", "volunteer at the animal shelter",
             ("shelter", "volunteer"), "animal shelters"),
    Activity("climbing", "tried rock climbing for the first time", "try rock climbing", ("climbing",),
             "rock climbing"),
    Activity("mural", "painted a mural of {d} at the community centre", "paint the mural", ("mural",),
             "street murals", ("a hummingbird", "a lighthouse", "a field of poppies", "a giant octopus"),
             "What did {who} paint on the mural at the community centre?"),
    Activity("wedding", "went to a friend's wedding in {d}", "go to the friend's wedding", ("wedding",),
             "weddings", ("Napa", "Santorini", "Edinburgh", "Kyoto", "Cape Town"),
             "Where was the wedding that {who} went to?"),
    Activity("garden", "started a vegetable garden", "start the vegetable garden", ("garden",),
             "vegetable gardens"),
    Activity("skydiving", "went skydiving", "go skydiving", ("skydiving",), "skydiving"),
    Activity("poem", "read a poem at an open mic night", "read a poem at the open mic night",
             ("poem", "mic"), "open mic nights"),
    Activity("cooking", "took a {d} cooking class", "take the cooking class", ("cooking",),
             "cooking classes", ("Thai", "Mexican", "Moroccan", "Ethiopian", "Indian"),
             "What kind of cooking class did {who} take?"),
    Activity("beach", "went to the beach with {poss} cousins", "go to the beach with {poss} cousins",
             ("beach",), "beach trips"),
    Activity("jigsaw", "finished a 1000-piece jigsaw puzzle", "finish the jigsaw puzzle",
             ("jigsaw", "puzzle"), "jigsaw puzzles"),
    Activity("kitten", "adopted a kitten named {d}", "adopt the kitten", ("kitten",), "kittens",
             ("Mochi", "Pumpkin", "Whiskers", "Nacho", "Pickle"),
             "What is the name of the kitten that {who} adopted?"),
    Activity("brother", "helped {poss} brother paint his flat", "help {poss} brother paint his flat",
             ("brother",), "painting flats"),
    Activity("hike", "went on a hike up {d}", "go on the hike", ("hike",), "mountain hikes",
             ("Mount Tamalpais", "Mount Rainier", "Snowdon", "Table Mountain"),
             "Which mountain did {who} hike up?"),
    Activity("charity", "organised a charity bake sale", "organise the charity bake sale", ("charity",),
             "charity events"),
    Activity("comedy", "went to a comedy show", "go to the comedy show", ("comedy",), "stand-up comedy"),
    Activity("trivia", "won a trivia night at the pub", "win the trivia night", ("trivia",),
             "pub trivia"),
    Activity("meteor", "watched a meteor shower", "watch the meteor shower", ("meteor",),
             "meteor showers"),
    Activity("aquarium", "took {poss} niece to the aquarium", "take {poss} niece to the aquarium",
             ("aquarium", "niece"), "aquariums"),
    Activity("yoga", "went to a yoga retreat in {d}", "go to the yoga retreat", ("yoga",), "yoga retreats",
             ("Bali", "Tulum", "Sedona", "Goa"), "Where was the yoga retreat that {who} went to?"),
    Activity("birdhouse", "built a birdhouse", "build the birdhouse", ("birdhouse",), "birdhouses"),
    Activity("kayaking", "went kayaking on {d}", "go kayaking", ("kayaking",), "kayaking",
             ("Lake Union", "the Thames", "Loch Lomond", "the Colorado River"),
             "Where did {who} go kayaking?"),
    Activity("firstaid", "got certified in first aid", "get certified in first aid", ("aid",),
             "first aid courses"),
    Activity("market", "went to the farmers market and bought {d}", "go to the farmers market",
             ("market",), "farmers markets", ("fresh honey", "a basket of peaches", "sourdough bread",
                                              "wild mushrooms"),
             "What did {who} buy at the farmers market?"),
    Activity("karaoke", "sang karaoke with {poss} coworkers", "sing karaoke with {poss} coworkers",
             ("karaoke",), "karaoke"),
    Activity("skating", "went ice skating", "go ice skating", ("skating",), "ice skating"),
    Activity("museum", "visited a museum exhibition about {d}", "visit the museum exhibition",
             ("museum", "exhibition"), "museum exhibitions",
             ("ancient Egypt", "the Vikings", "space travel", "dinosaurs"),
             "What was the museum exhibition that {who} visited about?"),
    Activity("wine", "went to a wine tasting", "go to the wine tasting", ("wine",), "wine tastings"),
    Activity("planted", "planted a cherry tree in {poss} backyard", "plant the cherry tree", ("cherry",),
             "fruit trees"),
    Activity("surfing", "had {poss} first surfing lesson", "have the first surfing lesson", ("surfing",),
             "surfing"),
    Activity("picnic", "had a picnic in the park with {poss} friends", "have the picnic in the park",
             ("picnic",), "picnics"),
    Activity("bowling", "went bowling with {poss} neighbours", "go bowling with {poss} neighbours",
             ("bowling",), "bowling"),
    Activity("bicycle", "fixed up an old bicycle", "fix up the old bicycle", ("bicycle",),
             "old bicycles"),
    Activity("escape", "did an escape room with {poss} cousins", "do the escape room", ("escape",),
             "escape rooms"),
)  # fmt: skip

# --- event turns -------------------------------------------------------------------------------------
EVENT_TELLS = (
    "{Rel} I {past}, {comment}.",
    "Guess what? I {past} {rel}!",
    "I {past} {rel}. {Comment}.",
    "So {rel} I {past}, and {comment}.",
    "Big news from my side: I {past} {rel}.",
    "Oh, I have to tell you, I {past} {rel}. {Comment}!",
)
COMMENTS = (
    "it was so much fun",
    "I'm still buzzing",
    "it was exhausting but worth it",
    "I'd totally do it again",
    "it was better than I expected",
    "what an experience",
    "I can't stop smiling about it",
)

# --- distractors --------------------------------------------------------------------------------------
GREETINGS = (
    "Hey {other}! How's it going?",
    "Hi {other}, so good to hear from you!",
    "Hello {other}! Got a minute to catch up?",
    "Hey there {other}, how are you doing?",
    "{other}! I was hoping we'd chat soon.",
)
GREETING_REPLIES = (
    "Hi {other}! Doing well, thanks. You?",
    "Hey {other}! All good here, how about you?",
    "Always, {other}. What's new?",
    "Hi! Great to hear from you, {other}.",
)
PROMPTS = (
    "What about you, {other}? Anything new?",
    "And how about you?",
    "So what's new with you?",
    "Anything else going on with you?",
    "Your turn, {other}, tell me something good.",
)
REACTIONS = {
    "event": (
        "Wow, that sounds amazing!",
        "Oh nice, good for you!",
        "Ha, I love that.",
        "That's so cool, I'm a bit jealous.",
        "Amazing, you always find fun things to do.",
        "No way, that's awesome!",
    ),
    "state": (
        "Oh, I didn't know that!",
        "That's really nice.",
        "Ha, that suits you.",
        "Good to know, that's lovely.",
    ),
    "change": (
        "Wow, that's a big change!",
        "Oh really? Well, I hope it works out.",
        "That's huge news, congratulations!",
        "Change is good, I'm happy for you.",
    ),
    "restate": (
        "Ha, of course.",
        "Sounds about right.",
        "Some things never change!",
    ),
}
SMALL_TALK = (
    ("Can you believe how fast time flies?", "Honestly, it's wild."),
    ("The weather has been all over the place.", "Tell me about it, I never know what to wear."),
    ("I really need a holiday.", "Same, we both deserve one."),
    ("How's your family doing?", "Everyone's good, thanks for asking."),
    ("Have you watched anything good?", "Not really, I keep starting shows and never finishing them."),
    ("I tried to be productive but ended up napping.", "Honestly, that sounds like a win to me."),
    ("Do you ever feel like there aren't enough hours in a day?", "All the time!"),
    ("I've been trying to get more sleep.", "Good idea, I should do the same."),
    ("Isn't it funny how we always end up chatting for ages?", "Ha, yes, I love it though."),
    ("I keep forgetting to water my plants.", "Poor plants! Set a reminder maybe?"),
    ("Any fun plans coming up?", "Nothing big, I just want to relax for a bit."),
    ("It's so nice to just talk like this.", "Agreed, it always cheers me up."),
    ("I'm trying to be better at replying to messages.", "Ha, aren't we all."),
    ("Do you prefer mornings or evenings?", "Evenings, definitely. Mornings are hard."),
    ("I finally cleaned out my inbox.", "That must feel so satisfying."),
    ("What's the best thing that happened to you this month?", "Hmm, probably this chat, honestly."),
)
TOPICAL = (
    ("I saw a documentary about {topic}, really interesting.", "Oh, I'd watch that."),
    ("Someone at the bus stop wouldn't stop talking about {topic}.", "Ha, people get so passionate."),
    ("Do you think {topic} is overrated?", "Maybe a little, but I get the appeal."),
    ("I read an article about {topic} that made me laugh.", "You'll have to send it to me."),
)
NEAR_MISS_REPLIES = (
    "Oh, interesting.",
    "Ha, small world.",
    "Huh, I had no idea.",
    "Nice, that's fun to hear.",
)
CLOSINGS = (
    ("I should get going, talk soon!", "Bye {other}, take care!"),
    ("Okay, I have to run. Great catching up!", "Same here, see you {other}!"),
    ("Let's chat again soon, okay?", "Definitely. Bye for now, {other}!"),
    ("Gotta go, but this was lovely.", "It really was. Talk soon, {other}!"),
)
CLOSING_TAILS = ("Bye!", "See you!", "Take care!")

UNANSWERABLE_ANSWER = "Not mentioned in the conversation"
TEMPORAL_ASK = ("When did {who} {base}?",)
