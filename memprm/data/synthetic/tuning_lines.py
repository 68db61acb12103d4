"""The tuning family's dialogue lines (see ``phrasing.py``): one table per table of ``lines.py``, same lengths
and placeholders, new sentences. Conventions: ``docs/design/synthetic_data.md`` ("Template conventions").
"""

from __future__ import annotations

# --- event turns -------------------------------------------------------------------------------------
EVENT_TELLS = (
    "{Rel}, believe it or not, I {past}, and {comment}.",
    "You'll never guess: I {past} {rel}!",
    "Quick update, I {past} {rel}. {Comment}.",
    "Well, {rel} I {past}, and let me say, {comment}.",
    "Something to share: I {past} {rel}.",
    "Oh, before I forget, I {past} {rel}. {Comment}!",
)
COMMENTS = (
    "I loved every minute",
    "I'm still on a high",
    "it wore me out but it was worth every bit",
    "I'd sign up again in a heartbeat",
    "it blew my expectations away",
    "what an adventure that was",
    "I've been grinning ever since",
)

# --- distractors --------------------------------------------------------------------------------------
GREETINGS = (
    "{other}, hello! How are things?",
    "Ah, {other}, it's been a while! How are you?",
    "Hiya {other}, do you have a moment to chat?",
    "{other}! Long time no speak, how's life?",
    "Well hello, {other}! I was just thinking about you.",
)
GREETING_REPLIES = (
    "Hey {other}! I'm great, and yourself?",
    "Oh hi {other}! Can't complain, what about you?",
    "Of course, {other}. What have you been up to?",
    "Hello! Always a pleasure, {other}.",
)
PROMPTS = (
    "And you, {other}? What's been happening?",
    "Enough about me, how about you?",
    "Any news on your end?",
    "Anything exciting happening in your world?",
    "Over to you, {other}, what's the latest?",
)
REACTIONS = {
    "event": (
        "That sounds incredible!",
        "Oh, how lovely for you!",
        "Ha, brilliant.",
        "Now I'm a little envious, that's great.",
        "You always manage to do such fun stuff.",
        "Get out, that's fantastic!",
    ),
    "state": (
        "Huh, I never knew that!",
        "Oh, how nice.",
        "Ha, that fits you perfectly.",
        "Lovely, thanks for telling me.",
    ),
    "change": (
        "Whoa, what a shift!",
        "Really? Fingers crossed it all goes well.",
        "Big news, congrats!",
        "A fresh start, I'm thrilled for you.",
    ),
    "restate": (
        "Ha, naturally.",
        "That tracks.",
        "Still the same old you!",
    ),
}
SMALL_TALK = (
    ("Where does the time go, honestly?", "No idea, it just disappears."),
    ("This weather can't make up its mind.", "I know, I've given up dressing for it."),
    ("I could really do with a break somewhere sunny.", "Couldn't we all."),
    ("Is everyone at home keeping well?", "They are, thanks, kind of you to ask."),
    ("Seen any good films or series lately?", "Hardly, I never get past the second episode."),
    (
        "I meant to get loads done but fell asleep on the sofa.",
        "Sounds like a perfectly good afternoon to me.",
    ),
    ("Don't you wish days were longer?", "Constantly!"),
    ("I'm trying to go to bed earlier.", "Smart, I keep meaning to do that."),
    ("Our chats always run on for hours, don't they?", "They do, and I'm not complaining."),
    ("My houseplants are looking a bit sad.", "Oh no! Maybe give them some water?"),
    ("Got anything nice planned soon?", "Not really, just taking it easy."),
    ("I love having a proper natter like this.", "Me too, it always lifts my mood."),
    ("I'm terrible at answering messages.", "Join the club."),
    ("Are you an early bird or a night owl?", "Night owl, no question."),
    ("My inbox is finally empty.", "Ooh, that must be a relief."),
    ("What's been the highlight of your month?", "Hmm, catching up with you, probably."),
)
TOPICAL = (
    ("I watched a programme on {topic}, fascinating stuff.", "Sounds like my kind of thing."),
    ("A stranger on the train told me all about {topic}.", "Ha, some people just love to share."),
    ("What do you make of {topic}, honestly?", "It has its charm, I suppose."),
    ("There was a funny piece in the paper about {topic}.", "Send me a link!"),
)
NEAR_MISS_REPLIES = (
    "Oh, fun.",
    "Ha, what a coincidence.",
    "Huh, who knew.",
    "Oh nice, good to know.",
)
THIRD_PARTY_REPLIES = (
    "Oh, lovely for them!",
    "Ha, send them my best.",
    "Aw, that's great.",
    "Ha, typical.",
)
CLOSINGS = (
    ("Right, I'd better be off. Speak soon!", "Bye for now, {other}, look after yourself!"),
    ("I need to dash, but this was great.", "Likewise, catch you later {other}!"),
    ("We should do this again soon.", "Absolutely. Until next time, {other}!"),
    ("Time for me to go, lovely chatting.", "It was, {other}. Speak soon!"),
)
CLOSING_TAILS = ("Cheerio!", "Ta-ra!", "Bye bye!")

TEMPORAL_ASK = ("On what date did {who} {base}?",)
EVENT_IDENT = "the one who {past}"  # multi-hop subject: {past} is the event's third-person phrase
