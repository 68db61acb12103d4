"""The held-out family's dialogue lines (see ``phrasing.py``): one table per table of ``lines.py``, same
lengths, same placeholders, new sentences. ``lines.py`` and ``docs/design/synthetic_data.md`` ("Template
conventions") say what each table is for; its conventions hold here, with this family's relative times and
keywords: distractor lines hold no relative time expression and no attribute or activity keyword.
"""

from __future__ import annotations

# --- event turns -------------------------------------------------------------------------------------
EVENT_TELLS = (
    "You'll never guess what I did {rel}: I {past}.",
    "It was {rel} that I {past}, and {comment}.",
    "{Rel}, if you can believe it, I {past}. {Comment}.",
    "Quick update from me: I {past} {rel}!",
    "Can I tell you something? I {past} {rel}, and {comment}.",
    "Here's one for you: {rel} I {past}. {Comment}!",
)
COMMENTS = (
    "I loved every minute of it",
    "honestly, it was the highlight of my month",
    "I keep replaying it in my head",
    "my cheeks hurt from grinning",
    "I'm worn out in the best possible way",
    "I'd recommend it to anyone",
    "it's all I've talked about since",
)

# --- distractors --------------------------------------------------------------------------------------
GREETINGS = (
    "{other}, hi! Is now a good time?",
    "Look who it is! Hi {other}.",
    "Hey, {other}. It's been too long!",
    "Hi {other}, are you free for a quick chat?",
    "{other}! Finally, I've been meaning to message you.",
)
GREETING_REPLIES = (
    "{other}! Good timing, I was just putting the kettle on.",
    "Hey you! All fine on my end, how are things with you, {other}?",
    "Hi {other}, of course. What's the latest?",
    "Ah, {other}, perfect timing. I'm all ears.",
)
PROMPTS = (
    "Enough about me, what's been happening with you, {other}?",
    "And you? What have you been up to?",
    "Over to you, {other}. Any news?",
    "How have things been on your side?",
    "Right, your turn: what's been keeping you busy?",
)
REACTIONS = {
    "event": (
        "Okay, that's brilliant.",
        "Stop it, that sounds incredible!",
        "Ha, only you would do that.",
        "I'm so glad you got to do that.",
        "Honestly, I'm impressed.",
        "That's the kind of thing I should do more of.",
    ),
    "state": (
        "Huh, I never knew that about you.",
        "That makes a lot of sense, actually.",
        "Oh, how lovely.",
        "Nice, I can picture that.",
    ),
    "change": (
        "Whoa, that's quite the shift!",
        "Well, that's a surprise. Good luck with it!",
        "Look at you, shaking things up.",
        "Big step! I hope it's everything you wanted.",
    ),
    "restate": (
        "Classic you.",
        "Ha, no surprises there.",
        "Why am I not surprised?",
    ),
}
SMALL_TALK = (
    ("Is it just me, or is everyone tired lately?", "It's not just you, I'm running on empty."),
    ("I spent ages choosing a new phone case.", "Ha, priorities!"),
    ("My plants are somehow still alive.", "A miracle, honestly."),
    ("Do you ever reread old messages and cringe?", "Constantly, it's a hobby at this point."),
    ("Someone left a whole box of pastries at my door.", "Lucky you! Any left?"),
    ("Screen time is my new enemy, I'm cutting down.", "Good luck, I gave up on that ages ago."),
    ("The neighbours are renovating again.", "Oh no, the drilling must be endless."),
    ("I finally sorted out my wardrobe.", "Please come and do mine next."),
    ("What's one thing you can't live without?", "Headphones, no question."),
    ("Are you a planner or more spontaneous?", "Spontaneous, which gets me into trouble."),
    ("I tried a new recipe and it flopped.", "Happens to the best of us."),
    ("Has the rain let up where you are?", "Barely, I've given up on dry socks."),
    ("I keep losing my keys.", "Get one of those little trackers!"),
    ("Funny how the best chats happen by accident.", "True, these are my favourite kind."),
    ("I've started going to bed earlier.", "Look at you being sensible."),
    ("What's the last thing that made you laugh out loud?", "A video of a goat yelling, don't judge me."),
)
TOPICAL = (
    ("I went down a rabbit hole reading about {topic}.", "Ha, those rabbit holes are dangerous."),
    ("There's a podcast entirely about {topic}, can you imagine?", "Honestly, I'd probably listen."),
    ("My feed is suddenly full of {topic} for some reason.", "The algorithm knows something you don't."),
    ("A colleague of mine won't shut up about {topic}.", "Everyone has their thing."),
)
NEAR_MISS_REPLIES = (
    "Oh, funny.",
    "Really? Who'd have thought.",
    "Small world, isn't it?",
    "Ha, that's random.",
)
THIRD_PARTY_REPLIES = (
    "Good for them, honestly.",
    "Tell them I said hello!",
    "Ha, sounds like them.",
    "Aw, that's sweet.",
)
CLOSINGS = (
    ("Right, I'd better let you go. This was great!", "Agreed, catch you later, {other}!"),
    ("I've got to dash, but let's do this again.", "Any time, {other}. Bye!"),
    ("That's me out of time, unfortunately.", "No worries, speak soon {other}!"),
    ("Okay, duty calls. Message me later?", "Will do. Look after yourself, {other}."),
)
CLOSING_TAILS = ("Cheers!", "Later!", "Ciao!")

TEMPORAL_ASK = ("When was it that {who} got to {base}?",)
EVENT_IDENT = "the speaker who {past}"
