"""Exam + audit of one small bank with an LLM reader and judge on the loopback server, under fault modes.

A helper module (not a test file): the tests import :func:`run_mode`, and ``python tests/helpers/fault_scenarios.py``
prints the table of every mode (what the exam and the audit did, and each entry's credit against the
fault-free run). The bank, the questions and the responder are fixed, so every number is reproducible:

- q1 "biscuit dog story" -> Biscuit: one entry holds "alpha" (its deletion flips the answer);
- q2 "marathon race beta" -> Porto: two entries hold "marathon" (a deletion is absorbed by the other);
- q3 "lisbon city gamma" -> Lisbon: a clean entry and a POISON one (the reader answers wrong from it).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: ``helpers`` imports as a package

from helpers.chat_server import ChatServer, Fault, after, always, every, exam_responder, hang, status  # noqa: E402
from memprm.credit import CreditConfig, PresenceWeights, presence_credit  # noqa: E402
from memprm.credit.types import AuditRecord  # noqa: E402
from memprm.data.records import Question  # noqa: E402
from memprm.env.audit import AuditResult, audit_exam  # noqa: E402
from memprm.env.exam import ExamResult, Quiz, QuizItem, ReaderCache, run_exam  # noqa: E402
from memprm.llm.client import LLMClient  # noqa: E402
from memprm.llm.endpoint import LLMConfig, LLMStop  # noqa: E402
from memprm.llm.judge import LLMJudge  # noqa: E402
from memprm.llm.reader import LLMReader  # noqa: E402
from memprm.llm.stats import RoleStats  # noqa: E402
from memprm.memory import HashingEmbedder, MemoryBank, Retriever, RetrieverConfig  # noqa: E402

FACTS = {
    "biscuit dog story": ("alpha", "Biscuit"),
    "marathon race beta": ("marathon", "Porto"),
    "lisbon city gamma": ("lisbon", "Lisbon"),
}
GOLD = {"biscuit dog story": "Biscuit", "marathon race beta": "Porto", "lisbon city gamma": "Lisbon"}


@dataclass(frozen=True)
class Mode:
    name: str
    fault: Fault | None = None
    cite: str = "honest"
    reply: str = "json"


MODES = (
    Mode("ok"),
    Mode("429 every 2nd request", every(2, status(429, retry_after=0))),
    Mode("500 always", always(status(500))),
    Mode("500 after 8 requests", after(8, status(500))),
    Mode("hang (5 s > 0.3 s timeout)", always(hang(5.0))),
    Mode("bad JSON reply", reply="bad_json"),
    Mode("forged citation ids", cite="forged"),
    Mode("cite everything", cite="everything"),
    Mode("no cited field", cite="none"),
    Mode("400 always", always(status(400, message="context too long"))),
    Mode("401 always", always(status(401, message="bad key"))),
)


def make_bank() -> tuple[MemoryBank, dict[str, str]]:
    bank = MemoryBank()
    ids = {
        "alpha": bank.write("event", "biscuit dog story alpha").entry_id,
        "beta1": bank.write("event", "marathon race beta one").entry_id,
        "beta2": bank.write("event", "marathon race beta two").entry_id,
        "poison": bank.write("event", "POISON lisbon city gamma").entry_id,
        "clean": bank.write("event", "lisbon city gamma clean").entry_id,
        "zeta": bank.write("event", "zzz unrelated zeta never").entry_id,
    }
    return bank, ids


def make_quiz() -> Quiz:
    qs = [Question(f"q{i}", text, GOLD[text], "single-hop", ("D1:1",)) for i, text in enumerate(FACTS, 1)]
    return Quiz(tuple(QuizItem(q, 1.0, "official") for q in qs))


def llm_cfg(base_url: str, **kw) -> LLMConfig:
    base = dict(
        base_url=base_url, model="m", model_version="v1", api_key_env=None, timeout_s=0.3, max_retries=1,
        backoff_base_s=0.001, backoff_max_s=0.01, question_timeout_s=2.0, max_concurrency=4, format_retries=1,
    )  # fmt: skip
    base.update(kw)
    return LLMConfig(**base)


@dataclass(frozen=True)
class ModeRun:
    mode: str
    exam: ExamResult
    audit: AuditResult
    credit: dict[str, float]  # entry id -> u_i (Eq. 6)
    reader: dict[str, int]
    judge: dict[str, int]
    seconds: float
    requests: int


def run_mode(mode: Mode, width: int = 5, max_citations: int = 3, **cfg) -> ModeRun:
    """Exam + audit of the bank under ``mode`` (``cfg``: :class:`LLMConfig` overrides)."""
    bank, _ = make_bank()
    retriever = Retriever(
        HashingEmbedder(dim=8192),
        RetrieverConfig(widths={"event": width, "profile": 1, "verbatim": 1}, paths=("event",)),
    )
    with ChatServer(responder=exam_responder(FACTS, mode.cite, mode.reply), fault=mode.fault) as srv:
        rs, js = RoleStats("reader"), RoleStats("judge")
        reader = LLMReader(LLMClient(llm_cfg(srv.base_url, **cfg), "reader", stats=rs, seed=0), max_citations)
        judge = LLMJudge(LLMClient(llm_cfg(srv.base_url, **cfg), "judge", stats=js, seed=0))
        cache = ReaderCache(reader, judge)
        t0 = time.perf_counter()
        exam = run_exam(bank, make_quiz(), reader, judge, retriever, cache)
        audit = audit_exam(bank, exam, reader, judge, retriever, cache)
        seconds = time.perf_counter() - t0
        requests = len(srv.chat_requests)
    credit = presence_credit(audit.records, CreditConfig(), entry_ids=[e.id for e in bank])
    return ModeRun(mode.name, exam, audit, credit, rs.as_dict(), js.as_dict(), seconds, requests)


def positive_credit(records: list[AuditRecord], w: PresenceWeights | None = None) -> dict[str, float]:
    """Eq. (6)'s positive part per entry, max over its correct questions (what a flip or citation adds)."""
    w = w or PresenceWeights()
    out: dict[str, float] = {}
    for r in records:
        if r.correct:
            u = w.retrieved * r.retrieved + w.cited * r.cited + w.flips * bool(r.flips)
            out[r.entry_id] = max(out.get(r.entry_id, 0.0), u)
    return out


def toxic(records: list[AuditRecord]) -> set[str]:
    """Entries with a measured cure (Eq. (6)'s negative part)."""
    return {r.entry_id for r in records if not r.correct and r.cited and r.cures}


def table(modes=MODES) -> str:
    """One row per mode; the last two columns compare with the fault-free run: the most an entry's positive
    credit exceeds it (must be 0) and toxic entries it does not have (must be none)."""
    head = (
        "| mode | HTTP req | wall s | LLM failed/asked | scored/asked | R | failed ans/verdict/deletion | tests | "
        "flips | cures | dropped | cap hits | missing cited | cited share | max credit excess | new toxic |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    ok = None
    for m in modes:
        try:
            r = run_mode(m)
        except LLMStop as exc:
            lines.append(f"| {m.name} | stopped: {type(exc).__name__}: {exc} |")
            continue
        pos, tox = positive_credit(list(r.audit.records)), toxic(list(r.audit.records))
        ok = ok or (pos, tox)
        c = r.audit.counts
        excess = max([pos[e] - ok[0].get(e, 0.0) for e in pos], default=0.0)
        llm = f"{r.reader['failures'] + r.judge['failures']}/{r.reader['questions'] + r.judge['questions']}"
        lines.append(
            f"| {r.mode} | {r.requests} | {r.seconds:.1f} | {llm} | {c.answered}/{c.questions} | "
            f"{r.exam.accuracy:.2f} | {c.failed_answers}/{c.failed_verdicts}/{c.failed_deletion_tests} | "
            f"{c.deletion_tests} | {c.flips} | {c.cures} | {c.dropped_citations} | {c.citation_cap_hits} | "
            f"{c.missing_citations} | {c.cited_share:.2f} | {excess:+.2f} | {sorted(tox - ok[1]) or '-'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # the retry warnings; the table says what happened
    print(table())
