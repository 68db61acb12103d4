"""Controlled probes: the three gates a source-anchored probe must pass before it enters a quiz.

A probe names its anchor turn (``probe.evidence == (anchor,)``). Against a *reference bank* — the verbatim
layer up to the window's end, which every policy shares, so the gates do not depend on the rollout — the probe:

1. is answered correctly with the anchor's memory present;
2. is answered wrongly closed-book (empty memory);
3. is answered wrongly after the anchor's entries (every entry with a version sourced from the anchor turn)
   are removed.

Gates 2 and 3 make the probe a controlled measurement: the answer comes from the anchor's memory and nowhere
else (not from world knowledge, not from another turn). :func:`gate_probes` runs them and reports pass rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memprm.data.records import Question
from memprm.env.exam import ReaderCache
from memprm.llm.failures import LEDGER
from memprm.memory.bank import MemoryBank
from memprm.memory.retriever import Retrieval, Retriever


@dataclass(frozen=True)
class GateReport:
    kept: tuple[Question, ...]
    n_probes: int
    gate1: int  # right with memory
    gate2: int  # wrong closed-book
    gate3: int  # wrong without the anchor's entries
    anchor_removal_errors: int  # among gate-1 passes, wrong without the anchor
    unknown_anchor: int  # probes whose anchor has no entry in the reference bank (dropped)
    failed: int = 0  # probes with a failed gate answer (dropped, in no gate count)

    def rates(self) -> dict[str, float]:
        n = max(self.n_probes - self.failed, 1)
        return {
            "failed_share": self.failed / max(self.n_probes, 1),
            "gate1_pass": self.gate1 / n,
            "gate2_pass": self.gate2 / n,
            "gate3_pass": self.gate3 / n,
            "all_gates_pass": len(self.kept) / n,
            "anchor_removal_error_rate": self.anchor_removal_errors / max(self.gate1, 1),
        }


def anchor_entries(bank: MemoryBank, anchor: str) -> list[str]:
    """The anchor's entries: every entry of ``bank`` with a version sourced from the turn ``anchor``."""
    return [e.id for e in bank if any(anchor in v.source_turn_ids for v in e.versions)]


def gate_probes(
    probes: Sequence[Question], reference: MemoryBank, cache: ReaderCache, retriever: Retriever
) -> GateReport:
    """Run the three gates on every probe against the ``reference`` bank; keep the probes that pass all three.

    Pass rates of each gate and the anchor-removal error rate (of probes passing gate 1, the share answered
    wrongly without the anchor) are reported (:meth:`GateReport.rates`). A probe whose anchor has no entry in
    the reference bank is dropped (``unknown_anchor``).

    A probe for which any of the three answers failed (reader or judge call; :mod:`memprm.env.exam`) is
    dropped and counted in ``failed``: a failed closed-book answer is no "wrong closed-book", so it can pass
    no gate. Rates are over the probes whose three answers all came back (``n_probes - failed``). The 3·n
    answers are sent together (:meth:`ReaderCache.answer_many`, concurrently for LLM roles).
    """
    kept, g1, g2, g3, are, unknown, failed = [], 0, 0, 0, 0, 0, 0
    asked, asks = [], []
    for p in probes:
        if len(p.evidence) != 1:
            raise ValueError(f"probe {p.id!r} must name exactly one anchor turn, has evidence {p.evidence}")
        anchors = anchor_entries(reference, p.evidence[0])
        if not anchors:
            unknown += 1
            continue
        asked.append(p)
        asks += [
            (p, retriever.retrieve(reference, p.text)),
            (p, Retrieval(p.text, ())),
            (p, retriever.retrieve(reference.without(anchors), p.text)),
        ]
    answered = cache.answer_many(asks)
    for i, p in enumerate(asked):
        three = answered[3 * i : 3 * i + 3]
        if any(a.failed or v.failed for a, v in three):
            failed += 1
            continue
        ok_with, ok_closed, ok_without = (v.correct for _, v in three)
        g1 += ok_with
        g2 += not ok_closed
        g3 += not ok_without
        are += ok_with and not ok_without
        if ok_with and not ok_closed and not ok_without:
            kept.append(p)
    LEDGER.add(gate_probes_failed=failed)
    return GateReport(tuple(kept), len(probes), g1, g2, g3, are, unknown, failed)
