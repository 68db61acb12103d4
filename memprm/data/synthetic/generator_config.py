"""``SyntheticConfig``: sizes and mix of the generated data, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, fields

from memprm.data.synthetic.phrasing import PHRASING_NAMES, phrasing_tables

#: the index of the first ``select`` dialogue (``SyntheticConfig.n_select``).
SELECT_OFFSET = 10_000
CATEGORIES = ("single-hop", "multi-hop", "temporal", "knowledge-update", "previous-value", "unanswerable")


@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes and mix of the generated data.

    Defaults: 11 dialogues (4 train, 2 dev, 5 test) x 6 sessions of at least 22 turns (sessions whose facts
    and ``min_filler_exchanges`` distractor exchanges need more grow: ~34 turns on average), 14 profile
    attributes, 54 questions requested per dialogue (11 multi-hop, 9 each of single-hop, temporal and
    unanswerable, 8 each of knowledge-update and previous-value): about 269 test and 54 dev-selection
    questions. ``n_dialogues=16`` gives 10 test dialogues (538 questions), the size for comparisons: the
    default stays at 5 so that the default ``fit`` runs in under 15 minutes on 2 cores.
    """

    seed: int = 0
    """Mixed with the dialogue index into each dialogue's own random generator."""
    n_dialogues: int = 11
    """Dialogues ``syn-000`` ... in order; split like LoCoMo: train first, then dev, the rest test."""
    n_train: int = 4
    """How many of the first dialogues are ``train``."""
    n_dev: int = 2
    """How many dialogues after the train ones are ``dev`` (questions halved into calibration/selection)."""
    n_rl: int = 0
    """Extra dialogues ``syn-<n_dialogues>`` ... after the test ones, split ``rl``: episodes for GRPO that no
    teacher trajectory, SFT example or critic example comes from (``rollout_data.split=rl`` plays them).
    Dialogues are generated per index, so train, dev and test are the same whatever ``n_rl`` is."""
    n_select: int = 0
    """Extra dialogues ``syn-10000`` ... (index :data:`SELECT_OFFSET` + i, so no other split and no size
    setting moves them), split ``select``: whole dialogues, every question, for dev-checkpoint selection
    under ``dev_selection.split=select`` (a larger selection set than the dev split's selection half)."""
    sessions_per_dialogue: int = 6
    """Sessions per dialogue, a few days to weeks apart."""
    turns_per_session: int = 22
    """Target session length (the paper's session window is ~22 turns); distractors fill what facts leave.
    A session whose facts and ``min_filler_exchanges`` need more turns is made longer (LoadReport repair)."""
    events_per_session: int = 3
    """Dated events told per session, each a different activity of the dialogue."""
    profile_attributes: int = 14
    """(speaker, attribute type) pairs per dialogue, each stated once in the first half of the sessions."""
    overturn_prob: float = 0.7
    """Probability that a stated attribute is overturned in a later session; after an overturn, the
    probability of one more (up to ``max_overturns``)."""
    max_overturns: int = 2
    """Most overturns per attribute (a version chain has at most ``1 + max_overturns`` values)."""
    restate_prob: float = 0.3
    """Probability that an attribute's current value is mentioned again, unchanged, in a later session."""
    min_filler_exchanges: int = 4
    """Fewest two-turn distractor exchanges per session besides the greeting and closing, however many facts
    the session tells: a session whose facts leave less room grows (and the LoadReport says by how much)."""
    near_miss_frac: float = 0.4
    """Fraction of filler exchanges that are near misses of an attribute type the dialogue uses, with a value
    no speaker ever holds: half a third party's statement ("My sister works as a chef, she loves it."), half
    a passing mention ("Have you ever been to Oslo?"). These compete with the real facts in retrieval."""
    topical_distractor_frac: float = 0.2
    """Fraction of filler exchanges that mention a topic of the dialogue's events ("Do you think pottery is
    overrated?"); the rest (``1 - near_miss_frac - topical_distractor_frac``) are plain small talk."""
    min_gap_days: int = 3
    """Fewest days between consecutive sessions."""
    max_gap_days: int = 21
    """Most days between consecutive sessions."""
    n_single_hop: int = 9
    """Requested single-hop questions per dialogue (fewer if too few candidates; reported)."""
    n_multi_hop: int = 11
    """Requested multi-hop questions per dialogue."""
    n_temporal: int = 9
    """Requested temporal questions per dialogue."""
    n_knowledge_update: int = 8
    """Requested knowledge-update questions per dialogue."""
    n_previous_value: int = 8
    """Requested previous-value questions per dialogue."""
    n_unanswerable: int = 9
    """Requested unanswerable questions per dialogue."""
    phrasing: str = "standard"
    """The family of sentences the dialogues and questions are worded in: ``standard``, which the offline roles
    (rule note writer, extractive reader) were partly written against; ``tuning``, new sentences the roles may
    be developed against (``data.synthetic.phrasing=tuning``); ``heldout``, sentences nobody writing the roles
    has seen, so results on it do not flatter them (``data.synthetic.phrasing=heldout``); or ``blind``, sentences
    written after the roles were last changed, measured once and never developed against
    (``data.synthetic.phrasing=blind``). All four say the same dialogues (plan, turn ids, facts, questions'
    answers and evidence)."""

    def __post_init__(self) -> None:
        if self.phrasing not in PHRASING_NAMES:
            raise ValueError(
                f"SyntheticConfig.phrasing must be one of {PHRASING_NAMES} ('standard': the sentences the "
                f"offline roles were written against; 'tuning': new sentences to develop them against; "
                f"'heldout': new sentences kept unseen; 'blind': new sentences measured once, never developed "
                f"against), got {self.phrasing!r}"
            )
        for f in fields(self):  # f.type is the annotation's text ("int"): annotations are postponed
            value = getattr(self, f.name)
            if f.type in ("int", "float") and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"SyntheticConfig.{f.name} must be a number, got {value!r}")
            if f.type == "int" and not isinstance(value, int):
                raise ValueError(f"SyntheticConfig.{f.name} must be an integer, got {value!r}")
        positive = ("n_dialogues", "sessions_per_dialogue", "min_gap_days")
        non_negative = (
            "n_train",
            "n_dev",
            "n_rl",
            "n_select",
            "events_per_session",
            "profile_attributes",
            "max_overturns",
            "min_filler_exchanges",
            *(f"n_{c.replace('-', '_')}" for c in CATEGORIES),
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"SyntheticConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"SyntheticConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("overturn_prob", "restate_prob", "near_miss_frac", "topical_distractor_frac"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(
                    f"SyntheticConfig.{name} must be a probability in [0, 1], got {getattr(self, name)}"
                )
        if self.near_miss_frac + self.topical_distractor_frac > 1.0:
            raise ValueError(
                f"SyntheticConfig: near_miss_frac ({self.near_miss_frac}) + topical_distractor_frac "
                f"({self.topical_distractor_frac}) exceeds 1"
            )
        if self.n_train + self.n_dev > self.n_dialogues:
            raise ValueError(
                f"SyntheticConfig: n_train ({self.n_train}) + n_dev ({self.n_dev}) exceeds "
                f"n_dialogues ({self.n_dialogues})"
            )
        if self.n_dialogues + self.n_rl > SELECT_OFFSET:
            raise ValueError(
                f"SyntheticConfig: n_dialogues + n_rl ({self.n_dialogues + self.n_rl}) would reach the select "
                f"split's indices (from {SELECT_OFFSET})"
            )
        if self.turns_per_session < 4:
            raise ValueError(
                f"SyntheticConfig.turns_per_session must be >= 4 (greeting and closing exchanges), "
                f"got {self.turns_per_session}"
            )
        if self.max_gap_days < self.min_gap_days:
            raise ValueError(
                f"SyntheticConfig.max_gap_days ({self.max_gap_days}) is below "
                f"min_gap_days ({self.min_gap_days})"
            )
        tables = phrasing_tables(self.phrasing)
        n_events = self.events_per_session * self.sessions_per_dialogue
        if n_events > len(tables.activities):
            raise ValueError(
                f"SyntheticConfig: events_per_session x sessions_per_dialogue = {n_events} events, but only "
                f"{len(tables.activities)} distinct activities exist"
            )
        n_types = len(tables.attributes)
        if self.profile_attributes > 2 * n_types:
            raise ValueError(
                f"SyntheticConfig.profile_attributes must be <= {2 * n_types} (2 speakers x "
                f"{n_types} attribute types), got {self.profile_attributes}"
            )
        fewest = min(len(a.values) for a in tables.attributes)
        if 2 * (1 + self.max_overturns) > fewest:
            raise ValueError(
                f"SyntheticConfig.max_overturns must be <= {fewest // 2 - 1}: two speakers' chains must draw "
                f"distinct values from pools of {fewest}, got {self.max_overturns}"
            )

    @property
    def questions_requested(self) -> dict[str, int]:
        """category -> requested count per dialogue."""
        return {c: getattr(self, f"n_{c.replace('-', '_')}") for c in CATEGORIES}
