"""Synthetic multi-session dialogues: the data the embedded default trains and tests on.

Everything a laptop run sees comes from here, so the generator is built to make the method's signals
meaningful rather than to look like LoCoMo word for word: facts worth writing (dated events, profile
statements), distractors worth skipping (small talk, topical remarks, near misses), and profile values that
get overturned, so merges into version chains matter. Questions come in the ``CATEGORIES`` kinds, from
single-hop to unanswerable. A dialogue depends only on (config, index): the same config gives the same data
on every machine.

The generator's design (facts, distractors, question kinds, dates, randomness, defaults, template
conventions) is recorded in ``docs/design/synthetic_data.md``.
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
