"""Online labels for the critic's replay buffer: each step of a rollout labeled from its window's audit.

The same tier targets as offline relabeling, without content clusters or counterfactual examples (those need
the whole trajectory): a Write/Merge step takes the tier of the entry it produced — ``load_bearing`` if a
deletion of that entry flipped an answer, ``cited_non_flipping`` if it was cited on a correct answer,
``novel_uncited`` if retrieved, else ``inert``; a Noop is ``miss`` when its turn anchors a failed probe,
else ``skip``. u^RR is 1 when the produced entry was retrieved.

>>> from memprm.credit.types import AuditRecord, Step
>>> steps = [Step("op1", "write", "event", "D1:1"), Step("op2", "noop", "event", "D1:2")]
>>> recs = [AuditRecord("e1", "q1", 1.0, True, True, True, flips=True)]
>>> online_labels(steps, recs, {"e1": ("op1",)}, failed_anchor_turns={"D1:2"})
(array([1., 0.]), array([1, 0]))
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from memprm.credit.tiers import Tier, TierTargets, entry_outcomes
from memprm.credit.types import AuditRecord, Step


def online_labels(
    steps: Sequence[Step],
    records: Sequence[AuditRecord],
    chains: Mapping[str, Sequence[str]],
    failed_anchor_turns: Collection[str] = (),
    targets: TierTargets | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(u [T] float, u_rr [T] int) for the critic, one per step."""
    targets = targets or TierTargets()
    outcomes = entry_outcomes(records)
    entry_of = {op: e for e, ops in chains.items() for op in ops}
    anchors = set(failed_anchor_turns)
    u, rr = np.zeros(len(steps)), np.zeros(len(steps), dtype=np.int64)
    for t, s in enumerate(steps):
        if s.kind == "noop":
            u[t] = targets[Tier.MISS if s.turn_id in anchors else Tier.SKIP]
            continue
        out = outcomes.get(entry_of.get(s.op_id, ""))
        u[t] = targets[out.tier if out is not None else Tier.INERT]
        rr[t] = int(out is not None and out.retrieved)
    return u, rr
