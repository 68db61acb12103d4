"""From the run's files to what the page shows: typed views, built by pure functions (no HTML here).

Per (dialogue, manager) a :class:`BankPage` lists every managed entry and every verbatim entry some question
retrieved (the other verbatim entries are counted, not listed: one per turn, they are the transcript). Per entry:
its version chain, each version with the operation that wrote it (its gate step, Write / Merge, φ at decision
time and the credit the operation got), and the questions that retrieved it, cited it, flipped (correct →
wrong when it was removed) or were cured (wrong → correct when it was removed), with its Eq. (6) credit.
Per question: the retrieved set, answer, citations, verdict and the deletion tests run for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memprm.inspect.load import InspectError, RunFiles

MANAGED = ("event", "profile")


@dataclass(frozen=True)
class VersionView:
    index: int
    content: str
    timestamp: str | None
    source_turns: tuple[str, ...]
    op_id: str
    op_kind: str  # write / merge / verbatim
    #: position of the op among the dialogue's gate decisions (None: the automatic verbatim write).
    step: int | None
    window: int | None
    phi: float | None  # the critic's φ at decision time
    p_retrieved: float | None
    op_credit: float | None  # the credit the op received from this entry (chain mode of the run)
    twin: bool  # a managed version whose content is its source turn word for word


@dataclass(frozen=True)
class EntryView:
    id: str
    layer: str
    key: str
    versions: tuple[VersionView, ...]
    retrieved_by: tuple[str, ...]
    cited_by: tuple[str, ...]
    flipped: tuple[str, ...]  # questions whose answer went correct → wrong without this entry
    held: tuple[str, ...]  # deletion-tested on a correct answer, still correct without it
    cured: tuple[str, ...]  # questions whose answer went wrong → correct without it
    credit: float | None  # Eq. (6); None for verbatim entries (no operation to credit) or without an audit

    @property
    def load_bearing(self) -> bool:
        return bool(self.flipped)

    @property
    def never_retrieved(self) -> bool:
        return not self.retrieved_by

    @property
    def twin(self) -> bool:
        return any(v.twin for v in self.versions)

    @property
    def phi(self) -> float | None:
        """φ of the operation that started the entry."""
        return self.versions[0].phi if self.versions else None


@dataclass(frozen=True)
class HitView:
    entry_id: str
    layer: str
    score: float
    version: int
    cited: bool


@dataclass(frozen=True)
class DeletionTest:
    entry_id: str
    outcome: str  # "flipped" | "held" (correct answer) or "cured" | "still wrong" (wrong answer)


@dataclass(frozen=True)
class QuestionView:
    id: str
    text: str
    category: str
    gold: str
    answer: str
    correct: bool
    score: float
    failed: bool
    weight: float
    hits: tuple[HitView, ...]
    cited: tuple[str, ...]
    dropped_citations: tuple[str, ...]
    tests: tuple[DeletionTest, ...]


@dataclass(frozen=True)
class BankPage:
    dialogue: str
    manager: str
    accuracy: float
    entries: tuple[EntryView, ...]
    questions: tuple[QuestionView, ...]
    managed_entries: int
    verbatim_entries: int
    verbatim_unlisted: int  # verbatim entries no question retrieved
    ops: dict[str, int]  # gate decisions by kind
    audited: bool
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def twin_versions(self) -> int:
        return sum(v.twin for e in self.entries for v in e.versions)

    @property
    def managed_versions(self) -> int:
        return sum(len(e.versions) for e in self.entries if e.layer in MANAGED)


@dataclass(frozen=True)
class ManagerSummary:
    """One manager's audit over every test dialogue (from the trail)."""

    manager: str
    dialogues: int
    questions: int
    correct: int
    managed_entries: int
    load_bearing: int
    tested: int  # managed entries deletion-tested on some correct answer
    never_retrieved: int  # managed entries no question retrieved
    twin_versions: int
    managed_versions: int
    cures: int


@dataclass(frozen=True)
class DevPoint:
    step: int
    accuracy: float
    rollouts: int


@dataclass(frozen=True)
class Summary:
    run_name: str
    config_text: str
    test_results: dict[str, dict[str, Any]]
    categories: tuple[str, ...]
    managers: tuple[ManagerSummary, ...]
    credit: dict[str, Any]
    critic: bool
    validity_md: str
    validity_source: str
    dev_curve: tuple[DevPoint, ...]
    dev_best_step: int | None
    ladder_md: str
    ladder_png: bytes | None


@dataclass(frozen=True)
class PageModel:
    summary: Summary
    banks: tuple[BankPage, ...]  # dialogue by dialogue, managers in evaluation order
    dialogues: tuple[str, ...]  # every test dialogue of the trail
    shown: tuple[str, ...]  # the dialogues the page details


# ---------------------------------------------------------------------------------------------- building
def build_model(run: RunFiles, dialogue: str | None = None) -> PageModel:
    """The page model of ``run``; ``dialogue`` restricts the per-dialogue sections to that dialogue."""
    dialogues = tuple(dict.fromkeys(line["dialogue"] for line in run.lines))
    if dialogue is not None and dialogue not in dialogues:
        raise InspectError(
            f"{run.run_dir}: no dialogue {dialogue!r} in the audit trail; dialogues: {', '.join(dialogues)}"
        )
    every = [bank_page(line) for line in run.lines]
    shown = dialogues if dialogue is None else (dialogue,)
    order = {d: i for i, d in enumerate(dialogues)}
    banks = sorted((b for b in every if b.dialogue in shown), key=lambda b: order[b.dialogue])
    return PageModel(summary(run, every), tuple(banks), dialogues, shown)


def bank_page(line: Mapping[str, Any]) -> BankPage:
    """The view of one trail line (one manager's bank and exam on one dialogue)."""
    bank, steps = line["bank"], line["steps"]
    step_of = {s["op_id"]: (i, s) for i, s in enumerate(steps)}
    records = (line.get("audit") or {}).get("records", [])
    credit = line.get("credit") or {}
    entry_credit, op_credit = credit.get("entries", {}), credit.get("ops", {})
    twins = {k: set(v) for k, v in (line.get("twins") or {}).items()}
    questions = [question_view(q, records) for q in line["questions"]]
    retrieved_by: dict[str, list[str]] = {}
    for q in questions:
        for h in q.hits:
            retrieved_by.setdefault(h.entry_id, []).append(q.id)
    by_entry: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_entry.setdefault(r["entry_id"], []).append(r)
    entries, verbatim = [], 0
    for e in bank["entries"]:
        if e["layer"] not in MANAGED:
            verbatim += 1
            if e["id"] not in retrieved_by:
                continue
        versions = tuple(
            _version(i, v, step_of, op_credit, i in twins.get(e["id"], ()), e["layer"])
            for i, v in enumerate(e["versions"])
        )
        recs = by_entry.get(e["id"], [])
        entries.append(
            EntryView(
                id=e["id"],
                layer=e["layer"],
                key=e.get("key", ""),
                versions=versions,
                retrieved_by=tuple(retrieved_by.get(e["id"], ())),
                cited_by=tuple(r["question_id"] for r in recs if r["cited"]),
                flipped=tuple(r["question_id"] for r in recs if r.get("flips") is True),
                held=tuple(r["question_id"] for r in recs if r.get("flips") is False),
                cured=tuple(r["question_id"] for r in recs if r.get("cures") is True),
                credit=entry_credit.get(e["id"]) if e["layer"] in MANAGED else None,
            )
        )
    managed = sum(e.layer in MANAGED for e in entries)
    return BankPage(
        dialogue=line["dialogue"],
        manager=line["manager"],
        accuracy=float(line.get("accuracy", 0.0)),
        entries=tuple(entries),
        questions=tuple(questions),
        managed_entries=managed,
        verbatim_entries=verbatim,
        verbatim_unlisted=verbatim - (len(entries) - managed),
        ops=dict(Counter(s["kind"] for s in steps)),
        audited=line.get("audit") is not None,
        counts=dict((line.get("audit") or {}).get("counts", {})),
    )


def question_view(q: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> QuestionView:
    cited = tuple(q.get("cited", ()))
    tests = []
    for r in records:
        if r["question_id"] != q["id"]:
            continue
        if r.get("flips") is not None:
            tests.append(DeletionTest(r["entry_id"], "flipped" if r["flips"] else "held"))
        elif r.get("cures") is not None:
            tests.append(DeletionTest(r["entry_id"], "cured" if r["cures"] else "still wrong"))
    hits = tuple(
        HitView(
            h["entry_id"], h["layer"], float(h["score"]), int(h.get("version", 0)), h["entry_id"] in cited
        )
        for h in q.get("hits", ())
    )
    return QuestionView(
        id=q["id"],
        text=q.get("text", ""),
        category=q.get("category", ""),
        gold=str(q.get("gold", "")),
        answer=q.get("answer", ""),
        correct=bool(q.get("correct")),
        score=float(q.get("score", 0.0)),
        failed=bool(q.get("failed")),
        weight=float(q.get("weight", 1.0)),
        hits=hits,
        cited=cited,
        dropped_citations=tuple(q.get("dropped_citations", ())),
        tests=tuple(tests),
    )


def _version(i, v, step_of, op_credit, twin: bool, layer: str) -> VersionView:
    op = v["op_id"]
    pos, step = step_of.get(op, (None, {}))
    kind = step.get("kind") or ("verbatim" if layer not in MANAGED else ("write" if i == 0 else "merge"))
    return VersionView(
        index=i,
        content=v["content"],
        timestamp=v.get("timestamp"),
        source_turns=tuple(v.get("source_turn_ids", ())),
        op_id=op,
        op_kind=kind,
        step=pos,
        window=step.get("window"),
        phi=step.get("phi"),
        p_retrieved=step.get("p"),
        op_credit=op_credit.get(op),
        twin=twin,
    )


def manager_summaries(banks: Iterable[BankPage]) -> tuple[ManagerSummary, ...]:
    """Per manager, totals over its banks (in the order managers first appear)."""
    grouped: dict[str, list[BankPage]] = {}
    for b in banks:
        grouped.setdefault(b.manager, []).append(b)
    out = []
    for name, bs in grouped.items():
        managed = [e for b in bs for e in b.entries if e.layer in MANAGED]
        scored = [q for b in bs for q in b.questions if not q.failed]
        out.append(
            ManagerSummary(
                manager=name,
                dialogues=len(bs),
                questions=len(scored),
                correct=sum(q.correct for q in scored),
                managed_entries=len(managed),
                load_bearing=sum(e.load_bearing for e in managed),
                tested=sum(bool(e.flipped or e.held) for e in managed),
                never_retrieved=sum(e.never_retrieved for e in managed),
                twin_versions=sum(b.twin_versions for b in bs),
                managed_versions=sum(b.managed_versions for b in bs),
                cures=sum(bool(e.cured) for e in managed),
            )
        )
    return tuple(out)


def trail_results(banks: Iterable[BankPage]) -> dict[str, dict[str, Any]]:
    """``test_results.json``'s shape computed from the trail, for run folders without that file."""
    out: dict[str, dict[str, Any]] = {}
    grouped: dict[str, list[BankPage]] = {}
    for b in banks:
        grouped.setdefault(b.manager, []).append(b)
    for name, bs in grouped.items():
        scored = [q for b in bs for q in b.questions if not q.failed]
        cats: dict[str, list[bool]] = {}
        for q in scored:
            cats.setdefault(q.category, []).append(q.correct)
        managed = [e for b in bs for e in b.entries if e.layer in MANAGED]
        versions = sum(len(e.versions) for e in managed)
        out[name] = {
            "accuracy": sum(q.correct for q in scored) / len(scored) if scored else 0.0,
            "n_questions": len(scored),
            "by_category": {k: sum(v) / len(v) for k, v in sorted(cats.items())},
            "entries": len(managed) / len(bs),
            "versions_per_entry": versions / len(managed) if managed else 0.0,
        }
    return out


def summary(run: RunFiles, banks: Iterable[BankPage]) -> Summary:
    banks = list(banks)
    cats = sorted({c for r in run.test_results.values() for c in r.get("by_category", {})})
    if not cats:
        cats = sorted({q.category for b in banks for q in b.questions})
    dev = run.dev_selection or {}
    curve = tuple(
        DevPoint(int(h["step"]), float(h["accuracy"]), int(h.get("rollouts", 0)))
        for h in dev.get("history", ())
    )
    return Summary(
        run_name=run.run_dir.name,
        config_text=run.config_text,
        test_results=run.test_results or trail_results(banks),
        categories=tuple(cats),
        managers=manager_summaries(banks),
        credit=dict(run.meta.get("credit", {})),
        critic=bool(run.meta.get("critic")),
        validity_md=run.validity_md,
        validity_source=run.validity_source,
        dev_curve=curve,
        dev_best_step=dev.get("best_step"),
        ladder_md=run.ladder_md,
        ladder_png=run.ladder_png,
    )
