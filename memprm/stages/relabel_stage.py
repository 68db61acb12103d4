"""Hindsight relabeling of teacher trajectories into critic training examples.

Per dialogue: every window's gate decisions in time order, the entry outcomes folded over every window's
audit (an entry written in window 1 may be load-bearing for a question of window 4), the failed probe anchors
of all windows, and one content embedding per Write/Merge op (for the content clusters) go to
:func:`memprm.credit.relabel_tiers`. Each labeled example is rendered with the same renderer the online
stage uses (:func:`memprm.env.render_ops.render_example`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from memprm.credit.relabel import relabel_tiers
from memprm.credit.tiers import LabeledExample, RelabelConfig, RelabelCounts, entry_outcomes
from memprm.env.render_ops import render_example
from memprm.env.trajectories import DialogueTrajectory
from memprm.memory.embedder import Embedder
from memprm.models.critic_data import CriticExample


@dataclass(frozen=True)
class RelabeledDialogue:
    dialogue_id: str
    labeled: tuple[LabeledExample, ...]
    examples: tuple[CriticExample, ...]
    counts: RelabelCounts


def relabel_trajectory(traj: DialogueTrajectory, embedder: Embedder, cfg: RelabelConfig) -> RelabeledDialogue:
    decisions = [d for w in traj.windows for d in w.decisions]
    records = [r for w in traj.windows for r in w.audit.records]
    failed = set().union(*(w.audit.failed_probe_anchors for w in traj.windows)) if traj.windows else set()
    content = [d for d in decisions if d.kind != "noop"]
    vecs = embedder.embed([d.content for d in content])  # [N_content, dim]
    embeddings = {d.op_id: v for d, v in zip(content, vecs, strict=True)}
    res = relabel_tiers(decisions, entry_outcomes(records), embeddings, cfg, failed_anchor_turns=failed)
    examples = tuple(
        CriticExample(
            text=render_example(ex),
            u=ex.target,
            u_rr=ex.u_rr,
            dialogue_id=traj.dialogue_id,
            kind=ex.source,
            op_id=ex.op_id,
            tier=str(ex.tier),
        )
        for ex in res.examples
    )
    return RelabeledDialogue(traj.dialogue_id, res.examples, examples, res.counts)


def relabel_all(
    trajs: Sequence[DialogueTrajectory], embedder: Embedder, cfg: RelabelConfig
) -> tuple[list[RelabeledDialogue], dict[str, int]]:
    """Relabel every trajectory; returns them and the summed counts (for the log and the report)."""
    out = [relabel_trajectory(t, embedder, cfg) for t in trajs]
    totals = {f.name: sum(getattr(r.counts, f.name) for r in out) for f in fields(RelabelCounts)}
    return out, totals
