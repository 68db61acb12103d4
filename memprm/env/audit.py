"""The audit trail: per entry and question, was it retrieved, cited, necessary (flips), toxic (cures)?

DESIGN.md, "Audit and credit":

- *retrieved*: the entry came back on one of the question's layer paths (the path is recorded);
- *cited*: the reader named it among the entries it used (citations were machine-checked on reading);
- *flips*: correct → wrong when the entry is removed and the question re-answered — tested only for entries
  cited on correct answers;
- *cures*: wrong → correct when an entry cited on a wrong answer is removed;
- *zero detection*: an entry no question retrieved gets no record and no test. Removing it leaves every
  reader input unchanged token for token (the retrieval invariant), so its deletion cannot change an answer.

At most one deletion test runs per (entry, question); re-answers go through the exam's :class:`ReaderCache`,
so a deletion that leaves the reader's input identical to one already answered costs nothing. Deletion tests
run only on entries of ``test_layers`` (default: the managed layers event and profile): credit exists only for
operations, and verbatim entries are written by no operation, so testing them would measure nothing the
method uses. Pass ``test_layers=LAYERS`` to audit verbatim entries too (``tools/examine_bank.py`` does).
Online, ``only_entries`` restricts the tests further to the entries an operation of the current episode
wrote or merged into (:func:`episode_entries`): chain credit reaches only the episode's own steps, so a flip of
an entry untouched by the episode changes no reward. Offline relabeling audits every managed entry.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from memprm.credit.types import AuditRecord
from memprm.env.exam import ExamResult, ReaderCache
from memprm.llm.roles import Judge, Reader
from memprm.memory.bank import MANAGED_LAYERS, MemoryBank
from memprm.memory.retriever import Retriever


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
    failed_answers: int = 0  # reader output unusable (judged wrong)


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
            counts=AuditCounts(**d["counts"]),
        )


def episode_entries(bank: MemoryBank, op_ids: Collection[str]) -> frozenset[str]:
    """Entries whose version chain holds one of ``op_ids`` (the entries an episode wrote or merged into)."""
    ops = set(op_ids)
    return frozenset(e.id for e in bank if ops.intersection(e.op_ids))


def audit_exam(
    bank: MemoryBank,
    exam: ExamResult,
    reader: Reader,
    judge: Judge,
    retriever: Retriever,
    cache: ReaderCache | None = None,
    test_layers: Collection[str] = MANAGED_LAYERS,
    only_entries: Collection[str] | None = None,
) -> AuditResult:
    """Audit ``exam`` (answered from ``bank``): one record per (retrieved entry, question)."""
    cache = cache if cache is not None else ReaderCache(reader, judge)
    counts = AuditCounts(questions=len(exam.results))
    records: list[AuditRecord] = []
    retrieved_ids: set[str] = set()
    failed_anchors: set[str] = set()
    tested: dict[tuple[str, str], bool] = {}  # (question, entry) -> correct after deletion
    for r in exam.results:
        q, correct = r.item.question, r.correct
        counts.dropped_citations += len(r.answer.dropped_citations)
        counts.failed_answers += int(r.answer.failed)
        if r.item.kind == "probe" and not correct:
            failed_anchors.update(q.evidence)
        cited = set(r.answer.cited)
        for hit in r.retrieval.hits:
            eid = hit.entry.id
            retrieved_ids.add(eid)
            flips = cures = None
            testable = hit.layer in test_layers and (only_entries is None or eid in only_entries)
            if eid in cited and testable:
                key = (q.id, eid)
                if key not in tested:
                    view_retrieval = retriever.retrieve(bank.without([eid]), q.text)
                    c0 = cache.reader_calls
                    _, verdict = cache.answer(q, view_retrieval)
                    counts.reader_calls += cache.reader_calls - c0
                    tested[key] = verdict.correct
                    counts.deletion_tests += 1
                after = tested[key]
                flips, cures = (correct and not after, None) if correct else (None, after)
                counts.flips += int(bool(flips))
                counts.cures += int(bool(cures))
            records.append(
                AuditRecord(
                    entry_id=eid,
                    question_id=q.id,
                    weight=r.item.weight,
                    correct=correct,
                    retrieved=True,
                    cited=eid in cited,
                    flips=flips,
                    cures=cures,
                    layer=hit.layer,
                )
            )
    counts.records = len(records)
    counts.zero_detected = sum(1 for e in bank if e.id not in retrieved_ids)
    return AuditResult(
        records=tuple(records),
        chains={e.id: e.op_ids for e in bank},
        failed_probe_anchors=frozenset(failed_anchors),
        correct={r.item.question.id: r.correct for r in exam.results},
        accuracy=exam.accuracy,
        counts=counts,
    )
