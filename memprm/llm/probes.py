"""Probe generators: source-anchored questions for the turns of a session window.

Every probe is ``Question(id=f"{dialogue.id}/probe/{turn.id}/{k}", text, answer, category="probe",
evidence=(turn.id,), date=None)``: a question answerable from its one anchor turn. The exam's three gates
(right with memory, wrong closed-book, wrong without the anchor's entries) are run elsewhere, with the
reader (:mod:`memprm.env.probe_gates`).

:class:`FactProbeGenerator` (offline, deterministic) turns the data's fact annotations (``Turn.facts``) into
cloze questions; :class:`LLMProbeGenerator` asks a model for one question per turn. Skips are counted by
reason in :class:`ProbeStats`, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from memprm.data.records import Dialogue, Question, Turn
from memprm.llm.cloze import make_cloze
from memprm.llm.endpoint import Failure
from memprm.llm.text import WORD


@dataclass
class ProbeStats:
    """What the generators made and skipped, by reason (never silently dropped)."""

    considered: int = 0  # facts (offline) or turns (LLM) looked at
    probes: int = 0
    no_span: int = 0  # offline: a fact with no span to ask about
    too_short: int = 0  # LLM: a turn under ``min_words`` words
    no_fact: int = 0  # LLM: the model said the turn states no fact
    failed: int = 0  # LLM: unusable output after the client's re-asks
    examples: list[str] = field(default_factory=list)  # the first few skipped items
    max_examples: int = 5

    @property
    def skipped(self) -> int:
        return self.no_span + self.too_short + self.no_fact + self.failed

    def note_skip(self, reason: str, example: str) -> None:
        setattr(self, reason, getattr(self, reason) + 1)
        if len(self.examples) < self.max_examples:
            self.examples.append(f"{reason}: {example}")


def probe_question(dialogue: Dialogue, turn: Turn, k: int, text: str, answer: str) -> Question:
    return Question(f"{dialogue.id}/probe/{turn.id}/{k}", text, answer, "probe", (turn.id,), None)


def speaker_names(dialogue: Dialogue, turns: Sequence[Turn]) -> frozenset[str]:
    """Names never asked about: the dialogue's speakers, the turns' and facts' speakers, and their parts."""
    full = {*dialogue.speakers, *(t.speaker for t in turns), *(f.speaker for t in turns for f in t.facts)}
    return frozenset(part for name in full if name for part in (name, *name.split()))


class FactProbeGenerator:
    """Offline cloze probes from ``Turn.facts``; ``k`` is the fact's index in ``turn.facts``.

    For each fact, up to ``max_per_turn`` probes per turn, it picks one span to ask about: tier by tier, each
    tier's candidates from the last back, the first that leaves a question of at least two words besides the
    wh-word:

    1. a proper-noun run: consecutive capitalized words (joined by ``of``, followed by a number: ``Model 3``)
       that are not at a sentence start, not a speaker's name, not a month or weekday and not ``I``; a run
       that touches a sentence start is no candidate (``New York`` at the start could be cut to ``York``);
    2. a date-like span (:func:`memprm.llm.cloze.date_spans`: dates, years, weekdays, "last week", "three
       years ago", clock times), else a number (digits or a number word);
    3. a run of content words (no stop words, no names, no fact-less adverbs such as "recently"), cut to
       its last two words; a run right after a name loses its first word, the verb ("Lucas plays basketball
       regularly." -> "Lucas plays what regularly?", answer "basketball").

    The span becomes ``when`` (dates), ``who`` (a proper noun after a person cue such as "with", "dating",
    "by", "sister"), ``whose`` (a possessive proper noun), ``how many`` (a number before a noun), ``how
    much`` (money), else ``what``; an article before it is dropped. The question is the span's sentence up to
    the end of the span's clause, e.g. "Ana adopted a dog named Biscuit." -> "Ana adopted a dog named what?"
    (answer "Biscuit"). A date question moves ``when`` to the end: "On 7 May 2023, Ana ran a race." -> "Ana
    ran a race when?"; "Ana ran a race last week." -> "Ana ran a race when?". A fact with no usable span is
    skipped and counted in :class:`ProbeStats`.
    """

    def __init__(self, max_per_turn: int = 1):
        if max_per_turn < 1:
            raise ValueError(f"probes.max_per_turn must be >= 1, got {max_per_turn}")
        self.max_per_turn = max_per_turn
        self.stats = ProbeStats()

    def generate(self, dialogue: Dialogue, turns: Sequence[Turn]) -> list[Question]:
        names = speaker_names(dialogue, turns)
        probes: list[Question] = []
        for turn in turns:
            made = 0
            for k, fact in enumerate(turn.facts):
                if made == self.max_per_turn:
                    break
                if fact.turn_id != turn.id:
                    raise ValueError(
                        f"dialogue {dialogue.id!r}, turn {turn.id!r}, field 'facts[{k}].turn_id': the fact "
                        f"names turn {fact.turn_id!r}"
                    )
                self.stats.considered += 1
                cloze = make_cloze(fact.text, names)
                if cloze is None:
                    self.stats.note_skip("no_span", f"{dialogue.id}/{turn.id}: {fact.text[:80]!r}")
                    continue
                probes.append(probe_question(dialogue, turn, k, cloze.question, cloze.answer))
                self.stats.probes += 1
                made += 1
        return probes


# --- LLM probe generator ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeChoice:
    """A validated reply: a question and its answer, or ``skip`` (the turn states no fact)."""

    question: str = ""
    answer: str = ""
    skip: bool = False


def make_validator(max_answer_words: int):
    def validate(obj: dict[str, Any]) -> ProbeChoice:
        if not isinstance(obj, dict):
            raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
        if obj.get("skip") is True:
            return ProbeChoice(skip=True)
        q, a = obj.get("question"), obj.get("answer")
        if not isinstance(q, str) or not q.strip() or not isinstance(a, str) or not a.strip():
            raise ValueError(
                f'expected {{"question": str, "answer": str}} (both non-empty) or {{"skip": true}}, '
                f"got {str(obj)[:200]}"
            )
        if len(a.split()) > max_answer_words:
            raise ValueError(f"the answer must be short (at most {max_answer_words} words), got {a[:100]!r}")
        return ProbeChoice(" ".join(q.split()), " ".join(a.split()))

    return validate


class LLMProbeGenerator:
    """One probe per content-bearing turn from an OpenAI-compatible model; prompt in ``prompts/probe.txt``.

    It asks turn by turn (turns with at least ``min_words`` words) for one question answerable only from that
    turn: ``{"question": ..., "answer": ...}`` or ``{"skip": true}``; ``k`` is 0.

    ``client`` is any object with ``complete_json(messages, validate)`` (an
    :class:`~memprm.llm.client.LLMClient`); its ``complete_json_many`` is used when it has one.
    """

    def __init__(self, client: Any, min_words: int = 5, context_turns: int = 2, max_answer_words: int = 10):
        if min_words < 0 or context_turns < 0 or max_answer_words < 1:
            raise ValueError(
                "probes: min_words and context_turns must be >= 0 and max_answer_words >= 1, got "
                f"{min_words}, {context_turns}, {max_answer_words}"
            )
        self.client = client
        self.min_words, self.context_turns = min_words, context_turns
        self.validate = make_validator(max_answer_words)
        self.template = resources.files("memprm.prompts").joinpath("probe.txt").read_text(encoding="utf-8")
        self.stats = ProbeStats()

    def prompt(self, dialogue: Dialogue, turn: Turn) -> str:
        order = dialogue.turns()
        position = next((i for i, t in enumerate(order) if t.id == turn.id), None)
        if position is None:
            raise ValueError(
                f"dialogue {dialogue.id!r}: turn {turn.id!r} of the window is not in the dialogue"
            )
        before = order[max(0, position - self.context_turns) : position]
        context = "\n".join(t.render for t in before) or "(the conversation starts here)"
        session = next((s for s in dialogue.sessions if s.index == turn.session_index), None)
        date = "unknown"
        if session is not None and (session.datetime_text or session.datetime is not None):
            date = session.datetime_text or session.datetime.strftime("%d %B %Y")
        return self.template.format(context=context, turn=turn.render, date=date)

    def generate(self, dialogue: Dialogue, turns: Sequence[Turn]) -> list[Question]:
        asked: list[Turn] = []
        for turn in turns:
            self.stats.considered += 1
            text = turn.text + (f" {turn.image_caption}" if turn.image_caption else "")
            if len(WORD.findall(text)) < self.min_words:
                self.stats.note_skip("too_short", f"{dialogue.id}/{turn.id}")
            else:
                asked.append(turn)
        batch = [[{"role": "user", "content": self.prompt(dialogue, t)}] for t in asked]
        many = getattr(self.client, "complete_json_many", None)
        if many is not None:
            replies = many(batch, self.validate)
        else:
            replies = [self.client.complete_json(m, self.validate) for m in batch]
        probes: list[Question] = []
        for turn, reply in zip(asked, replies, strict=True):
            if isinstance(reply, Failure):
                self.stats.note_skip("failed", f"{dialogue.id}/{turn.id}: {reply.reason[:80]}")
            elif reply.skip:
                self.stats.note_skip("no_fact", f"{dialogue.id}/{turn.id}")
            else:
                probes.append(probe_question(dialogue, turn, 0, reply.question, reply.answer))
                self.stats.probes += 1
        return probes


@dataclass(frozen=True)
class ProbeConfig:
    #: ``facts`` (offline cloze probes from the data's fact annotations) or ``llm``.
    kind: str = "facts"
    #: facts: probes per turn at most.
    max_per_turn: int = 1
    #: llm: turns with fewer words get no probe.
    min_words: int = 5

    def __post_init__(self) -> None:
        if self.kind not in ("facts", "llm"):
            raise ValueError(f"probes.kind must be 'facts' or 'llm', got {self.kind!r}")
