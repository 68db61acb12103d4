"""The held-out family's profile attributes (see ``phrasing.py``): new statement, question and distractor
templates for each standard attribute, which keeps its key, values and canonical ``fact`` / ``fact_change``.

Each template tuple has the length of its standard counterpart (so both families draw alike), and the
``Attribute`` conventions of ``vocabulary.py`` hold: every ``ask`` holds one of this family's ``keywords``,
which no line of another attribute, activity or distractor contains; first-person statements never start
with a value; ``near_miss`` and ``third_party`` lines hold no relative time expression and no name.
"""

from __future__ import annotations

from dataclasses import replace

from memprm.data.synthetic.attributes import ATTRIBUTES
from memprm.data.synthetic.vocabulary import Attribute

_STANDARD = {a.key: a for a in ATTRIBUTES}


def _reworded(key: str, **templates: object) -> Attribute:
    return replace(_STANDARD[key], **templates)


#: In the standard order; ask_now / ask_before only ever get a speaker's name as ``{who}``, ``ask`` also a
#: clause ("the speaker who ..."), so ``ask`` never puts a possessive on ``{who}``.
HELDOUT_ATTRIBUTES: tuple[Attribute, ...] = (
    _reworded(
        "job",
        state=(
            "What pays my bills? Being {a_v}, and I'm happy with that.",
            "It's as {a_v} that I earn my keep, and I wouldn't swap it.",
            "Most of my waking hours go into my work as {a_v}.",
            "By trade I'm {a_v}, and most weeks it's non-stop.",
        ),
        change=(
            "After years as {a_old}, I've switched careers and I'm {a_v} at last.",
            "You're talking to a brand-new {v}: I handed in my notice and retrained.",
            "Being {a_old} had run its course, so I've become {a_v}.",
            "I said goodbye to life as {a_old}; my new title is {v}.",
        ),
        restate=(
            "Whoever said being {a_v} is easy never tried it, what a shift I had.",
            "Still {a_v}, still loving it, still exhausted.",
        ),
        ask=("What does {who} do professionally?", "What occupation does {who} hold?"),
        ask_now=(
            "What is {who}'s occupation at the moment?",
            "As things stand, what does {who} do professionally?",
        ),
        ask_before=("Which occupation did {who} have prior to becoming {a_new}?",),
        ident="the speaker employed as {a_v}",
        near_miss=(
            "Apparently {a_v} is moving in upstairs.",
            "I read an interview with {a_v} who quit to sail around the world.",
        ),
        third_party=(
            "My aunt, {a_v} for twenty years, still talks shop at every dinner.",
            "My godson has decided he wants to train as {a_v}.",
            "My flatmate's girlfriend is {a_v} and works crazy hours.",
        ),
        keywords=("occupation", "professionally"),
    ),
    _reworded(
        "city",
        state=(
            "Home for me is {v}, and I can't picture living anywhere else.",
            "Is there anywhere better than {v}? Not for me, it's where I've put down roots.",
            "My flat in {v} is tiny, but the neighbourhood is great.",
            "The best part of living in {v}? Walking everywhere.",
        ),
        change=(
            "The boxes are finally unpacked: I've traded {old} for {v}.",
            "Leaving {old} was hard, but {v} already feels like home.",
            "It's official, my address is in {v}.",
        ),
        restate=(
            "Rain again in {v}, of course, I've stopped carrying an umbrella.",
            "There's a street festival on around the corner here in {v}.",
        ),
        ask=("Where is {who} based?", "Which town does {who} call home?"),
        ask_now=("Where is {who} based at present?", "Which town does {who} currently call home?"),
        ask_before=("Where was {who} based prior to {new}?",),
        ident="the one based in {v}",
        near_miss=(
            "Someone at the gym was raving about {v}.",
            "Would you ever visit {v}? I keep finding photos.",
        ),
        third_party=(
            "My godmother has a little flat in {v}, she rents it out.",
            "My old roommate ended up in {v} and loves it there.",
            "My grandad was born and raised in {v}.",
        ),
        keywords=("based", "town"),
    ),
    _reworded(
        "dog",
        state=(
            "Nobody in my house is more spoiled than my dog, {v}.",
            "The boss at home? That'd be {v}, my dog.",
            "Walks with {v}, my dog, are the best part of my routine.",
        ),
        change=(
            "It was hard saying goodbye to {old}, but there's a new dog at home: {v}.",
            "My parents took {old} off my hands, and a puppy called {v} has moved in with me.",
            "Say hello to {v}, the dog I just adopted!",
        ),
        restate=(
            "Guess who dug up half the garden? {v}, my dog.",
            "The vet says my dog {v} is in great shape.",
        ),
        ask=(
            "What name does the dog belonging to {who} answer to?",
            "Which name was given to the dog owned by {who}?",
        ),
        ask_now=("What name does {who}'s current dog answer to?",),
        ask_before=("Before {new} came along, what was {who}'s dog called?",),
        ident="the owner of a dog named {v}",
        near_miss=(
            "A lost dog named {v} keeps appearing on posters around here.",
            "At the park I met a huge dog called {v}.",
        ),
        third_party=(
            "My godson's dog, {v}, is afraid of the vacuum.",
            "My flatmate walks a dog named {v} for extra cash.",
            "My grandad's old dog {v} still follows him everywhere.",
        ),
        keywords=("dog",),
    ),
    _reworded(
        "food",
        state=(
            "Give me {v} over any other dish and I'm happy.",
            "Put {v} in front of me and I'll clear the plate, no dish comes close.",
            "There's one dish I'd eat every day if I could: {v}.",
        ),
        change=(
            "My taste has moved on from {old}; the dish I crave most is {v}.",
            "I've gone off {old} completely, and {v} has taken its place as my favourite dish.",
            "Who knew? My new favourite dish is {v}.",
        ),
        restate=("Ordered {v} yet again, I just can't help myself.",),
        ask=("Which dish does {who} like best?",),
        ask_now=("Which dish tops {who}'s list at the moment?",),
        ask_before=("Which dish did {who} love most before switching to {new}?",),
        ident="the {v} fan of the two",
        near_miss=("There's a queue outside that new {v} spot every lunchtime.",),
        third_party=(
            "My grandad makes {v} for the whole family whenever we visit.",
            "My godmother would happily survive on {v} alone.",
            "My flatmate orders {v} every chance she gets.",
        ),
        keywords=("dish",),
    ),
    _reworded(
        "partner",
        state=(
            "Me and my other half, {v}, are going strong.",
            "The person I'm with is {v}, and they make me laugh every single day.",
            "Did I mention I'm with {v}? It's been going really well.",
        ),
        change=(
            "It's over with {old}. I'm with {v}, and it feels right.",
            "Things with {old} didn't work out; {v} and I got together soon after.",
            "There's someone new in my life: {v}.",
        ),
        restate=("My other half, {v}, surprised me with flowers.", "Oh, and {v} sends their love."),
        ask=("Who is {who} romantically involved with?", "With whom is {who} in a relationship?"),
        ask_now=(
            "Who is {who}'s other half at this point?",
            "Which person is {who} in a relationship with currently?",
        ),
        ask_before=("Before {new}, who was {who} romantically involved with?",),
        ident="{v}'s other half",
        near_miss=(
            "Guess who messaged me out of nowhere? {v} from my old choir.",
            "I ran into {v}, an old classmate, at the pharmacy.",
        ),
        third_party=(
            "My flatmate is head over heels for someone called {v}.",
            "My godmother just married {v}, her partner of many years.",
            "My old roommate has been going out with {v} for a while.",
        ),
        keywords=("romantically", "relationship"),
    ),
    _reworded(
        "car",
        state=(
            "Parked outside my place is {a_v}, my pride and joy.",
            "I get everywhere in {a_v}; it's never once broken down.",
            "Yes, the car's {a_v}, and no, I'm not selling it.",
        ),
        change=(
            "The {old} is gone, I've got {a_v} in the driveway instead.",
            "Out with the {old}, in with {a_v}!",
            "Traded up: goodbye {old}, hello {v}.",
        ),
        restate=("Gave the {v} a proper wash, it looks brand new.",),
        ask=("What car is {who} driving around in?", "Which vehicle does {who} own?"),
        ask_now=("As of the most recent chat, which vehicle does {who} own?",),
        ask_before=("What car was {who} driving until the {new} came along?",),
        ident="the driver of {a_v}",
        near_miss=("Someone parked {a_v} across my driveway for hours.",),
        third_party=(
            "My godfather restores old cars, and his latest is {a_v}.",
            "My flatmate just leased {a_v} and is insufferable about it.",
            "My aunt has driven {a_v} for as long as I can remember.",
        ),
        keywords=("car", "vehicle"),
    ),
    _reworded(
        "instrument",
        state=(
            "Music-wise, it's the {v} for me; I've played it since school.",
            "You can usually find me with my {v} in a rehearsal room.",
            "My downstairs neighbours know every song I play on the {v}.",
        ),
        change=(
            "The {old} is gathering dust, because I've fallen for the {v}.",
            "I've put down the {old} for good and picked up the {v}.",
        ),
        restate=("Played the {v} until my fingers ached.",),
        ask=("Which instrument does {who} know how to play?", "What does {who} play, instrument-wise?"),
        ask_now=("Which instrument has {who} most recently taken up?",),
        ask_before=("Before the {new}, which instrument did {who} play?",),
        ident="whoever of the two plays the {v}",
        near_miss=("A busker in the underpass was playing the {v} beautifully.",),
        third_party=(
            "My godson practises the {v} at full volume.",
            "My grandad taught himself the {v} after retiring.",
            "My flatmate's boyfriend plays the {v} in a jazz trio.",
        ),
        keywords=("instrument",),
    ),
    _reworded(
        "drink",
        state=(
            "Nothing perks me up like {a_v}, my drink of choice.",
            "Ask anyone at my office what I drink: {v}, always.",
        ),
        change=(
            "I've gone from {old} to {v} as my drink of choice.",
            "Forget {old}, it's {v} I'm drinking by the gallon.",
        ),
        restate=("Sitting here with {a_v}, as usual.",),
        ask=("Which drink does {who} reach for most often?",),
        ask_now=("Which drink has {who} ended up favouring?",),
        ask_before=("Which drink did {who} favour before {new}?",),
        ident="the {v} drinker",
        near_miss=("The vending machine at the gym has {v} in it.",),
        third_party=(
            "My aunt swears that {v} is the secret to a long life.",
            "My godmother can't function without {a_v}.",
            "My flatmate fills the fridge with {v}.",
        ),
        keywords=("drink",),
    ),
    _reworded(
        "book",
        state=(
            "On my bedside table: {v}, half read.",
            "I'm halfway through {v} and I'm hooked.",
            "Can't talk long, {v} is waiting for me, I'm right at the good part.",
        ),
        change=(
            "Just turned the last page of {old}, and I've already started {v}.",
            "Put {old} down for good, I've picked up {v} instead.",
        ),
        restate=("I read three more chapters of {v} on the bus.",),
        ask=("Which book does {who} have on the go?", "What is {who} partway through, book-wise?"),
        ask_now=("Going by the latest chat, which book is {who} in the middle of?",),
        ask_before=("Before starting {new}, which book was {who} on?",),
        ident="the one partway through {v}",
        near_miss=("The bookshop window is full of copies of {v}.",),
        third_party=(
            "My aunt is rereading {v} for the fifth time.",
            "My godmother's reading group picked {v} as their next title.",
            "My grandad says {v} is the only novel worth reading.",
        ),
        keywords=("book",),
    ),
    _reworded(
        "language",
        state=(
            "Verb tables in {v} are eating up my free time.",
            "My phone is set to {v} so I'm forced to practise.",
            "Learning {v} from scratch is humbling, let me tell you.",
        ),
        change=(
            "I've dropped {old} and enrolled in {v} classes instead.",
            "My language apps are all set to {v}; {old} is on hold.",
        ),
        restate=("Managed a whole conversation in {v} with a waiter!",),
        ask=("Which language has {who} been studying?", "What language is {who} trying to get fluent in?"),
        ask_now=("Which language is {who} currently studying?",),
        ask_before=("Before {new}, which language was {who} studying?",),
        ident="the {v} learner",
        near_miss=("There's a film in {v} showing at the cinema.",),
        third_party=(
            "My godson speaks {v} with his mum at home.",
            "My aunt signed up for classes in {v}.",
            "My flatmate grew up speaking {v}.",
        ),
        keywords=("language",),
    ),
    _reworded(
        "sport",
        state=(
            "Training nights are for {v}, I'm on a club team.",
            "My knees hate me, but I wouldn't give up {v} for anything.",
            "You'll find me playing {v} with my club most weekends.",
        ),
        change=(
            "Hung up my {old} kit; I'm on a {v} team instead.",
            "I've swapped {old} for {v}, and I'm loving the change.",
        ),
        restate=("Our {v} team scraped a win, I'm exhausted.",),
        ask=("Which sport keeps {who} busy?", "In what sport does {who} compete?"),
        ask_now=("What sport is {who} playing at present?",),
        ask_before=("Which sport did {who} compete in before {new}?",),
        ident="the {v} player",
        near_miss=("The {v} final was on in the pub and everyone was shouting.",),
        third_party=(
            "My godson was picked for the school {v} team.",
            "My aunt still plays {v} at sixty.",
            "My flatmate referees {v} matches for pocket money.",
        ),
        keywords=("sport",),
    ),
)
