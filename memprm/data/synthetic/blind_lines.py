"""The blind family's dialogue lines (see ``phrasing.py``): one table per table of ``lines.py``, same lengths
and placeholders, new sentences. Conventions: ``docs/design/synthetic_data.md`` ("Template conventions").
"""

from __future__ import annotations

# --- event turns -------------------------------------------------------------------------------------
EVENT_TELLS = (
    "So yeah, I {past} {rel}, and {comment}.",
    "{Rel}, would you believe, I {past}!",
    "Random one, but I {past} {rel}. {Comment}.",
    "I {past}, {rel} actually, and {comment}.",
    "Not sure I mentioned it, but {rel} I {past}.",
    "Funny story from {rel}: I {past}. {Comment}!",
)
COMMENTS = (
    "the whole thing was a blast",
    "I haven't stopped talking about it",
    "I was shattered afterwards, but happy",
    "ten out of ten, no notes",
    "it went way better than I'd feared",
    "honestly, what a day",
    "I can't wipe the smile off my face",
)

# --- distractors --------------------------------------------------------------------------------------
GREETINGS = (
    "Oh hey, {other}! You around for a bit?",
    "{other}, hiya. How's life treating you?",
    "Hey {other}, got five minutes?",
    "{other}! There you are. How've you been?",
    "Knock knock, {other}. Is this a bad moment?",
)
GREETING_REPLIES = (
    "{other}! Yeah, all good over here. And you?",
    "Hey hey, {other}. Can't grumble, honestly. What's up?",
    "Oh, hi {other}! Sure, fire away.",
    "Ha, {other}, speak of the devil. I'm fine, you?",
)
PROMPTS = (
    "Anyway, that's plenty from me. What's going on in your life, {other}?",
    "But tell me about you!",
    "You've gone quiet, {other}. Spill, what's new?",
    "What have you got for me, then?",
    "How about things at your end, {other}?",
)
REACTIONS = {
    "event": (
        "Shut up, that's amazing.",
        "Okay, now I'm officially jealous.",
        "Look at you go!",
        "Ahh, I love hearing stuff like that.",
        "You lead such an interesting life, honestly.",
        "Wait, really? That's so you.",
    ),
    "state": (
        "Oh cool, I'd never have guessed.",
        "Ooh, nice one.",
        "Ha, I can totally imagine that.",
        "Huh, you learn something every day.",
    ),
    "change": (
        "Hang on, since when?! Good for you, though.",
        "Oh wow, didn't see that coming! Hope it goes well.",
        "That's a proper shake-up. Congrats, I think?",
        "New chapter, then! Exciting.",
    ),
    "restate": (
        "Ha, why does that not shock me?",
        "Yep, that checks out.",
        "Same old, same old!",
    ),
}
SMALL_TALK = (
    ("Do you ever just stare into the fridge hoping something new appears?", "Constantly, ha."),
    ("My phone battery gives up by lunchtime these days.", "Mine too, it drives me up the wall."),
    ("My mum's been waiting on a call from me for ages.", "Ring her, she'll be thrilled."),
    ("Is it me or have prices gone completely mad?", "It's not you. Everything costs a fortune now."),
    ("I accidentally stayed up until three scrolling.", "Classic. Was it worth it?"),
    ("Someone in my building keeps whistling in the stairwell.", "Honestly, that sounds kind of charming."),
    ("I've started making lists for everything.", "Does it help, or do you just end up with more lists?"),
    ("Do you reckon it's going to rain again?", "Probably, it always does."),
    ("I can never decide what to have for dinner.", "Same! It's the hardest choice there is."),
    ("My handwriting has got so bad.", "Mine was never good to begin with."),
    ("Have you noticed everyone's wearing the same trainers?", "Ha, I've got them on right now."),
    ("I tidied my desk and now I can't find anything.", "That's always the way, isn't it?"),
    ("I want to whistle properly one of these days.", "Ha, good luck, I've never managed it."),
    ("Honestly, chatting with you beats anything on telly.", "Aw, you're too kind."),
    ("I bought a fancy diary and I'm scared to write in it.", "I have about six of those."),
    ("What's something small that made you happy recently?", "A really good sandwich, if I'm honest."),
)
TOPICAL = (
    ("My cousin's gone all in on {topic} lately.", "Ha, everyone needs a hobby."),
    ("Is {topic} actually worth the hype, do you think?", "Depends who you ask, I guess."),
    ("There's a whole online forum about {topic}, it's wild.", "Of course there is, ha."),
    ("I overheard a heated debate about {topic} on the tram.", "People care about the strangest stuff."),
)
NEAR_MISS_REPLIES = (
    "Ha, go figure.",
    "Oh yeah? Funny old world.",
    "Huh, neat.",
    "Oh, right, fair enough.",
)
THIRD_PARTY_REPLIES = (
    "Aww, love that for them.",
    "Ha, that's very them.",
    "Give them a wave from me.",
    "Oh, how fun for them.",
)
CLOSINGS = (
    ("Okay, I'm being summoned, gotta go.", "Ha, go! Chat later, {other}."),
    ("Shall we pick this up another time?", "Yes please. Bye {other}!"),
    ("Right, that's my break over, sadly.", "Boo. Talk again soon, {other}."),
    ("Anyway, I'll let you get on.", "Thanks for this, {other}. Catch you around!"),
)
CLOSING_TAILS = ("Toodle-oo!", "Bye now!", "Speak later!")

TEMPORAL_ASK = ("Around when did {who} {base}?",)
EVENT_IDENT = "the friend who {past}"  # multi-hop subject: {past} is the event's third-person phrase
