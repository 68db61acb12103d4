"""Episode-end exams: assembling the quiz for a session window and answering it against a bank.

Quiz (DESIGN.md, "Exam"): the source-anchored probes of the window + the official questions that the window
*unlocks* — those whose evidence turns have all been observed by the window's end and not all before it
(evidence unlocking; a question with no evidence unlocks at the dialogue's last window). Each item weighs 1, or
``final_session_weight`` (default 2) when its anchor / unlocking turn lies in the dialogue's final session. The
same quiz goes to every rollout of a group. R = Σ w·correct / Σ w ∈ [0, 1] (0 for an empty quiz, which is
flagged so callers can skip it).

``run_exam`` answers every item once; ``ReaderCache`` makes answering a function of the reader's *input*
(question + the exact retrieved chains), so identical inputs — across the rollouts of a group, or a deletion
that leaves the retrieved set unchanged — are answered once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memprm.data.records import Dialogue, Question
from memprm.llm.roles import Judge, Reader, ReaderAnswer, Verdict
from memprm.memory.bank import BankView, MemoryBank
from memprm.memory.retriever import Retrieval, Retriever


@dataclass(frozen=True)
class QuizItem:
    question: Question
    weight: float
    kind: str  # "probe" | "official"


@dataclass(frozen=True)
class Quiz:
    items: tuple[QuizItem, ...]

    @property
    def total_weight(self) -> float:
        return sum(i.weight for i in self.items)

    def __len__(self) -> int:
        return len(self.items)


def unlocked_questions(
    dialogue: Dialogue, seen_before: Iterable[str], seen_now: Iterable[str]
) -> list[Question]:
    """Official questions unlocked by the turns ``seen_now`` given the turns ``seen_before`` (see module)."""
    before, now = set(seen_before), set(seen_before) | set(seen_now)
    last_turn = dialogue.turns()[-1].id if dialogue.n_turns else None
    out = []
    for q in dialogue.questions:
        if q.evidence:
            if set(q.evidence) <= now and not set(q.evidence) <= before:
                out.append(q)
        elif last_turn is not None and last_turn in now and last_turn not in before:
            out.append(q)
    return out


def assemble_quiz(
    dialogue: Dialogue,
    probes: Sequence[Question],
    seen_before: Iterable[str],
    seen_now: Iterable[str],
    final_session_weight: float = 2.0,
) -> Quiz:
    """The quiz of the window whose turns are ``seen_now`` (``seen_before``: all earlier turns)."""
    index = dialogue.turn_index()
    final = dialogue.sessions[-1].index if dialogue.sessions else None
    seen_now = list(seen_now)

    def weight(turn_ids: Sequence[str]) -> float:
        sessions = [index[t].session_index for t in turn_ids if t in index]
        in_final = sessions and max(sessions) == final
        return final_session_weight if in_final else 1.0

    items = [QuizItem(p, weight(p.evidence), "probe") for p in probes]
    for q in unlocked_questions(dialogue, seen_before, seen_now):
        items.append(QuizItem(q, weight(q.evidence or seen_now[-1:]), "official"))
    return Quiz(tuple(items))


@dataclass(frozen=True)
class ItemResult:
    item: QuizItem
    retrieval: Retrieval
    answer: ReaderAnswer
    verdict: Verdict

    @property
    def correct(self) -> bool:
        return self.verdict.correct and not self.answer.failed


@dataclass(frozen=True)
class ExamResult:
    results: tuple[ItemResult, ...]

    @property
    def accuracy(self) -> float:
        """R: weighted accuracy in [0, 1]; 0.0 for an empty quiz."""
        total = sum(r.item.weight for r in self.results)
        return sum(r.item.weight for r in self.results if r.correct) / total if total else 0.0

    @property
    def context_tokens(self) -> float:
        """Mean reader context size per question."""
        return sum(r.answer.context_tokens for r in self.results) / max(len(self.results), 1)


@dataclass
class ReaderCache:
    """Answers and verdicts memoized on the reader's input; counts what was really computed."""

    reader: Reader
    judge: Judge
    answers: dict[tuple, ReaderAnswer] = field(default_factory=dict)
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    reader_calls: int = 0
    judge_calls: int = 0
    lookups: int = 0

    def answer(self, question: Question, retrieval: Retrieval) -> tuple[ReaderAnswer, Verdict]:
        self.lookups += 1
        key = (question.id, question.text, reader_input_key(retrieval))
        ans = self.answers.get(key)
        if ans is None:
            ans = self.reader.answer(question, retrieval)
            self.answers[key] = ans
            self.reader_calls += 1
        vkey = (question.id, ans.answer)
        verdict = self.verdicts.get(vkey)
        if verdict is None:
            verdict = self.judge.judge(question, ans.answer)
            self.verdicts[vkey] = verdict
            self.judge_calls += 1
        return ans, verdict


def reader_input_key(retrieval: Retrieval) -> tuple:
    """What the reader sees, token for token: the retrieved chains in order (ids, layers, contents, dates)."""
    return tuple(
        (h.entry.id, h.layer, tuple((v.content, v.timestamp) for v in h.entry.versions))
        for h in retrieval.hits
    )


def run_exam(
    bank: MemoryBank | BankView,
    quiz: Quiz,
    reader: Reader,
    judge: Judge,
    retriever: Retriever,
    cache: ReaderCache | None = None,
) -> ExamResult:
    """Answer every quiz item from ``bank`` (retrieve → read → judge).

    Pass one ``ReaderCache`` to every rollout of a group (and to :func:`memprm.env.audit.audit_exam`) so that
    identical reader inputs are answered once; without one a fresh cache is used.
    """
    cache = cache if cache is not None else ReaderCache(reader, judge)
    results = []
    for item in quiz.items:
        retrieval = retriever.retrieve(bank, item.question.text)
        answer, verdict = cache.answer(item.question, retrieval)
        results.append(ItemResult(item, retrieval, answer, verdict))
    return ExamResult(tuple(results))
