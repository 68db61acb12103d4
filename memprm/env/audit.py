"""The audit trail: per entry and question, was it retrieved, cited, necessary (flips), toxic (cures)?

DESIGN.md, "Audit and credit":

- *retrieved*: the entry came back on one of the question's layer paths (the path is recorded);
- *cited*: the reader named it among the entries it used (citations were machine-checked on reading);
- *flips*: correct → wrong when the entry is removed and the question re-answered (cited on correct answers);
- *cures*: wrong → correct when an entry cited on a wrong answer is removed;
- *versions*: on a cited record, which versions of the entry's chain the answer was read from (the reader's
  ``ReaderAnswer.evidence``, else the newest), for the ``cited_version`` chain credit;
- *zero detection*: an entry no question retrieved gets no record and no test. Removing it leaves every
  reader input unchanged token for token (the retrieval invariant), so its deletion cannot change an answer.

No credit of any kind comes from a failed call (DESIGN: a failure is never an answer). :func:`audit_exam`
holds the rules: which entries are deletion-tested, what a failed call leaves, and the citation cap.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from memprm.credit.types import AuditRecord
from memprm.env.exam import ExamResult, ItemResult, ReaderCache
from memprm.llm.failures import LEDGER
from memprm.llm.roles import Judge, Reader, ReaderAnswer
from memprm.memory.bank import MANAGED_LAYERS, Entry, MemoryBank
from memprm.memory.retriever import Retriever

#: ``reader.max_citations``'s default, for readers without a ``max_citations`` attribute.
DEFAULT_MAX_CITATIONS = 3


@dataclass
class AuditCounts:
    questions: int = 0
    records: int = 0
    deletion_tests: int = 0  # (entry, question) pairs re-answered without the entry
    reader_calls: int = 0  # deletion re-answers the reader really computed (the rest hit the cache)
    flips: int = 0
    cures: int = 0
    zero_detected: int = 0  # managed + verbatim entries never retrieved: no record, no test
    dropped_citations: int = 0  # cited ids that were not retrieved (dropped at reading)
    failed_answers: int = 0  # quiz items whose reader call failed (not scored, no record)
    failed_verdicts: int = 0  # quiz items whose judge call failed (not scored, no record)
    failed_deletion_tests: int = 0  # deletion re-answers that failed (no flip, no cure)
    missing_citations: int = 0  # scored answers whose reply had no ``cited`` field
    citation_cap_hits: int = 0  # scored answers citing more than ``max_citations`` entries
    answered: int = 0  # scored items (not failed)
    cited_share_sum: float = 0.0  # Σ over scored items with a retrieval of cited / retrieved

    @property
    def cited_share(self) -> float:
        """Mean share of an answer's retrieved entries that it cited (0.0 with no scored item)."""
        return self.cited_share_sum / self.answered if self.answered else 0.0

    def add(self, other: AuditCounts) -> None:
        """Add ``other``'s counts to these (to total several audits)."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass(frozen=True)
class AuditResult:
    records: tuple[AuditRecord, ...]
    #: op ids on each entry's version chain (oldest first), for every entry in the bank.
    chains: dict[str, tuple[str, ...]]
    #: anchor turn ids of probes answered wrongly (the coverage penalty's input).
    failed_probe_anchors: frozenset[str]
    #: question id -> judged correct with the full bank.
    correct: dict[str, bool]
    accuracy: float
    counts: AuditCounts = field(default_factory=AuditCounts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": [asdict(r) for r in self.records],
            "chains": {k: list(v) for k, v in self.chains.items()},
            "failed_probe_anchors": sorted(self.failed_probe_anchors),
            "correct": dict(self.correct),
            "accuracy": self.accuracy,
            "counts": asdict(self.counts),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditResult:
        return cls(
            records=tuple(AuditRecord(**r) for r in d["records"]),
            chains={k: tuple(v) for k, v in d["chains"].items()},
            failed_probe_anchors=frozenset(d["failed_probe_anchors"]),
            correct=dict(d["correct"]),
            accuracy=float(d["accuracy"]),
            counts=AuditCounts(**d["counts"]),  # files written before the failure counters read as 0
        )


def episode_entries(bank: MemoryBank, op_ids: Collection[str]) -> frozenset[str]:
    """Entries whose version chain holds one of ``op_ids`` (the entries an episode wrote or merged into)."""
    ops = set(op_ids)
    return frozenset(e.id for e in bank if ops.intersection(e.op_ids))


def exclude_questions(audit: AuditResult, exam: ExamResult, question_ids: Collection[str]) -> AuditResult:
    """``audit`` (of ``exam``) without the questions ``question_ids``: their records, failed-probe anchors and
    correctness are dropped and the accuracy is over the rest (the counts still tell what happened). A rollout
    group drops the questions that failed in any of its rollouts, so every rollout is measured on the same
    questions and no rollout gains or loses against another because a call failed."""
    drop = set(question_ids)
    if not drop:
        return audit
    kept = ExamResult(tuple(r for r in exam.results if r.item.question.id not in drop))
    anchors = {
        a
        for r in kept.results
        if r.item.kind == "probe" and not r.failed and not r.correct
        for a in r.item.question.evidence
    }
    return AuditResult(
        records=tuple(r for r in audit.records if r.question_id not in drop),
        chains=audit.chains,
        failed_probe_anchors=frozenset(anchors),
        correct={q: c for q, c in audit.correct.items() if q not in drop},
        accuracy=kept.accuracy,
        counts=audit.counts,
    )


def citation_cap(reader: Reader) -> int:
    """The reader's ``max_citations`` (``reader.max_citations``), else :data:`DEFAULT_MAX_CITATIONS`."""
    return int(getattr(reader, "max_citations", DEFAULT_MAX_CITATIONS))


def audit_exam(
    bank: MemoryBank,
    exam: ExamResult,
    reader: Reader,
    judge: Judge,
    retriever: Retriever,
    cache: ReaderCache | None = None,
    test_layers: Collection[str] = MANAGED_LAYERS,
    only_entries: Collection[str] | None = None,
    max_citations: int | None = None,
) -> AuditResult:
    """Audit ``exam`` (answered from ``bank``): one record per (retrieved entry, scored question).

    At most one deletion test runs per (entry, question); re-answers go through the exam's
    :class:`ReaderCache`, so a deletion that leaves the reader's input identical to one already answered costs
    nothing. Deletion tests run only on entries of ``test_layers`` (default: the managed layers event and
    profile): credit exists only for operations, and verbatim entries are written by no operation, so testing
    them would measure nothing the method uses. Pass ``test_layers=LAYERS`` to audit verbatim entries too
    (``tools/examine_bank.py`` does). Online, ``only_entries`` restricts the tests further to the entries an
    operation of the current episode wrote or merged into (:func:`episode_entries`): chain credit reaches only
    the episode's own steps, so a flip of an entry untouched by the episode changes no reward. Offline
    relabeling audits every managed entry.

    No credit of any kind comes from a failed call (DESIGN: a failure is never an answer):

    - a quiz item whose reader or judge call failed gets no record, no deletion test and no failed-probe
      anchor (counted in ``failed_answers`` / ``failed_verdicts``; its retrieved entries still count as
      retrieved for zero detection — retrieval is local and did not fail);
    - a deletion re-answer (reader or judge) that failed is no flip and no cure: the record keeps ``flips`` /
      ``cures`` = None (untested), counted in ``failed_deletion_tests``.

    Citations: ``missing_citations`` counts replies without a ``cited`` field; ``cited_share_sum / answered``
    is the mean share of an answer's retrieved entries it cited. At most ``max_citations``
    (``reader.max_citations``, default 3; the reader's own ``max_citations`` attribute when not given)
    citations of an answer are credited: the first ones, in the reader's order. An answer that cites more
    (``citation_cap_hits``) has not given the minimal set of entries it used, so its citations are not
    evidence by themselves: its first ``max_citations`` cited entries are deletion-tested as usual, and on a
    correct answer an entry counts as cited only where its deletion flips the answer (a cite-everything reader
    then earns an entry no more than ``0.3 + 0.7·flips``, what the deletion test supports); on a wrong answer
    they keep their toxicity test (a cure is deletion-measured).
    """
    cache = cache if cache is not None else ReaderCache(reader, judge)
    cap = citation_cap(reader) if max_citations is None else max_citations
    if cap < 1:
        raise ValueError(f"audit_exam: max_citations must be >= 1, got {cap}")
    counts = AuditCounts(questions=len(exam.results))
    retrieved_ids = {h.entry.id for r in exam.results for h in r.retrieval.hits}
    failed_anchors: set[str] = set()
    scored = [r for r in exam.results if not _count_item(r, cap, counts)]
    for r in scored:
        if r.item.kind == "probe" and not r.correct:
            failed_anchors.update(r.item.question.evidence)
    # (question, entry) -> correct after the entry's deletion, None when the re-answer failed
    tested = _deletion_tests(bank, scored, cap, retriever, cache, test_layers, only_entries, counts)
    records = [rec for r in scored for rec in _records(r, cap, tested, test_layers, only_entries, counts)]
    counts.records = len(records)
    counts.zero_detected = sum(1 for e in bank if e.id not in retrieved_ids)
    LEDGER.add(
        quiz_answers_failed=counts.failed_answers,
        quiz_verdicts_failed=counts.failed_verdicts,
        deletion_tests_failed=counts.failed_deletion_tests,
        missing_citations=counts.missing_citations,
        citation_cap_hits=counts.citation_cap_hits,
        dropped_citations=counts.dropped_citations,
    )
    return AuditResult(
        records=tuple(records),
        chains={e.id: e.op_ids for e in bank},
        failed_probe_anchors=frozenset(failed_anchors),
        correct={r.item.question.id: r.correct for r in scored},
        accuracy=exam.accuracy,
        counts=counts,
    )


def _count_item(r: ItemResult, cap: int, counts: AuditCounts) -> bool:
    """Count ``r``'s failures and citations into ``counts``; True when the item failed (not scored)."""
    if r.failed:
        counts.failed_answers += int(r.answer.failed)
        counts.failed_verdicts += int(not r.answer.failed)
        return True
    counts.answered += 1
    counts.dropped_citations += len(r.answer.dropped_citations)
    counts.missing_citations += int(r.answer.missing_citations)
    counts.citation_cap_hits += int(len(r.answer.cited) > cap)
    if r.retrieval.hits:
        counts.cited_share_sum += len(set(r.answer.cited)) / len(r.retrieval.hits)
    return False


def _testable(hit, test_layers: Collection[str], only_entries: Collection[str] | None) -> bool:
    return hit.layer in test_layers and (only_entries is None or hit.entry.id in only_entries)


def _deletion_tests(
    bank: MemoryBank,
    scored: list[ItemResult],
    cap: int,
    retriever: Retriever,
    cache: ReaderCache,
    test_layers: Collection[str],
    only_entries: Collection[str] | None,
    counts: AuditCounts,
) -> dict[tuple[str, str], bool | None]:
    """Re-answer every (scored question, credited cited testable entry) once without the entry (the
    retrievals here, the answers concurrently through ``cache``)."""
    pending: dict[tuple[str, str], tuple] = {}
    for r in scored:
        q, credited = r.item.question, set(r.answer.cited[:cap])
        for hit in r.retrieval.hits:
            key = (q.id, hit.entry.id)
            if hit.entry.id in credited and _testable(hit, test_layers, only_entries) and key not in pending:
                pending[key] = (q, retriever.retrieve(bank.without([hit.entry.id]), q.text))
    c0 = cache.reader_calls
    answered = cache.answer_many(list(pending.values()))
    counts.reader_calls += cache.reader_calls - c0
    counts.deletion_tests += len(pending)
    tested: dict[tuple[str, str], bool | None] = {}
    for key, (ans, verdict) in zip(pending, answered, strict=True):
        failed = ans.failed or verdict.failed
        counts.failed_deletion_tests += int(failed)
        tested[key] = None if failed else verdict.correct
    return tested


def _records(
    r: ItemResult,
    cap: int,
    tested: dict[tuple[str, str], bool | None],
    test_layers: Collection[str],
    only_entries: Collection[str] | None,
    counts: AuditCounts,
) -> list[AuditRecord]:
    """The records of one scored item (see :func:`audit_exam` for the cap)."""
    q, correct = r.item.question, r.correct
    credited = set(r.answer.cited[:cap])
    over_cap = len(r.answer.cited) > cap
    out = []
    for hit in r.retrieval.hits:
        eid = hit.entry.id
        flips = cures = None
        after = (
            tested.get((q.id, eid)) if eid in credited and _testable(hit, test_layers, only_entries) else None
        )
        if after is not None:
            flips, cures = (not after, None) if correct else (None, after)
        cited = eid in credited and (not over_cap or not correct or flips is True)
        if not cited:
            flips = None
        counts.flips += int(bool(flips))
        counts.cures += int(bool(cures))
        out.append(
            AuditRecord(
                entry_id=eid,
                question_id=q.id,
                weight=r.item.weight,
                correct=correct,
                retrieved=True,
                cited=cited,
                flips=flips,
                cures=cures,
                layer=hit.layer,
                versions=read_versions(r.answer, hit.entry) if cited else (),
            )
        )
    return out


def read_versions(answer: ReaderAnswer, entry: Entry) -> tuple[int, ...]:
    """The indices of ``entry``'s versions that ``answer`` was read from (``ReaderAnswer.evidence``), sorted;
    the newest alone when the reader reported none for it (the field's default reading)."""
    n = len(entry.versions)
    got = sorted({i for eid, i in answer.evidence if eid == entry.id})
    if any(not 0 <= i < n for i in got):
        raise ValueError(f"read_versions: the answer reports versions {got} of {entry.id!r}, which has {n}")
    return tuple(got) if got else (n - 1,)
