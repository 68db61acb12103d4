"""Synthetic multi-session dialogues: the data the embedded default trains and tests on.

Everything a laptop run sees comes from here, so the generator is built to make the method's signals
meaningful rather than to look like LoCoMo word for word:

- **Facts worth writing.** Each session tells ``events_per_session`` dated events ("I ran a half marathon
  yesterday") and some profile statements ("I work as a nurse"). A fact-stating turn carries exactly one
  :class:`Fact` whose text is a canonical third-person statement; an event's fact resolves the relative time
  expression against the session date ("On 7 May 2023, Ana ran a half marathon ..."). Temporal questions
  are answered with that absolute date, which the turn itself never contains: the reader needs the session
  date or a memory that resolved it.
- **Distractors worth skipping.** Greetings, prompts ("So what's new with you?"), the listener's reactions
  and, in every session, at least ``min_filler_exchanges`` two-turn filler exchanges however many facts it
  tells: plain small talk, *topical* remarks about a topic of the dialogue's events ("Do you think pottery is
  overrated?"; ``topical_distractor_frac``) and *near misses* (``near_miss_frac``) of an attribute type the
  dialogue uses, with a value no speaker ever holds: half a passing mention ("Have you ever been to
  Oslo?"), half a *third-party* statement of the same attribute ("My sister works as a chef, she loves
  it.", "My neighbour's dog is called Rocky, he barks at everything."), which competes with the speakers'
  real statements for retrieval. Distractor turns carry no facts.
- **Sessions that grow.** A session holds ``turns_per_session`` turns when its facts and fillers fit;
  otherwise it grows to fit them. The ``LoadReport`` records every grown session ("syn-003 session 2: 28
  turns (+6)") and one summary of the turns added over all dialogues; on the defaults every session grows
  (~34 turns on average).
- **Values that get overturned.** Each of ``profile_attributes`` (speaker, attribute) pairs is stated in the
  first half of the dialogue, then overturned in later sessions with probability ``overturn_prob`` (again
  with the same probability, up to ``max_overturns``) and maybe restated unchanged (``restate_prob``), so
  merges into version chains and near-duplicate writes both matter. A dialogue draws every attribute value
  at most once, so a current value identifies its holder; near misses draw from the values left over.

Questions (``Question.category``, in ``CATEGORIES`` order; ``category_id`` is 0, the synthetic source has no
official numbering):

- ``single-hop``: the value of a never-overturned attribute, or an event's detail; evidence = the turn
  that stated it; the answer appears verbatim in that turn.
- ``multi-hop``: two facts of one speaker, told in *different sessions*, joined: an attribute of "the
  person who <did an event / holds a current value>"; evidence = both turns; the question never names the
  speaker.
- ``temporal``: "When did Ana run the half marathon?"; answer = the absolute date ("7 May 2023"), or
  LoCoMo's "the week before 8 May 2023" for "last week"; evidence = the event turn.
- ``knowledge-update``: the current value of an overturned attribute; evidence = the original statement and
  every overturn, the last of which holds the answer verbatim.
- ``previous-value``: the value an attribute had right before a given overturn ("What job did Ana have
  before becoming a teacher?"); evidence = the two turns: the statement of the earlier value (the original
  statement or an earlier overturn) and the overturn to the named value.
- ``unanswerable``: about an attribute type or an activity that nobody in the dialogue has, and whose words
  and values appear in no turn (distractors included); no evidence; answer "Not mentioned in the
  conversation".

Every question is dated at the last session. Question ids are ``<dialogue id>/q<nn>`` in shuffled order;
turn ids are LoCoMo's ``D<session>:<turn>`` (1-based; ``Session.index`` and ``Turn.session_index`` are the
1-based session number). Speakers strictly alternate within a session.

Dates: a dialogue's first session falls on a day of 2022-2023, later ones ``min_gap_days`` to
``max_gap_days`` apart (uniform), each at a time between 9:00 and 20:59; ``Session.datetime_text`` is
LoCoMo's header style ("1:56 pm on 8 May, 2023") and answers use LoCoMo's date style ("7 May 2023").

Randomness: each dialogue uses its own ``random.Random`` seeded with the config seed and the dialogue index
(never the global generator), so a dialogue depends only on (config, index) and the same config gives the
same data on every machine. Shortfalls (too few candidates for a question kind) and sessions longer than
``turns_per_session`` are recorded in the ``LoadReport``.

Defaults (``SyntheticConfig``): 11 dialogues, 4 train / 2 dev / 5 test, 54 questions requested per dialogue;
about 269 test and 54 dev-selection questions with a couple of knowledge-update shortfalls.
"""

from __future__ import annotations

from memprm.data.synthetic.generate import SOURCE, generate_dialogue, generate_synthetic, split_questions
from memprm.data.synthetic.generator_config import CATEGORIES, SyntheticConfig
from memprm.data.synthetic.storyline import format_date, format_session_datetime, resolve_relative_time

__all__ = [
    "CATEGORIES",
    "SOURCE",
    "SyntheticConfig",
    "format_date",
    "format_session_datetime",
    "generate_dialogue",
    "generate_synthetic",
    "resolve_relative_time",
    "split_questions",
]
