"""Judges: (question, generated answer) -> :class:`Verdict`.

:class:`F1Judge` (offline) re-implements LoCoMo's official scorer (``task_eval/evaluation.py``): token F1 with
a rule per category (:func:`scoring_rule`; the rules are on :func:`f1_score`), plus calendar-day scoring of
date answers outside LoCoMo. :class:`LLMJudge` asks an OpenAI-compatible model for
``{"label": "CORRECT" | "WRONG"}``; a call that failed is a *failed* verdict, which the exam does not score
(never a "wrong").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

from memprm.data.dates import MONTH_NUMBERS
from memprm.data.records import Question
from memprm.llm.endpoint import Failure
from memprm.llm.roles import Judge, Verdict
from memprm.llm.text import answer_tokens


@dataclass(frozen=True)
class JudgeConfig:
    #: ``f1`` (offline: LoCoMo's token F1, :class:`F1Judge`) or ``llm`` (:class:`LLMJudge` over an endpoint).
    kind: str = "f1"
    #: F1 judge only: an answer is correct when its score is >= this, in (0, 1].
    threshold: float = 0.5
    #: F1 judge only: score date answers of sources without LoCoMo's category numbers (``category_id == 0``)
    #: by calendar day instead of token F1 (see :func:`f1_score`); LoCoMo questions are unaffected.
    dates_as_dates: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ("f1", "llm"):
            raise ValueError(f"judge.kind must be 'f1' or 'llm', got {self.kind!r}")
        _check_threshold(self.threshold)


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"judge.threshold must be in (0, 1], got {threshold}")


#: lower-cased substrings by which a prediction says the information is not available.
UNANSWERABLE_PHRASES = (
    "not mentioned",
    "no information",
    "not available",
    "unknown",
    "cannot be determined",
    "can't be determined",
    "cannot be answered",
    "unanswerable",
    "no mention",
    "not stated",
    "not specified",
)

#: LoCoMo's official category numbers -> scoring rule.
_RULE_BY_ID = {1: "multi", 2: "plain", 3: "open", 4: "plain", 5: "abstain"}
#: category names of every source (LoCoMo, synthetic, LongMemEval, probes) -> scoring rule.
_RULE_BY_NAME = {
    "multi-hop": "multi",
    "open-domain": "open",
    "adversarial": "abstain",
    "unanswerable": "abstain",
    **dict.fromkeys(("single-hop", "temporal", "knowledge-update", "previous-value", "probe"), "plain"),
    **dict.fromkeys(
        (
            "single-session-user",
            "single-session-assistant",
            "single-session-preference",
            "multi-session",
            "temporal-reasoning",
        ),
        "plain",
    ),
}


def scoring_rule(question: Question) -> str:
    """``multi`` | ``open`` | ``abstain`` | ``plain`` for ``question`` (the rules: :func:`f1_score`).

    The category comes from ``Question.category_id`` when it is > 0, else from the category name; an unknown
    name is an error, never a silent default.
    """
    if question.unanswerable:
        return "abstain"
    if question.category_id > 0:
        if question.category_id not in _RULE_BY_ID:
            raise ValueError(
                f"question {question.id!r}, field 'category_id': unknown LoCoMo category "
                f"{question.category_id}; known 1-5"
            )
        return _RULE_BY_ID[question.category_id]
    if question.category not in _RULE_BY_NAME:
        raise ValueError(
            f"question {question.id!r}, field 'category': unknown category {question.category!r}; known: "
            f"{sorted(_RULE_BY_NAME)}"
        )
    return _RULE_BY_NAME[question.category]


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the multisets of answer tokens; 0.0 when they share none (empty sides included)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Mean over the ``,``-separated gold parts of the best :func:`token_f1` against a prediction part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def says_unanswerable(prediction: str) -> bool:
    low = prediction.lower()
    return any(phrase in low for phrase in UNANSWERABLE_PHRASES)


# --- dates --------------------------------------------------------------------------------------------------
_MONTH_RE = "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True))  # longest first: "september" before "sep"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_RE = "|".join(_WEEKDAYS + tuple(d[:3] for d in _WEEKDAYS))
_ORDINAL = r"(?:st|nd|rd|th)?"
#: one calendar day: ``2023-05-07`` | ``7 May 2023`` (``7th``, ``of``, ``May,``) | ``May 7, 2023``.
_DAY_RE = (
    r"(?<!\d)(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})(?!\d)"
    rf"|(?<!\d)(?P<dd>\d{{1,2}}){_ORDINAL}(?:\s+of)?\s+(?P<dm>{_MONTH_RE})\.?,?\s+(?P<dy>\d{{4}})(?!\d)"
    rf"|\b(?P<mm>{_MONTH_RE})\.?\s+(?P<md>\d{{1,2}}){_ORDINAL},?\s+(?P<my>\d{{4}})(?!\d)"
)
_DAY_SEARCH = re.compile(_DAY_RE, re.IGNORECASE)
_GOLD_DAY = re.compile(
    rf"\s*(?P<week>(?:the\s+)?week\s+before\s+)?(?:(?:{_WEEKDAY_RE})\.?,?\s+)?(?:{_DAY_RE})\s*\.?\s*",
    re.IGNORECASE,
)
_WEEK_BEFORE = re.compile(r"\bweek\s+before\b", re.IGNORECASE)

Day = tuple[int, int, int]  # (year, month, day) as written; not checked against the calendar


def _day(m: re.Match[str]) -> Day:
    """The (year, month, day) of a match of ``_DAY_RE``, whichever of its three forms matched."""
    if m["iy"]:
        return int(m["iy"]), int(m["im"]), int(m["id"])
    if m["dd"]:
        return int(m["dy"]), MONTH_NUMBERS[m["dm"].lower()], int(m["dd"])
    return int(m["my"]), MONTH_NUMBERS[m["mm"].lower()], int(m["md"])


def mentioned_days(text: str) -> list[Day]:
    """Every calendar day written in ``text``, in order; slashed (``07/05/2023``) and partial dates don't count."""
    return [_day(m) for m in _DAY_SEARCH.finditer(text)]


def gold_day(gold: str) -> tuple[Day, bool] | None:
    """``(day, week)`` when the whole of ``gold`` is one day, optionally after a weekday (``Sunday, 7 May 2023``)
    or as ``the week before <day>`` (``week`` True); None for any other answer."""
    m = _GOLD_DAY.fullmatch(gold)
    return None if m is None else (_day(m), bool(m["week"]))


def date_score(prediction: str, day: Day, week: bool) -> float:
    """1.0 iff ``prediction`` mentions at least one day, all equal to ``day``, and says "week before" exactly
    when ``week`` (a week is not its end day), else 0.0."""
    days = mentioned_days(prediction)
    right = bool(days) and all(d == day for d in days) and week == bool(_WEEK_BEFORE.search(prediction))
    return 1.0 if right else 0.0


def f1_score(question: Question, prediction: str, *, dates_as_dates: bool = False) -> float:
    """LoCoMo's score of ``prediction`` for ``question``, in [0, 1]; with ``dates_as_dates``, questions with
    ``category_id == 0`` and a date as gold are scored by :func:`date_score` instead.

    The rule is chosen by :func:`scoring_rule`, as LoCoMo's official scorer (``task_eval/evaluation.py``):

    - ``multi`` (LoCoMo category 1, or the category name ``multi-hop``): the gold answer is split on ``,``
      into sub-answers and so is the prediction; score = mean over gold parts of the best F1 against any
      prediction part.
    - ``open`` (category 3, ``open-domain``): only the gold text before the first ``;`` counts, then plain F1.
    - ``abstain`` (category 5, ``adversarial``, ``unanswerable``, or ``Question.unanswerable``): score 1 iff
      the lower-cased prediction contains one of :data:`UNANSWERABLE_PHRASES`, else 0. Upstream accepts only
      "no information available" and "not mentioned" (both covered); the list is wider so that other ways of
      saying "not in the conversation" count too (the reader's own is
      :data:`~memprm.llm.roles.ABSTAIN_ANSWER`).
    - ``plain`` (everything else: categories 2 and 4, the synthetic ``single-hop``/``temporal``/
      ``knowledge-update``, LongMemEval's question types, probes): token F1.
    - dates (only ``category_id == 0``, i.e. the synthetic source and LongMemEval, with
      ``JudgeConfig.dates_as_dates``; not for abstain): when the whole gold answer is a calendar day (see
      :func:`gold_day`), the score is 1 iff the prediction mentions at least one day and every day it mentions
      is the gold's (for "the week before <day>" it must also say "week before"), else 0. LoCoMo questions
      always keep the official token-F1 rules above.

    Token F1 is computed over multisets of :func:`~memprm.llm.text.answer_tokens` (LoCoMo normalization +
    Porter stems); no overlap scores 0, also when both sides are empty (as upstream).
    """
    rule = scoring_rule(question)
    if rule == "abstain":
        return 1.0 if says_unanswerable(prediction) else 0.0
    if dates_as_dates and question.category_id == 0:
        gold = gold_day(question.answer)
        if gold is not None:
            return date_score(prediction, *gold)
    if rule == "multi":
        return multi_answer_f1(prediction, question.answer)
    gold = question.answer.split(";")[0].strip() if rule == "open" else question.answer
    return token_f1(prediction, gold)


class F1Judge:
    """Offline judge: LoCoMo's token F1 per category (dates as days, see :func:`f1_score`); correct when the
    score reaches ``threshold`` (``correct = score >= threshold``)."""

    def __init__(self, threshold: float = 0.5, dates_as_dates: bool = True):
        _check_threshold(threshold)
        self.threshold = threshold
        self.dates_as_dates = dates_as_dates

    def judge(self, question: Question, answer: str) -> Verdict:
        score = f1_score(question, answer, dates_as_dates=self.dates_as_dates)
        return Verdict(correct=score >= self.threshold, score=score)


# --- LLM judge ----------------------------------------------------------------------------------------------
#: template names; the file of template ``x`` is ``memprm/prompts/judge_x.txt``.
TEMPLATE_NAMES = (
    "locomo",
    "lme_default",
    "lme_temporal",
    "lme_knowledge_update",
    "lme_preference",
    "lme_abstention",
)
_TEMPLATE_BY_NAME = {
    **dict.fromkeys(("single-hop", "multi-hop", "temporal", "open-domain", "probe"), "locomo"),
    **dict.fromkeys(("single-session-user", "single-session-assistant", "multi-session"), "lme_default"),
    "temporal-reasoning": "lme_temporal",
    **dict.fromkeys(("knowledge-update", "previous-value"), "lme_knowledge_update"),
    "single-session-preference": "lme_preference",
    **dict.fromkeys(("adversarial", "unanswerable"), "lme_abstention"),
}


def template_name(question: Question) -> str:
    """The judging template for ``question``.

    Unanswerable questions (any source) use the abstention template; LoCoMo questions (``category_id > 0``),
    the synthetic single-hop/multi-hop/temporal questions and probes use LoCoMo's; LongMemEval's types (and
    the synthetic ``knowledge-update``, which asks for the current value) use their own.
    """
    if question.unanswerable:
        return "lme_abstention"
    if question.category_id > 0:
        return "locomo"
    if question.category not in _TEMPLATE_BY_NAME:
        raise ValueError(
            f"question {question.id!r}, field 'category': no judging template for category "
            f"{question.category!r}; known: {sorted(_TEMPLATE_BY_NAME)}"
        )
    return _TEMPLATE_BY_NAME[question.category]


def load_judge_templates() -> dict[str, str]:
    """Template name -> prompt text (``str.format`` fields ``question``, ``answer``, ``response``)."""
    root = resources.files("memprm.prompts")
    return {name: root.joinpath(f"judge_{name}.txt").read_text(encoding="utf-8") for name in TEMPLATE_NAMES}


def validate_label(obj: dict[str, Any]) -> bool:
    """``{"label": "CORRECT" | "WRONG"}`` -> True / False (case and surrounding spaces are tolerated)."""
    label = obj.get("label") if isinstance(obj, dict) else None
    if not isinstance(label, str) or label.strip().upper() not in ("CORRECT", "WRONG"):
        raise ValueError(f'expected {{"label": "CORRECT" | "WRONG"}}, got {str(obj)[:200]}')
    return label.strip().upper() == "CORRECT"


class LLMJudge:
    """Judge over an OpenAI-compatible endpoint (any object with ``complete_json(messages, validate)``).

    It asks for ``{"label": "CORRECT" | "WRONG"}`` with one of the templates ``memprm/prompts/judge_*.txt``,
    chosen by :func:`template_name`; a blank answer is wrong without a call, and a
    :class:`~memprm.llm.endpoint.Failure` after the client's re-asks is ``Verdict(False, 0.0, failed=True)``:
    a failed verdict, which the exam does not score (never a "wrong").
    """

    def __init__(self, client: Any, templates: dict[str, str] | None = None):
        self.client = client
        self.templates = templates if templates is not None else load_judge_templates()
        missing = [n for n in TEMPLATE_NAMES if n not in self.templates]
        if missing:
            raise ValueError(f"LLMJudge: templates missing for {missing}; needed: {list(TEMPLATE_NAMES)}")

    @property
    def max_concurrency(self) -> int:
        """Questions the exam may send at once: the client's ``max_concurrency`` (1 for a client without one)."""
        return int(getattr(getattr(self.client, "cfg", None), "max_concurrency", 1))

    def prompt(self, question: Question, answer: str) -> str:
        template = self.templates[template_name(question)]
        return template.format(question=question.text, answer=question.answer, response=answer.strip())

    def judge(self, question: Question, answer: str) -> Verdict:
        if not answer.strip():
            template_name(question)  # an unknown category is an error here too
            return Verdict(correct=False, score=0.0)
        messages = [{"role": "user", "content": self.prompt(question, answer)}]
        result = self.client.complete_json(messages, validate_label)
        if isinstance(result, Failure):
            return Verdict(correct=False, score=0.0, failed=True)
        return Verdict(correct=bool(result), score=1.0 if result else 0.0)


def build_judge(cfg: JudgeConfig, client: Any = None) -> Judge:
    """The judge ``cfg`` names; ``kind: llm`` needs a client (an :class:`~memprm.llm.client.LLMClient`)."""
    if cfg.kind == "f1":
        return F1Judge(cfg.threshold, cfg.dates_as_dates)
    if client is None:
        raise ValueError("judge.kind is 'llm' but no LLM client was given (configure llm.judge)")
    return LLMJudge(client)
