"""The audit trail of a held-out evaluation, written by ``fit``'s test stage and read by ``memprm inspect``.

``test_audit.jsonl`` in the run folder holds one JSON object per line (format ``FORMAT`` version ``VERSION``):
a ``meta`` line (format, version, split, credit settings, whether a critic scored the gates), then one
``dialogue`` line per (manager, dialogue) with the final bank, its verbatim twins, every gate decision, every
question's retrieval, answer and verdict, the audit and the Eq. (6) credit. Nothing here re-runs a model when
read: the page is built from these lines alone. The line format: ``docs/design/audit_trail.md``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from memprm.credit.chains import ChainMode, cited_versions, propagate_chain_credit
from memprm.credit.presence import CreditConfig, CreditVariant, presence_credit
from memprm.env.evaluate import DialogueEval
from memprm.memory.bank import MANAGED_LAYERS

FORMAT, VERSION = "memprm.audit_trail", 1
#: the trail of the test split, in the run folder.
TEST_TRAIL = "test_audit.jsonl"

#: texts → (φ [N], p [N]), e.g. :meth:`memprm.models.critic.FrozenCritic.score`.
CriticScore = Callable[[list[str]], tuple[Sequence[float], Sequence[float]]]

_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """``text`` case-folded with runs of whitespace as one space (what "word for word" compares)."""
    return _SPACE.sub(" ", text).strip().casefold()


def verbatim_twins(ev: DialogueEval) -> dict[str, list[int]]:
    """Managed entry id → indices of its versions whose content equals a source turn's text or rendering."""
    turns = ev.dialogue.turn_index()
    out: dict[str, list[int]] = {}
    for e in ev.bank:
        if e.layer not in MANAGED_LAYERS:
            continue
        for i, v in enumerate(e.versions):
            sources = [turns[t] for t in v.source_turn_ids if t in turns]
            copies = {normalized(s.text) for s in sources} | {normalized(s.render) for s in sources}
            if normalized(v.content) in copies:
                out.setdefault(e.id, []).append(i)
    return out


def eq6_credit(ev: DialogueEval, credit: CreditConfig) -> dict[str, dict[str, float]] | None:
    """``{"entries": entry → u (Eq. 6, full variant), "ops": op → credit}`` over the managed entries; None
    without an audit."""
    if ev.audit is None:
        return None
    cfg = replace(credit, variant=CreditVariant.FULL)
    managed = {e.id for e in ev.bank if e.layer in MANAGED_LAYERS}
    records = [r for r in ev.audit.records if r.entry_id in managed]
    entries = presence_credit(records, cfg, entry_ids=sorted(managed))
    chains = {k: v for k, v in ev.audit.chains.items() if k in managed}
    read = cited_versions(records) if cfg.chain is ChainMode.CITED_VERSION else None
    ops = propagate_chain_credit(entries, chains, cfg.chain, evidence_versions=read)
    return {"entries": entries, "ops": ops}


def gate_steps(ev: DialogueEval, critic: CriticScore | None) -> list[dict[str, Any]]:
    """Every gate decision of the dialogue in order, with φ and p where a critic is given."""
    steps, inputs = [], []
    for window, play in zip((s.index for s in ev.dialogue.sessions), ev.plays, strict=True):
        for s, text in zip(play.steps, play.critic_inputs, strict=True):
            steps.append(
                {
                    "op_id": s.op_id,
                    "kind": s.kind,
                    "layer": s.layer,
                    "turn_id": s.turn_id,
                    "window": window,
                    "phi": None,
                    "p": None,
                }
            )
            inputs.append(text)
    if critic is not None and inputs:
        phi, p = critic(inputs)
        for step, a, b in zip(steps, phi, p, strict=True):
            step["phi"], step["p"] = round(float(a), 4), round(float(b), 4)
    return steps


def question_rows(ev: DialogueEval) -> list[dict[str, Any]]:
    """Every exam item: the question, its retrieved set, the answer, citations and verdict."""
    rows = []
    for r in ev.exam.results:
        q, a = r.item.question, r.answer
        rows.append(
            {
                "id": q.id,
                "text": q.text,
                "category": q.category,
                "gold": q.answer,
                "evidence": list(q.evidence),
                "weight": r.item.weight,
                "hits": [
                    {
                        "entry_id": h.entry.id,
                        "layer": h.layer,
                        "score": round(float(h.score), 4),
                        "version": h.best_version,
                    }
                    for h in r.retrieval.hits
                ],
                "answer": a.answer,
                "cited": list(a.cited),
                "dropped_citations": list(a.dropped_citations),
                "context_tokens": a.context_tokens,
                "correct": bool(r.correct),
                "score": float(r.verdict.score),
                "failed": bool(getattr(a, "failed", False) or getattr(r.verdict, "failed", False)),
            }
        )
    return rows


def dialogue_line(
    ev: DialogueEval, manager: str, credit: CreditConfig, critic: CriticScore | None = None
) -> dict[str, Any]:
    """The trail line of one (manager, dialogue) evaluation (format: ``docs/design/audit_trail.md``)."""
    bank = ev.bank.to_dict()
    bank.pop("version_log", None)
    audit = None
    if ev.audit is not None:
        audit = {"records": [asdict(r) for r in ev.audit.records], "counts": asdict(ev.audit.counts)}
    return {
        "kind": "dialogue",
        "manager": manager,
        "dialogue": ev.dialogue.id,
        "accuracy": ev.exam.accuracy,
        "bank": bank,
        "twins": verbatim_twins(ev),
        "steps": gate_steps(ev, critic),
        "questions": question_rows(ev),
        "audit": audit,
        "credit": eq6_credit(ev, credit),
    }


@dataclass
class TrailRecorder:
    """Collects the trail lines of several managers' evaluations (``recorder.observer(name)`` is an
    ``on_dialogue`` callback for :func:`memprm.env.evaluate.evaluate_manager`); :meth:`write` writes them."""

    credit: CreditConfig = field(default_factory=CreditConfig)
    critic: CriticScore | None = None
    split: str = "test"
    lines: list[dict[str, Any]] = field(default_factory=list)

    def observer(self, manager: str) -> Callable[[DialogueEval], None]:
        def record(ev: DialogueEval) -> None:
            self.lines.append(dialogue_line(ev, manager, self.credit, self.critic))

        return record

    def meta(self) -> dict[str, Any]:
        credit = asdict(self.credit)
        credit["variant"], credit["chain"] = str(self.credit.variant), str(self.credit.chain)
        managers = list(dict.fromkeys(line["manager"] for line in self.lines))
        return {
            "kind": "meta",
            "format": FORMAT,
            "version": VERSION,
            "split": self.split,
            "credit": credit,
            "critic": self.critic is not None,
            "managers": managers,
        }

    def write(self, path: str | Path) -> Path:
        """Write the meta line and every dialogue line to ``path`` (a temporary file renamed into place)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for line in (self.meta(), *self.lines):
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
        return path
