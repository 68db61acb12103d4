"""Dialogue lines of the synthetic generator: event tellings, greetings, prompts, reactions, small talk,
distractors, closings and question templates. Template conventions are in :mod:`memprm.data.synthetic.vocabulary`.
"""

from __future__ import annotations

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
THIRD_PARTY_REPLIES = (
    "Oh, good for them!",
    "Ha, say hi from me.",
    "That's nice to hear.",
    "Ha, classic.",
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
EVENT_IDENT = "the person who {past}"  # multi-hop subject: {past} is the event's third-person phrase
