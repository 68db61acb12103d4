"""Episode-end exams: assembling the quiz for a session window and answering it against a bank.

The quiz (:func:`assemble_quiz`; DESIGN.md, "Exam") is the window's source-anchored probes plus the official
questions the window unlocks; the same quiz goes to every rollout of a group, and
R = Σ w·correct / Σ w ∈ [0, 1]. :func:`run_exam` answers every item once through a :class:`ReaderCache`,
which makes answering a function of the reader's *input*, so identical inputs are answered once.

**A failure is never an answer.** A reader or judge call that failed makes its item *failed*: its own
outcome, neither right nor wrong, not scored and given no credit (:class:`ItemResult`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from memprm.data.records import Dialogue, Question
from memprm.llm.roles import Judge, Reader, ReaderAnswer, Verdict
from memprm.memory.bank import BankView, MemoryBank
from memprm.memory.retriever import Retrieval, Retriever

K = TypeVar("K")
V = TypeVar("V")


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
    """Official questions unlocked by the turns ``seen_now`` given the turns ``seen_before``.

    A question is unlocked by the window whose turns ``seen_now`` complete its evidence: all its evidence
    turns have been observed by the window's end and not all before it (evidence unlocking). A question with
    no evidence unlocks at the dialogue's last window.
    """
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
    """The quiz of the window whose turns are ``seen_now`` (``seen_before``: all earlier turns).

    Quiz (DESIGN.md, "Exam"): the source-anchored probes of the window + the official questions that the
    window *unlocks* (:func:`unlocked_questions`). Each item weighs 1, or ``final_session_weight`` (default 2)
    when its anchor / unlocking turn lies in the dialogue's final session. The same quiz goes to every rollout
    of a group. R = Σ w·correct / Σ w ∈ [0, 1] (0 for an empty quiz, which is flagged so callers can skip it;
    :attr:`ExamResult.accuracy`).
    """
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
    """One answered quiz item.

    **A failure is never an answer.** A reader call or a judge call that failed (``ReaderAnswer.failed``,
    ``Verdict.failed``: transport, format or a 4xx, after the client's bounded retries) makes the item
    *failed*: its own outcome, neither right nor wrong. R is the weighted accuracy over the items that did not
    fail (an exam whose items all failed has R = 0 and ``all_failed``); the audit gives failed items no record
    and no test, and the probe gates drop a probe whose gate answer failed (:mod:`memprm.env.audit`,
    :mod:`memprm.env.probe_gates`). Failures are memoized like answers (:class:`ReaderCache`), so a dead
    endpoint is asked once per distinct reader input.
    """

    item: QuizItem
    retrieval: Retrieval
    answer: ReaderAnswer
    verdict: Verdict

    @property
    def failed(self) -> bool:
        """The reader's or the judge's call failed: not scored, no credit (see the class docstring)."""
        return self.answer.failed or self.verdict.failed

    @property
    def correct(self) -> bool:
        return self.verdict.correct and not self.failed


@dataclass(frozen=True)
class ExamResult:
    results: tuple[ItemResult, ...]

    @property
    def accuracy(self) -> float:
        """R: weighted accuracy in [0, 1] over the items that did not fail; 0.0 for an empty quiz or one whose
        items all failed."""
        total = sum(r.item.weight for r in self.results if not r.failed)
        return sum(r.item.weight for r in self.results if r.correct) / total if total else 0.0

    @property
    def n_failed(self) -> int:
        return sum(r.failed for r in self.results)

    @property
    def all_failed(self) -> bool:
        return bool(self.results) and self.n_failed == len(self.results)

    @property
    def context_tokens(self) -> float:
        """Mean reader context size per question."""
        return sum(r.answer.context_tokens for r in self.results) / max(len(self.results), 1)


@dataclass
class ReaderCache:
    """Answers and verdicts memoized on the reader's input; counts what was really computed.

    Answering is a function of the reader's *input* (question + the exact retrieved chains,
    :func:`reader_input_key`), so identical inputs — across the rollouts of a group, or a deletion that leaves
    the retrieved set unchanged — are answered once. Failures are memoized like answers.
    """

    reader: Reader
    judge: Judge
    answers: dict[tuple, ReaderAnswer] = field(default_factory=dict)
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    reader_calls: int = 0
    judge_calls: int = 0
    lookups: int = 0

    def answer(self, question: Question, retrieval: Retrieval) -> tuple[ReaderAnswer, Verdict]:
        return self.answer_many([(question, retrieval)])[0]

    def answer_many(self, asks: Sequence[tuple[Question, Retrieval]]) -> list[tuple[ReaderAnswer, Verdict]]:
        """(answer, verdict) of every (question, retrieval), in input order. A failed answer is not judged:
        its verdict is ``Verdict(False, 0.0, failed=True)``.

        **Concurrency.** The distinct reader inputs not yet answered go to the reader ``max_concurrency`` at
        a time (a thread pool; the role's ``max_concurrency`` attribute, the LLM roles' client setting), then
        the distinct (question, answer) pairs not yet judged go to the judge likewise. Results are keyed by
        question and input, never by arrival order, so they are the same as sequential answering. Roles
        without ``max_concurrency`` (the offline extractive reader and F1 judge) are run sequentially in the
        caller's thread, exactly as before.
        """
        self.lookups += len(asks)
        keys = [(q.id, q.text, reader_input_key(r)) for q, r in asks]
        todo = dict(zip(keys, asks, strict=True))
        todo = {k: a for k, a in todo.items() if k not in self.answers}
        self.answers.update(_fan_out(lambda a: self.reader.answer(*a), todo, concurrency(self.reader)))
        self.reader_calls += len(todo)
        answers = [self.answers[k] for k in keys]
        vtodo = {(q.id, a.answer): q for (q, _), a in zip(asks, answers, strict=True) if not a.failed}
        vtodo = {k: q for k, q in vtodo.items() if k not in self.verdicts}
        self.verdicts.update(
            _fan_out(
                lambda kq: self.judge.judge(kq[1], kq[0][1]), vtodo, concurrency(self.judge), pass_key=True
            )
        )
        self.judge_calls += len(vtodo)
        return [
            (a, _FAILED if a.failed else self.verdicts[(q.id, a.answer)])
            for (q, _), a in zip(asks, answers, strict=True)
        ]


_FAILED = Verdict(correct=False, score=0.0, failed=True)


def concurrency(role: object) -> int:
    """How many questions a role may be sent at once: its ``max_concurrency`` attribute, else 1."""
    return max(1, int(getattr(role, "max_concurrency", 1)))


def _fan_out(fn: Callable, todo: dict[K, V], workers: int, pass_key: bool = False) -> dict[K, object]:
    """``{k: fn(v)}`` (``fn((k, v))`` with ``pass_key``) over ``todo``, ``workers`` at a time (sequential in this
    thread for one worker or one item)."""
    args = list(todo.items()) if pass_key else list(todo.values())
    if workers <= 1 or len(args) <= 1:
        return dict(zip(todo, [fn(a) for a in args], strict=True))
    with ThreadPoolExecutor(max_workers=min(workers, len(args))) as pool:
        return dict(zip(todo, pool.map(fn, args), strict=True))


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
    retrievals = [retriever.retrieve(bank, item.question.text) for item in quiz.items]
    answered = cache.answer_many([(item.question, r) for item, r in zip(quiz.items, retrievals, strict=True)])
    return ExamResult(
        tuple(ItemResult(i, r, a, v) for i, r, (a, v) in zip(quiz.items, retrievals, answered, strict=True))
    )
