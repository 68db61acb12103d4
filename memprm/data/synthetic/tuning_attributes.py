"""The tuning family's profile attributes (see ``phrasing.py``): new statement, question and distractor
templates for every attribute of ``attributes.py``, in the same order and with tables of the same lengths.

Values, keywords and the canonical fact texts are the standard ones, so the fact annotations, answers and the
unanswerable topics stay the same. Conventions: ``docs/design/synthetic_data.md`` ("Template conventions").
"""

from __future__ import annotations

from memprm.data.synthetic.attributes import ATTRIBUTES
from memprm.data.synthetic.tuning_vocabulary import reword
from memprm.data.synthetic.vocabulary import Attribute

_STANDARD = {a.key: a for a in ATTRIBUTES}

TUNING_ATTRIBUTES: tuple[Attribute, ...] = (
    reword(
        _STANDARD["job"],
        state=(
            "My days are spent working as {a_v}, and I wouldn't trade it.",
            "Right now I earn my keep as {a_v} across town.",
            "Being {a_v} means my calendar is always packed.",
            "I'm {a_v} by trade, did you know? Never a dull moment.",
        ),
        change=(
            "No more being {a_old} for me, I've become {a_v}!",
            "Fresh start at work: I've been hired as {a_v}.",
            "After years as {a_old}, I went back to school and qualified as {a_v}.",
            "My old position is behind me; I've taken a post as {a_v}.",
        ),
        restate=(
            "Some days are draining when you're {a_v}, yet I'd pick it again.",
            "Just finished a twelve-hour day as {a_v}, such is life.",
        ),
        ask=("How does {who} earn a living?", "What kind of job does {who} hold?"),
        ask_now=("How does {who} earn a living these days?", "What job does {who} currently hold?"),
        ask_before=("Which job did {who} hold prior to becoming {a_new}?",),
        ident="the one employed as {a_v}",
        near_miss=(
            "A guy in my building wants to retrain as {a_v}.",
            "On the train I sat beside {a_v} with hilarious stories.",
        ),
        third_party=(
            "My sister has been {a_v} for ages and adores it.",
            "My cousin got taken on as {a_v} and has tales already.",
            "My father spent three decades as {a_v} until retirement.",
        ),
    ),
    reword(
        _STANDARD["city"],
        state=(
            "Home for me is {v}, and I adore the place.",
            "The weather where I am, in {v}, changes every hour.",
            "There's never a quiet weekend when you're based in {v}.",
            "Since I made {v} my home, I go everywhere on foot.",
        ),
        change=(
            "Goodbye {old}, hello {v}: I've relocated!",
            "After all those years in {old}, we've upped sticks to {v}.",
            "My new flat in {v} is finally unpacked.",
        ),
        restate=(
            "I'll never tire of the autumn colours in {v}.",
            "Rush hour in {v} was chaos again, nothing new.",
        ),
        ask=("In which city is {who} based?", "What city does {who} call home?"),
        ask_now=("In which city is {who} based at present?", "What city is home for {who} nowadays?"),
        ask_before=("Which city was {who} based in prior to the move to {new}?",),
        ident="the one whose home is {v}",
        near_miss=(
            "An old schoolmate has just returned from a trip to {v}.",
            "Is {v} somewhere you've visited?",
        ),
        third_party=(
            "My sister relocated to {v} and raves about it.",
            "My oldest friend is based in {v}; I owe her a visit.",
            "My uncle was born in {v} and never left.",
        ),
    ),
    reword(
        _STANDARD["dog"],
        state=(
            "There's a dog in my life named {v}, and he's the real boss at home.",
            "Honestly, walking my dog {v} takes up half my day.",
            "Have I introduced my dog yet? He answers to {v}.",
        ),
        change=(
            "Now that my parents look after {old}, I've taken in a new dog, {v}.",
            "These days {old} stays with my aunt, and there's a new dog at mine called {v}.",
            "We've welcomed a new dog into the family, {v}!",
        ),
        restate=(
            "Guess who chewed my shoes again? My dog {v}.",
            "The vet gave my dog {v} a clean bill of health.",
        ),
        ask=("What name does the dog of {who} answer to?", "What did {who} name the dog?"),
        ask_now=("Which dog does {who} have at present?",),
        ask_before=("Which dog did {who} own prior to {new}?",),
        ident="the one with a dog called {v}",
        near_miss=(
            "Next door there's an adorable dog named {v}.",
            "The local paper ran a story about a lost dog called {v}.",
        ),
        third_party=(
            "My neighbour has a dog, {v}, who howls at every passing bus.",
            "My cousin picked {v} as the name for her new dog.",
            "My aunt owns a dog named {v} who once pinched my lunch.",
        ),
    ),
    reword(
        _STANDARD["food"],
        state=(
            "Nothing makes me happier than {v}; it's the food I'd pick every time.",
            "Give me {v} any day, no other food comes close.",
            "Ask me about food and I'll say {v} before you finish.",
        ),
        change=(
            "Once upon a time it was {old}, but {v} has taken over as my top food.",
            "Surprise, surprise: {v} is now the food I crave most.",
            "Done with {old}; these days the food I love best is {v}.",
        ),
        restate=("Ate {v} for supper yet again, no food beats it.",),
        ask=("Which food does {who} love most?",),
        ask_now=("Which food does {who} like best at the moment?",),
        ask_before=("Before {new} came along, which food did {who} love most?",),
        ident="the one whose top food is {v}",
        near_miss=("Somebody opened a {v} restaurant round the corner from me.",),
        third_party=(
            "My flatmate would eat {v} at every meal if she could.",
            "My dad's homemade {v} is legendary.",
            "My sister orders {v} whenever we eat out.",
        ),
    ),
    reword(
        _STANDARD["partner"],
        state=(
            "I've been with my partner, {v}, for a good few years.",
            "There's someone special in my life: I'm dating {v}, and they're great.",
            "My partner {v} could make anyone laugh, you'd get on.",
        ),
        change=(
            "It's over with {old}; I've been dating {v} since.",
            "After {old} and I split, I met {v}, and we're dating now.",
            "There's a new partner in the picture: {v}.",
        ),
        restate=(
            "Dinner was cooked by my partner {v}, and it was incredible.",
            "You've got a hello from my partner {v}.",
        ),
        ask=("Who does {who} have as a partner?", "What's the partner of {who} called?"),
        ask_now=("Who is {who} dating at the moment?", "Who's {who} currently going out with?"),
        ask_before=("Prior to {new}, who was {who} dating?",),
        ident="the one in a relationship with {v}",
        near_miss=(
            "Guess who I ran into at the gym? {v} from my old school.",
            "Does the name {v} ring a bell? We were in the same class.",
        ),
        third_party=(
            "My sister's new flame is {v}, and they seem lovely.",
            "My best mate is marrying {v} next year!",
            "My cousin has been seeing {v} for a while, lovely person.",
        ),
    ),
    reword(
        _STANDARD["car"],
        state=(
            "I get around in {a_v}: nothing flashy, but totally reliable.",
            "I've grown oddly fond of my car, {a_v}.",
            "Road trips are a breeze in {a_v}, which is what I drive.",
        ),
        change=(
            "The {old} is gone; I've bought {a_v}!",
            "After trading in the {old}, I'm driving {a_v} now.",
            "I've treated myself to a new car, {a_v}.",
        ),
        restate=("Took the {v} for a service and the mechanic says it's in great shape.",),
        ask=("Which car does {who} get around in?", "What kind of car is owned by {who}?"),
        ask_now=("What does {who} drive at the moment?",),
        ask_before=("Which car did {who} own until the {new} replaced it?",),
        ident="the one behind the wheel of {a_v}",
        near_miss=("Someone on my street is selling {a_v}, going cheap.",),
        third_party=(
            "My dad treated himself to {a_v} and polishes it constantly.",
            "My sister got {a_v} and talks about nothing else.",
            "My neighbour parks {a_v} outside and waxes it religiously.",
        ),
    ),
    reword(
        _STANDARD["instrument"],
        state=(
            "The instrument I love most is the {v}; I've played it for ages.",
            "Most evenings you'll find me practising the {v}.",
            "I'm on the {v} in a small local band.",
        ),
        change=(
            "The {old} is in the cupboard now; I've taken up the {v}.",
            "New instrument for me: I'm learning the {v}!",
        ),
        restate=("Another hour of scales on the {v}; sorry, neighbours.",),
        ask=("What instrument is played by {who}?", "Which instrument does {who} practise?"),
        ask_now=("Which instrument is {who} playing these days?",),
        ask_before=("Which instrument did {who} give up for the {new}?",),
        ident="the one who practises the {v}",
        near_miss=("A busker in the square was playing the {v} beautifully.",),
        third_party=(
            "My nephew has just started lessons on the {v}.",
            "My flatmate practises the {v} until midnight.",
            "My aunt has been in an orchestra on the {v} for decades.",
        ),
    ),
    reword(
        _STANDARD["drink"],
        state=(
            "Every afternoon I treat myself to my favourite drink, {v}.",
            "Mornings don't begin for me without {v}, my drink of choice.",
        ),
        change=(
            "I've swapped {old} for {v} as my usual drink.",
            "Farewell {old}: {v} is the drink I reach for now!",
        ),
        restate=("Right this moment I've got {a_v} in hand, my usual drink.",),
        ask=("Which drink does {who} usually reach for?",),
        ask_now=("Which drink does {who} reach for these days?",),
        ask_before=("Which drink did {who} prefer until switching to {new}?",),
        ident="the one whose usual drink is {v}",
        near_miss=("There's a new kiosk by the office that does {v}.",),
        third_party=(
            "My mum can't get through the afternoon without {a_v}.",
            "My sister is hooked on {v}, honestly.",
            "My flatmate stocks the fridge with nothing but {v}.",
        ),
    ),
    reword(
        _STANDARD["book"],
        state=(
            "Currently I'm glued to {v}; what a page-turner of a book.",
            "These evenings I'm buried in a book: {v}.",
            "I've got my nose in {v} lately, and it's brilliant.",
        ),
        change=("Having finished {old}, I've moved on to {v}.", "I've started a new book, {v}."),
        restate=("Slowly getting through {v}, and I'm loving every chapter.",),
        ask=("Which book is {who} working through?", "What book has {who} been reading?"),
        ask_now=("Which book is {who} in the middle of now?",),
        ask_before=("What book did {who} finish before starting {new}?",),
        ident="the reader of {v}",
        near_miss=("I keep seeing people on the bus with copies of {v}.",),
        third_party=(
            "My mum keeps reading bits of {v} aloud to me.",
            "My cousin says {v} is the best book she's ever read.",
            "My best friend picked {v} for her reading group.",
        ),
    ),
    reword(
        _STANDARD["language"],
        state=(
            "I've been studying {v}; tough language, but I'm enjoying it.",
            "Twice a week I have {v} lessons, and picking up a language feels great.",
            "This year's big goal is getting fluent in {v}.",
        ),
        change=("I dropped {old} and took up {v} instead.", "There's a new language on my plate: {v}."),
        restate=("My {v} is really improving, all that practice is working.",),
        ask=("What language has {who} taken up?", "Which language does {who} study?"),
        ask_now=("Which language is {who} studying at the moment?",),
        ask_before=("What language had {who} been studying ahead of {new}?",),
        ident="the one studying {v}",
        near_miss=("A colleague of mine is taking evening classes in {v}.",),
        third_party=(
            "My sister is cramming {v} ahead of her travels.",
            "My uncle is fluent in {v}, which I envy.",
            "My best friend has {v} classes twice a week.",
        ),
    ),
    reword(
        _STANDARD["sport"],
        state=(
            "No week goes by without a game of {v} for me; best sport there is.",
            "I'm on a {v} team; we've got league games every week.",
            "When it comes to sport, {v} is my thing; I'm in a club.",
        ),
        change=(
            "I've left the {old} club behind and signed up for {v}.",
            "A new sport for me: I've taken up {v}.",
        ),
        restate=("Our {v} game was a thriller; that sport still excites me.",),
        ask=("What sport is {who} into?", "In which sport does {who} compete?"),
        ask_now=("What sport is {who} playing these days?",),
        ask_before=("What sport did {who} give up to take up {new}?",),
        ident="the one who plays {v} every week",
        near_miss=("Someone was showing a {v} match on the big screen at the café.",),
        third_party=(
            "My cousin is the captain of a {v} team.",
            "My nephew is obsessed with {v}, he practises constantly.",
            "My neighbour runs {v} coaching for kids at weekends.",
        ),
    ),
)
