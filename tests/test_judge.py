"""Judges: LoCoMo's token-F1 rules (hand-computed), the text utilities under them, and the LLM judge."""

from __future__ import annotations

import pytest
from helpers.fakes import FakeClient

from memprm.data.records import Question
from memprm.llm.endpoint import Failure
from memprm.llm.judge import (
    TEMPLATE_NAMES,
    F1Judge,
    JudgeConfig,
    LLMJudge,
    build_judge,
    f1_score,
    gold_day,
    load_judge_templates,
    mentioned_days,
    multi_answer_f1,
    scoring_rule,
    template_name,
    token_f1,
)
from memprm.llm.roles import ABSTAIN_ANSWER, Verdict
from memprm.llm.text import answer_tokens, normalize_answer, stem


def q(
    answer: str, category: str = "single-hop", category_id: int = 0, unanswerable: bool = False
) -> Question:
    return Question("d/q1", "What is it?", answer, category, (), None, category_id, unanswerable)


# --- text utilities -----------------------------------------------------------------------------------------
def test_normalize_answer_follows_locomo():
    assert normalize_answer("The Dog, Biscuit!") == "dog biscuit"
    assert normalize_answer("  A cat and   an owl ") == "cat owl"  # upstream removes "and" too
    assert normalize_answer("don't") == "dont"  # punctuation is deleted, not replaced by a space
    assert normalize_answer("Caroline’s") == normalize_answer("Caroline's") == "carolines"
    assert normalize_answer("?!...") == ""


@pytest.mark.parametrize(
    "word, expected",
    [("running", "run"), ("caresses", "caress"), ("ponies", "poni"), ("agreed", "agre"), ("hopping", "hop"),
     ("filing", "file"), ("happy", "happi"), ("relational", "relat"), ("generalizations", "gener"),
     ("adjustment", "adjust"), ("controll", "control"), ("probate", "probat"), ("ties", "tie"),
     ("dying", "die"), ("sky", "sky"), ("is", "is"), ("say", "say"), ("named", "name")],
)  # fmt: skip
def test_porter_stem(word, expected):
    assert stem(word) == expected


@pytest.mark.parametrize(
    "word, expected",
    [("one", "one"), ("use", "use"), ("ate", "ate"), ("ones", "one"), ("used", "use"), ("uses", "use"),
     ("axed", "axe")],
)  # fmt: skip
def test_porter_two_letter_stem_keeps_its_e(word, expected):
    # nltk's *o: a two-letter stem vowel-consonant counts as cvc, so step 5a keeps the e of "one" (m = 1,
    # *o) and step 1b restores it on "used" -> "us" -> "use".
    assert stem(word) == expected


@pytest.mark.parametrize(
    "word, expected",
    [("rate", "rate"), ("hoping", "hope"), ("cease", "ceas"), ("ease", "eas"), ("hopeful", "hope"),
     ("meeting", "meet"), ("cats", "cat"), ("on", "on"), ("us", "us")],
)  # fmt: skip
def test_porter_stems_unchanged_by_the_two_letter_rule(word, expected):
    # hand-computed: "rat"/"hop" are 3-letter cvc (m = 1, keep/restore e); "ceas"/"eas" are not cvc and the
    # two-letter rule needs exactly two letters; "hopeful" -> "hope" (step 3 drops -ful; "hope" then keeps
    # its e as "hop" is cvc); words of two letters are never stemmed.
    assert stem(word) == expected


def test_judge_does_not_accept_a_two_letter_stem_for_its_word():
    judge = F1Judge()
    assert not judge.judge(q("one"), "on").correct  # "one" stayed "one": no shared token
    assert not judge.judge(q("use"), "us").correct
    assert judge.judge(q("one"), "One.").correct
    assert judge.judge(q("one"), "ones").correct  # plural still shares the stem


def test_answer_tokens_are_stemmed_normalized_words():
    assert answer_tokens("a dog named Biscuit") == ["dog", "name", "biscuit"]


# --- token F1 -----------------------------------------------------------------------------------------------
def test_token_f1_hand_computed():
    # {dog, name, biscuit} vs {biscuit}: P = 1/3, R = 1 -> F1 = 2 * (1/3) / (4/3) = 0.5
    assert token_f1("a dog named Biscuit", "Biscuit") == pytest.approx(0.5)
    assert token_f1("Biscuit", "Biscuit") == 1.0
    assert token_f1("In 2022.", "2022") == pytest.approx(2 / 3)  # {in, 2022} vs {2022}
    assert token_f1("dog dog", "dog") == pytest.approx(2 / 3)  # multisets: one shared token, P = 1/2
    assert token_f1("pottery and camping", "pottery camping") == 1.0


def test_token_f1_edge_cases():
    assert token_f1("", "Biscuit") == 0.0
    assert token_f1("", "") == 0.0  # no shared token scores 0, as upstream
    assert token_f1("?!", "Biscuit") == 0.0
    assert token_f1("3", "three") == 0.0  # no number-word mapping
    assert token_f1("3 kids", "3") == pytest.approx(2 / 3)
    assert token_f1("She runs", "running") == pytest.approx(2 / 3)  # {she, run} vs {run}


def test_multi_hop_splits_on_commas():
    gold = "pottery, camping, painting"
    # gold parts: pottery -> 1, camping -> 1, painting -> 0; mean 2/3
    assert multi_answer_f1("camping, pottery", gold) == pytest.approx(2 / 3)
    assert f1_score(q(gold, "multi-hop", 1), "camping, pottery") == pytest.approx(2 / 3)
    assert f1_score(q(gold, "multi-hop"), "camping, pottery") == pytest.approx(2 / 3)  # synthetic name
    # LongMemEval's multi-session is plain F1: {camp, potteri} vs 3 tokens -> P = 1, R = 2/3, F1 = 0.8
    assert f1_score(q(gold, "multi-session"), "camping, pottery") == pytest.approx(0.8)


def test_open_domain_keeps_gold_before_semicolon():
    gold = "Psychology; counseling certification"
    assert f1_score(q(gold, "open-domain", 3), "psychology") == 1.0
    assert f1_score(q(gold, "temporal", 2), "psychology") == pytest.approx(0.5)  # plain: P = 1, R = 1/3


@pytest.mark.parametrize(
    "question",
    [q(ABSTAIN_ANSWER, "adversarial", 5, True), q(ABSTAIN_ANSWER, "unanswerable", 0, True),
     q("You never mentioned a dog.", "multi-session", 0, True), q(ABSTAIN_ANSWER, "adversarial", 5)],
)  # fmt: skip
def test_unanswerable_is_scored_by_phrase(question):
    assert scoring_rule(question) == "abstain"
    judge = F1Judge()
    assert judge.judge(question, ABSTAIN_ANSWER) == Verdict(correct=True, score=1.0)
    assert judge.judge(question, "No information available.").correct
    assert judge.judge(question, "That cannot be determined from the chat").correct
    assert judge.judge(question, "Biscuit") == Verdict(correct=False, score=0.0)
    assert judge.judge(question, "") == Verdict(correct=False, score=0.0)


@pytest.mark.parametrize(
    "category, category_id, rule",
    [("multi-hop", 1, "multi"), ("temporal", 2, "plain"), ("open-domain", 3, "open"),
     ("single-hop", 4, "plain"), ("single-hop", 0, "plain"), ("knowledge-update", 0, "plain"),
     ("temporal-reasoning", 0, "plain"), ("single-session-preference", 0, "plain"), ("probe", 0, "plain"),
     ("unanswerable", 0, "abstain")],
)  # fmt: skip
def test_scoring_rule_by_id_then_name(category, category_id, rule):
    assert scoring_rule(q("x", category, category_id)) == rule


def test_unknown_categories_are_errors():
    with pytest.raises(ValueError, match=r"'d/q1', field 'category': unknown category 'single_hop'"):
        scoring_rule(q("x", "single_hop"))
    with pytest.raises(ValueError, match=r"field 'category_id': unknown LoCoMo category 7"):
        F1Judge().judge(q("x", "single-hop", 7), "x")


def test_threshold_decides_correct():
    question = q("Biscuit")
    assert F1Judge(0.5).judge(question, "a dog named Biscuit") == Verdict(correct=True, score=0.5)
    assert not F1Judge(0.6).judge(question, "a dog named Biscuit").correct
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="judge.threshold"):
            F1Judge(bad)
    with pytest.raises(ValueError, match="judge.kind"):
        JudgeConfig(kind="exact")


def test_build_judge():
    judge = build_judge(JudgeConfig(threshold=0.8))
    assert isinstance(judge, F1Judge) and judge.threshold == 0.8
    with pytest.raises(ValueError, match="no LLM client"):
        build_judge(JudgeConfig(kind="llm"))
    assert isinstance(build_judge(JudgeConfig(kind="llm"), FakeClient([])), LLMJudge)


# --- dates as dates (category_id 0 only) --------------------------------------------------------------------
def test_neighbouring_day_is_wrong_for_synthetic_and_longmemeval():
    for category in ("temporal", "temporal-reasoning"):
        question = q("7 May 2023", category)
        assert token_f1("8 May 2023", "7 May 2023") == pytest.approx(2 / 3)  # judged right before
        assert F1Judge(0.5).judge(question, "8 May 2023") == Verdict(correct=False, score=0.0)
        assert F1Judge(0.5).judge(question, "7 May 2023") == Verdict(correct=True, score=1.0)


@pytest.mark.parametrize(
    "prediction",
    ["May 7, 2023", "May 7 2023", "7 May, 2023", "7th May 2023", "2023-05-07", "Sunday, 7th May 2023",
     "It was on may 7th, 2023.", "7 MAY 2023", "Sun, 7 May 2023", "7th of May 2023"],
)  # fmt: skip
def test_same_day_in_other_formats_is_right(prediction):
    assert F1Judge().judge(q("7 May 2023", "temporal"), prediction) == Verdict(correct=True, score=1.0)


@pytest.mark.parametrize(
    "gold", ["7 May 2023", "May 7, 2023", "2023-05-07", "Sunday, 7 May 2023", "7th May 2023."]
)
def test_gold_in_any_format_is_a_day(gold):
    assert gold_day(gold) == ((2023, 5, 7), False)
    assert F1Judge().judge(q(gold, "temporal"), "7 May 2023").correct
    assert not F1Judge().judge(q(gold, "temporal"), "8 May 2023").correct


def test_mentioned_days_reject_slashes_and_partial_dates():
    assert mentioned_days("07/05/2023, May 2023, 7 May, 17 May 2023") == [(2023, 5, 17)]
    assert mentioned_days("on 2023-05-07 or Sept. 8, 2024") == [(2023, 5, 7), (2024, 9, 8)]
    assert gold_day("07/05/2023") is None


@pytest.mark.parametrize(
    "prediction",
    ["7 May 2023 or 8 May 2023", "May 7, 2023 (the chat was on May 8, 2023)", "Sometime in May 2023",
     "07/05/2023", "last Sunday", ""],
)  # fmt: skip
def test_two_different_days_or_no_day_is_wrong(prediction):
    assert F1Judge().judge(q("7 May 2023", "temporal"), prediction) == Verdict(correct=False, score=0.0)


def test_repeating_the_gold_day_is_right():
    assert F1Judge().judge(q("7 May 2023", "temporal"), "7 May 2023, i.e. 2023-05-07").correct


def test_week_before_form():
    question = q("the week before 8 May 2023", "temporal")
    assert gold_day(question.answer) == ((2023, 5, 8), True)
    judge = F1Judge()
    assert judge.judge(question, "The week before May 8, 2023") == Verdict(correct=True, score=1.0)
    assert judge.judge(question, "during the WEEK BEFORE 2023-05-08") == Verdict(correct=True, score=1.0)
    assert not judge.judge(question, "the week before 9 May 2023").correct  # another day
    assert not judge.judge(question, "8 May 2023").correct  # not the week
    assert not judge.judge(question, "the week after 8 May 2023").correct
    assert not judge.judge(question, "the week before last").correct  # no day
    plain = q("8 May 2023", "temporal")
    assert not judge.judge(plain, "the week before 8 May 2023").correct  # a week is not its end day


def test_locomo_keeps_token_f1_for_dates():
    question = q("7 May 2023", "temporal", 2)
    assert F1Judge().judge(question, "8 May 2023") == Verdict(correct=True, score=pytest.approx(2 / 3))
    week = q("the week before 8 May 2023", "temporal", 2)
    assert F1Judge().judge(week, "8 May 2023").score == pytest.approx(token_f1("8 May 2023", week.answer))


def test_dates_as_dates_off_restores_token_f1():
    question = q("7 May 2023", "temporal")
    assert F1Judge(0.5, dates_as_dates=False).judge(question, "8 May 2023") == Verdict(
        correct=True, score=pytest.approx(2 / 3)
    )
    assert f1_score(question, "8 May 2023") == pytest.approx(2 / 3)  # the function's default is LoCoMo's
    assert JudgeConfig().dates_as_dates
    assert not build_judge(JudgeConfig(dates_as_dates=False)).judge(question, "2023-05-07").correct
    assert build_judge(JudgeConfig()).judge(question, "2023-05-07").correct


@pytest.mark.parametrize("gold", ["Biscuit", "two hours", "May 2023", "in 2022", "7 May"])
def test_non_date_gold_keeps_token_f1(gold):
    question = q(gold, "temporal")
    assert gold_day(gold) is None
    for prediction in ("a dog named Biscuit", "about two hours", "May 2023", "2022", "7 May 2023"):
        verdict = F1Judge().judge(question, prediction)
        assert verdict.score == pytest.approx(token_f1(prediction, gold))


def test_unanswerable_keeps_abstain_rule_with_date_gold():
    question = q("7 May 2023", "unanswerable", 0, True)
    assert F1Judge().judge(question, "7 May 2023") == Verdict(correct=False, score=0.0)
    assert F1Judge().judge(question, ABSTAIN_ANSWER) == Verdict(correct=True, score=1.0)


# --- LLM judge ----------------------------------------------------------------------------------------------


MARKED = {name: f"T={name} q={{question}} a={{answer}} r={{response}}" for name in TEMPLATE_NAMES}


@pytest.mark.parametrize(
    "category, category_id, unanswerable, template",
    [("single-hop", 4, False, "locomo"), ("multi-hop", 1, False, "locomo"), ("temporal", 0, False, "locomo"),
     ("probe", 0, False, "locomo"), ("adversarial", 5, True, "lme_abstention"),
     ("single-session-user", 0, False, "lme_default"), ("single-session-assistant", 0, False, "lme_default"),
     ("multi-session", 0, False, "lme_default"), ("temporal-reasoning", 0, False, "lme_temporal"),
     ("knowledge-update", 0, False, "lme_knowledge_update"),
     ("single-session-preference", 0, False, "lme_preference"), ("multi-session", 0, True, "lme_abstention"),
     ("unanswerable", 0, True, "lme_abstention")],
)  # fmt: skip
def test_llm_judge_picks_template_per_type(category, category_id, unanswerable, template):
    question = Question(
        "d/q1", "Where does Ana work?", "at the bakery", category, (), None, category_id, unanswerable
    )
    client = FakeClient([{"label": "CORRECT"}])
    verdict = LLMJudge(client, MARKED).judge(question, " She works at the bakery. ")
    assert template_name(question) == template
    assert client.messages == [
        [
            {
                "role": "user",
                "content": f"T={template} q=Where does Ana work? a=at the bakery r=She works at the bakery.",
            }
        ]
    ]
    assert verdict == Verdict(correct=True, score=1.0)


def test_real_templates_carry_question_gold_and_answer():
    templates = load_judge_templates()
    assert set(templates) == set(TEMPLATE_NAMES)
    for name in TEMPLATE_NAMES:
        text = templates[name].format(question="QQQ?", answer="GOLD-ANS", response="GEN-ANS")
        assert "QQQ?" in text and "GOLD-ANS" in text and "GEN-ANS" in text
        assert '{"label": "CORRECT"}' in text and '{"label": "WRONG"}' in text
    assert "off by one" in templates["lme_temporal"]
    assert "updated answer" in templates["lme_knowledge_update"]
    assert "Rubric" in templates["lme_preference"]


def test_llm_judge_labels_and_failures():
    question = q("Biscuit", "single-hop", 4)
    client = FakeClient(
        [
            {"label": "WRONG"},
            {"label": " correct "},
            {"verdict": "yes"},
            Failure("transport: HTTP 503", None, "transport"),
        ]
    )
    judge = LLMJudge(client)
    assert judge.judge(question, "Rex") == Verdict(correct=False, score=0.0)
    assert judge.judge(question, "Biscuit") == Verdict(correct=True, score=1.0)
    assert judge.judge(question, "Biscuit") == Verdict(correct=False, score=0.0, failed=True)
    assert judge.judge(question, "Biscuit") == Verdict(correct=False, score=0.0, failed=True)
    assert "Gold answer: Biscuit" in client.messages[0][0]["content"]
    assert "Generated answer: Rex" in client.messages[0][0]["content"]


def test_llm_judge_blank_answer_is_wrong_without_a_call():
    client = FakeClient([])
    assert LLMJudge(client).judge(q("Biscuit"), "  ") == Verdict(correct=False, score=0.0)
    assert client.messages == []
    with pytest.raises(ValueError, match="no judging template"):
        LLMJudge(client).judge(q("x", "mystery"), "")


def test_llm_judge_needs_every_template():
    with pytest.raises(ValueError, match="templates missing"):
        LLMJudge(FakeClient([]), {"locomo": "x"})
