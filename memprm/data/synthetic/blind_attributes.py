"""The blind family's profile attributes (see ``phrasing.py``): new statement, question and distractor
templates for every attribute of ``attributes.py``, in the same order and with tables of the same lengths.

Values and the canonical fact texts are the standard ones, so the fact annotations and answers stay the same;
the keywords are this family's own, said in no line of another attribute, activity or distractor.
``ask_now`` / ``ask_before`` only ever get a speaker's name as ``{who}``, ``ask`` also a clause ("the friend
who ..."), so ``ask`` never puts a possessive on ``{who}``. Conventions: ``docs/design/synthetic_data.md``.
"""

from __future__ import annotations

from dataclasses import replace

from memprm.data.synthetic.attributes import ATTRIBUTES
from memprm.data.synthetic.tuning_vocabulary import reword
from memprm.data.synthetic.vocabulary import Attribute

_STANDARD = {a.key: a for a in ATTRIBUTES}


def _reword(key: str, keywords: tuple[str, ...], **templates: tuple[str, ...] | str) -> Attribute:
    """The standard attribute ``key`` in new words (tables of the same lengths) with its own keywords."""
    return replace(reword(_STANDARD[key], **templates), keywords=keywords)


BLIND_ATTRIBUTES: tuple[Attribute, ...] = (
    _reword(
        "job",
        state=(
            "Work-wise? I'm {a_v}, and honestly it suits me down to the ground.",
            "My career so far has been as {a_v}, and I can't see that changing.",
            "I'm employed as {a_v}, which keeps me running around all day.",
            "You know what I do, right? I'm {a_v}. It's never boring.",
        ),
        change=(
            "Career news: I'm no longer {a_old}, I've become {a_v}!",
            "So the big news is I've been taken on as {a_v}.",
            "Remember how I was {a_old}? Not anymore, I'm {a_v} now.",
            "I packed in being {a_old}, and these days I'm {a_v}.",
        ),
        restate=(
            "Long shift again, the life of {a_v}, eh?",
            "It's full-on being {a_v}, though I wouldn't change it.",
        ),
        ask=("Which profession does {who} work in?", "What career has {who} gone into?"),
        ask_now=("What's {who}'s profession now?", "What does {who} do to pay the bills these days?"),
        ask_before=("{who} is {a_new} now, but what was the job before that?",),
        ident="the one making a living as {a_v}",
        near_miss=(
            "The guy who fixed my boiler said he used to be {a_v}.",
            "There was {a_v} on a game show who won a fortune.",
        ),
        third_party=(
            "My stepmum is {a_v} and never shuts up about it.",
            "My oldest mate just qualified as {a_v}, so proud of her.",
            "My grandpa was {a_v} his whole working life.",
        ),
        keywords=("career", "profession"),
    ),
    _reword(
        "city",
        state=(
            "I'm settled in {v} these days, and I love it to bits.",
            "Life in {v} suits me, even with the traffic.",
            "I rent a small place in {v}, close to everything.",
            "You know I'm in {v} now, right? It's brilliant.",
        ),
        change=(
            "Big move: {old} is behind me and I'm in {v} now.",
            "I finally did it, I left {old} and relocated to {v}.",
            "New city, new me: I'm living in {v}.",
        ),
        restate=(
            "Traffic in {v} was a nightmare again, what's new.",
            "Roadworks, rain, overpriced coffee: that's {v} for you. Still my favourite place on earth.",
        ),
        ask=("Where has {who} settled?", "In which city does {who} reside?"),
        ask_now=("Where's {who} living these days?", "Which city is {who} in at the moment?"),
        ask_before=("{who} is in {new} now, but where was home before that?",),
        ident="the resident of {v}",
        near_miss=(
            "My train got stuck outside {v} for an hour once.",
            "There's a documentary about {v} that's been on my list forever.",
        ),
        third_party=(
            "My auntie retired to {v} and sends us postcards.",
            "My ex-flatmate moved out to {v} for love.",
            "My stepdad grew up in {v}, way back when.",
        ),
        keywords=("settled", "reside"),
    ),
    _reword(
        "dog",
        state=(
            "There's a scruffy mutt at my place called {v}, and he rules the roost.",
            "Oh, my pooch? That'd be {v}, chaos on four legs.",
            "I share my flat with a pup named {v}, who owns the sofa.",
        ),
        change=(
            "So {old} is living with my parents now, and I've got a new pup, {v}.",
            "There's a new pooch in my life: {v}. Poor {old} is with my cousin these days.",
            "Meet {v}, the pup who's just joined the household!",
        ),
        restate=(
            "Honestly, {v} is a menace, my pup ate a whole sock.",
            "Took {v} to the groomer, my pooch looks ridiculous now.",
        ),
        ask=("What is the pup belonging to {who} called?", "What does {who} call the pooch?"),
        ask_now=("What's {who}'s pup called at the moment?",),
        ask_before=("Which pooch did {who} have before {new}?",),
        ident="the one whose pooch answers to {v}",
        near_miss=(
            "A pup called {v} won the fancy dress thing at the park.",
            "The vet's waiting room had a pooch named {v} howling non-stop.",
        ),
        third_party=(
            "My stepmum's pup, {v}, is scared of pigeons.",
            "My next-door neighbour's pooch {v} digs under our fence.",
            "My godparents have a soppy old pooch called {v}.",
        ),
        keywords=("pup", "pooch"),
    ),
    _reword(
        "food",
        state=(
            "If you asked me for a last meal, it'd be {v}, no question.",
            "I'll never say no to {v}, it's top of my list.",
            "Comfort food for me means {v}, every time without fail.",
        ),
        change=(
            "Turns out my tastes have changed; I'd pick {v} over {old} now.",
            "I used to swear by {old}; now it's all about {v}.",
            "Don't laugh, but my ultimate meal is now {v}, not {old}.",
        ),
        restate=("Guess what I had for tea? Yep, {v} again.",),
        ask=("Which meal does {who} love more than any other?",),
        ask_now=("What is {who}'s favourite meal at this point?",),
        ask_before=("Which meal did {who} rate highest before {new} came along?",),
        ident="the one who can't get enough {v}",
        near_miss=("The office canteen tried doing {v} and it was a disaster.",),
        third_party=(
            "My stepdad would eat {v} for breakfast if he could.",
            "My little cousin refuses to eat anything but {v}.",
            "My best mate's idea of heaven is {v}.",
        ),
        keywords=("meal",),
    ),
    _reword(
        "partner",
        state=(
            "I've been seeing {v}, and honestly, things are great.",
            "So, {v} and me? Very much official now.",
            "My significant other, {v}, is the funniest person I know.",
        ),
        change=(
            "It didn't work out with {old}, but I'm seeing {v} now.",
            "Say goodbye to {old} - it's {v} I'm with now.",
            "My love life has had an update: it's {v} these days.",
        ),
        restate=(
            "Oh, and my significant other {v} says hello.",
            "Had a lovely lazy time at home with {v}.",
        ),
        ask=("Who is {who} seeing?", "Who's the significant other of {who}?"),
        ask_now=("Who's {who} seeing at the moment?", "Who is {who} with these days?"),
        ask_before=("Who was {who} with before {new}?",),
        ident="the person going out with {v}",
        near_miss=(
            "Someone called {v} keeps turning up in my suggested friends.",
            "Remember {v} from that terrible summer job?",
        ),
        third_party=(
            "My best mate has been going steady with {v} for ages.",
            "My stepmum's new fella is called {v}.",
            "My ex-flatmate is engaged to {v}, finally.",
        ),
        keywords=("seeing", "significant"),
    ),
    _reword(
        "car",
        state=(
            "For getting around I've got {a_v}, nothing flashy.",
            "These days my wheels are {a_v}, and it's been rock solid.",
            "I potter about in {a_v} that's older than some of my colleagues.",
        ),
        change=(
            "Goodbye {old}, I've gone and bought {a_v}.",
            "The {old} finally died, so I'm driving {a_v} now.",
            "I've upgraded my wheels from the {old} to {a_v}.",
        ),
        restate=("The {v} needed an MOT, passed first time, thankfully.",),
        ask=("What does {who} use for wheels?", "What motor does {who} have?"),
        ask_now=("What's {who} driving about in at the moment?",),
        ask_before=("What did {who} drive before getting the {new}?",),
        ident="the owner of {a_v}",
        near_miss=("A bloke down the road is flogging {a_v} cheap.",),
        third_party=(
            "My stepdad polishes his {v} more than he talks to us.",
            "My best mate passed her test and got {a_v} straight away.",
            "My auntie has had the same {v} since I was a kid.",
        ),
        keywords=("wheels", "motor"),
    ),
    _reword(
        "instrument",
        state=(
            "Musically, I'm all about the {v}; been playing since I was small.",
            "Whenever I get a spare hour, out comes the {v}.",
            "The {v} is what I play; there's a little amateur group I'm part of.",
        ),
        change=(
            "I've ditched the {old} and taken up the {v} instead.",
            "New musical obsession: the {v}. The {old} can gather dust.",
        ),
        restate=("Spent ages on the {v} and my fingertips are raw.",),
        ask=("What does {who} play, musically?", "What does {who} play as a musician?"),
        ask_now=("What does {who} play these days, musically speaking?",),
        ask_before=("What was {who} playing before switching to the {new}?",),
        ident="the friend who's handy on the {v}",
        near_miss=("A kid on the train was practising the {v}, bless him.",),
        third_party=(
            "My godson's been having {v} lessons, and his parents are suffering.",
            "My stepdad can play the {v} by ear, which is annoying.",
            "My auntie plays the {v} for a covers band.",
        ),
        keywords=("musically", "musician"),
    ),
    _reword(
        "drink",
        state=(
            "Nine times out of ten, what I'm holding is {a_v}.",
            "My usual order, without exception, is {a_v}.",
        ),
        change=(
            "Out goes {old}, in comes {v}: my daily beverage has changed.",
            "No more {old} for me, it's {v} all the way now.",
        ),
        restate=("Got {a_v} in hand right now, as per usual.",),
        ask=("What beverage does {who} usually sip?",),
        ask_now=("What does {who} mostly drink at the moment?",),
        ask_before=("What did {who} reach for before switching to {new}?",),
        ident="the one who's always got {a_v} in hand",
        near_miss=("The petrol station near me sells {v} now, weirdly.",),
        third_party=(
            "My nan gets through {v} like it's going out of fashion.",
            "My boss has {a_v} glued to her hand all day.",
            "My godparents keep {v} in the fridge at all times.",
        ),
        keywords=("beverage", "sip"),
    ),
    _reword(
        "book",
        state=(
            "My nose is buried in {v} at the moment, can't put it down.",
            "On the go right now: {v}, and I'm loving it.",
            "What am I reading? {v}, and it's brilliant.",
        ),
        change=(
            "Finished {old} at last, so now it's {v}.",
            "I abandoned {old} halfway and started {v} instead.",
        ),
        restate=("Stayed up way too late with {v} again.",),
        ask=("What is {who} reading?", "Which novel has {who} got on the go?"),
        ask_now=("What's {who} reading right now?",),
        ask_before=("What was {who} reading before picking up {new}?",),
        ident="the one with their nose in {v}",
        near_miss=("Every second person on the tube is reading {v}.",),
        third_party=(
            "My auntie's book group is doing {v}.",
            "My boss quotes {v} in every meeting.",
            "My godson has to read {v} for school and hates it.",
        ),
        keywords=("reading", "novel"),
    ),
    _reword(
        "language",
        state=(
            "Slowly but surely, I'm becoming fluent in {v}.",
            "Every spare moment goes on {v} flashcards.",
            "I've got a {v} tutor and we meet online.",
        ),
        change=(
            "I've parked {old} for now and switched to {v}.",
            "Bye bye {old}; {v} is the new project.",
        ),
        restate=("Ordered a coffee in {v} and didn't embarrass myself!",),
        ask=("Which foreign tongue is {who} picking up?", "What is {who} hoping to be fluent in one day?"),
        ask_now=("Which tongue is {who} working on currently?",),
        ask_before=("What was {who} studying before moving on to {new}?",),
        ident="the one picking up {v}",
        near_miss=("The new café has all its menus in {v}, for some reason.",),
        third_party=(
            "My stepmum chats to her sisters in {v}.",
            "My boss is doing an online course in {v}.",
            "My godson's school teaches {v} from age five.",
        ),
        keywords=("fluent", "tongue"),
    ),
    _reword(
        "sport",
        state=(
            "I play {v} competitively, we train like maniacs.",
            "Come rain or shine, I'm out playing {v}.",
            "There's a {v} team at the leisure centre and I'm on it.",
        ),
        change=(
            "Farewell {old}; it's {v} for me now.",
            "Switched from {old} to {v}, and my body is in shock.",
        ),
        restate=("We lost at {v} again, but the team drinks after made up for it.",),
        ask=("What does {who} play competitively?", "Which team game is {who} into?"),
        ask_now=("What's {who} playing these days, sport-wise?",),
        ask_before=("What did {who} play before taking up {new}?",),
        ident="the one who's mad about {v}",
        near_miss=("Some bloke on the bus was explaining the rules of {v} to his kid.",),
        third_party=(
            "My nephew got picked for the county {v} squad.",
            "My stepdad still plays {v} with blokes half his age.",
            "My boss is a huge {v} fan and has the kit to prove it.",
        ),
        keywords=("competitively", "team"),
    ),
)
