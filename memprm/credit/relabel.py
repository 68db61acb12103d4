"""Offline hindsight relabeling of teacher trajectories into critic examples (paper §3.3).

Each teacher decision gets the utility tier its entry earned in hindsight (types and tiers in
:mod:`memprm.credit.tiers`), and counterfactual negatives (a Noop where a write bore load, a Write of an
uninformative turn, a forced Merge) are added beside it. Only decision-time information is ever rendered:
chains are rebuilt from the trajectory, never taken from the final bank. The rules are on
:func:`relabel_tiers`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memprm.credit.clusters import cluster_tiers
from memprm.credit.tiers import (
    EntryOutcome,
    LabeledExample,
    Neighbour,
    RelabelConfig,
    RelabelCounts,
    TeacherDecision,
    Tier,
)
from memprm.credit.types import VERBATIM_LAYER, CreditError


@dataclass(frozen=True)
class RelabelResult:
    examples: tuple[LabeledExample, ...]
    counts: RelabelCounts


def relabel_tiers(
    decisions: Sequence[TeacherDecision],
    outcomes: Mapping[str, EntryOutcome],
    embeddings: Mapping[str, Sequence[float] | np.ndarray],
    config: RelabelConfig | None = None,
    *,
    failed_anchor_turns: Collection[str] = (),
    initial_chains: Mapping[str, Sequence[str]] | None = None,
) -> RelabelResult:
    """Label one teacher trajectory (``decisions`` in time order) and add its counterfactual negatives.

    ``embeddings`` maps the op id of every Write and Merge to its content's embedding (any dimension).

    Labels, per teacher decision:

    - A Write or Merge takes the tier of the entry it wrote into (:attr:`EntryOutcome.tier`; an entry with no
      outcome was never retrieved: ``inert``). ``u_rr`` = 1 iff that entry was ever retrieved.
    - Content clusters (:mod:`memprm.credit.clusters`): the earliest writer of near-duplicate content gets the
      highest tier of any copy; later copies in other entries are capped at ``duplicate``.
    - A Noop is ``miss`` when its turn anchors a failed probe, else ``skip``; ``u_rr`` = 0.

    Counterfactual negatives (``u_rr`` = 0, every one counted in :class:`RelabelCounts`):

    - ``cf_noop_miss``: for every teacher Write whose final tier is ``load_bearing``, a Noop in the same
      context, labeled ``miss``. (Merges do not get one: credit is per entry, so a merge into a load-bearing
      entry need not carry the fact that flipped.)
    - ``cf_uninformative_write``: for every teacher Noop on an uninformative turn, a Write of the turn's own
      text into the same layer, labeled ``inert`` (skipped and counted when the turn text is empty).
    - ``cf_forced_merge``: for every teacher Write, a Merge of the same content into the nearest same-layer
      managed neighbour retrieved at decision time, labeled ``inert``. Skipped (and counted) when there is no
      such neighbour, or when the Write is a later copy (merging it would have been right).

    Decision-time information only. The target chain of a Merge (real or forced) is rebuilt from the earlier
    decisions of the trajectory (plus ``initial_chains``, the managed entries present before it began), never
    taken from the final bank. A managed neighbour that was not yet written, or whose text contains a version
    written at or after the decision, raises :class:`CreditError` (a leak).

    Worked example: a load-bearing Write, a later near-copy of it in another entry, and an uninformative Noop.

    >>> d = [TeacherDecision("op0", "write", "event", "D1:1", "Ana adopted Biscuit", content="Ana adopted a dog",
    ...                      target_entry_id="e1"),
    ...      TeacherDecision("op1", "write", "event", "D1:2", "Biscuit again", content="Ana has a dog",
    ...                      target_entry_id="e2", neighbours=(Neighbour("e1", "event", "Ana adopted a dog"),)),
    ...      TeacherDecision("op2", "noop", "event", "D1:3", "lol ok", turn_is_informative=False)]
    >>> out = {"e1": EntryOutcome("e1", True, False, False), "e2": EntryOutcome("e2", True, True, True)}
    >>> res = relabel_tiers(d, out, {"op0": [1.0, 0.0], "op1": [0.96, 0.28]})
    >>> [(x.source, x.tier.value, x.target) for x in res.examples]  # doctest: +NORMALIZE_WHITESPACE
    [('teacher', 'load_bearing', 1.0), ('cf_noop_miss', 'miss', 0.0), ('teacher', 'duplicate', 0.1),
     ('teacher', 'skip', 0.3), ('cf_uninformative_write', 'inert', 0.0)]
    >>> res.counts.forced_merge_skipped_copy, res.counts.earliest_promoted
    (1, 1)
    """
    config = config or RelabelConfig()
    targets = config.targets
    initial = {e: tuple(c) for e, c in (initial_chains or {}).items()}
    snapshots, forced_targets = _replay(decisions, initial)
    content_ops = [i for i, d in enumerate(decisions) if d.kind != "noop"]
    own = {i: _own_tier(decisions[i], outcomes) for i in content_ops}
    final, copies, promoted = cluster_tiers(decisions, content_ops, own, embeddings, config)
    anchors = set(failed_anchor_turns)
    counts = dict.fromkeys(RelabelCounts.__dataclass_fields__, 0)
    counts["copies_penalized"], counts["earliest_promoted"] = len(copies), promoted
    examples: list[LabeledExample] = []

    def emit(d: TeacherDecision, tier: Tier, u_rr: int, source: str, chain: tuple[str, ...], **kw) -> None:
        fields = dict(
            op_id=d.op_id,
            kind=d.kind,
            layer=d.layer,
            turn_id=d.turn_id,
            turn_text=d.turn_text,
            context_turns=d.context_turns,
            content=d.content,
            key=d.key,
            target_entry_id=d.target_entry_id,
            target_chain=chain,
            neighbours=d.neighbours,
            tier=tier,
            target=targets[tier],
            u_rr=u_rr,
            source=source,
            origin_op_id=d.op_id,
        )
        examples.append(LabeledExample(**(fields | kw)))
        counts[source] += 1

    for i, d in enumerate(decisions):
        if d.kind == "noop":
            emit(d, Tier.MISS if d.turn_id in anchors else Tier.SKIP, 0, "teacher", ())
            if not d.turn_is_informative and not d.turn_text.strip():
                counts["uninformative_write_skipped_empty_turn"] += 1
            elif not d.turn_is_informative:
                cf = dict(op_id=f"{d.op_id}:cf_write", kind="write", content=d.turn_text)
                emit(d, Tier.INERT, 0, "cf_uninformative_write", (), **cf)
            continue
        outcome = outcomes.get(d.target_entry_id)
        emit(d, final[i], int(bool(outcome and outcome.retrieved)), "teacher", snapshots.get(i, ()))
        if d.kind != "write":
            continue
        if final[i] is Tier.LOAD_BEARING:
            cf = dict(op_id=f"{d.op_id}:cf_noop", kind="noop", content=None, key="", target_entry_id=None)
            emit(d, Tier.MISS, 0, "cf_noop_miss", (), **cf)
        if i in copies:
            counts["forced_merge_skipped_copy"] += 1
        elif i not in forced_targets:
            counts["forced_merge_skipped_no_neighbour"] += 1
        else:
            entry_id, chain = forced_targets[i]
            cf = dict(op_id=f"{d.op_id}:cf_merge", kind="merge", key="", target_entry_id=entry_id)
            emit(d, Tier.INERT, 0, "cf_forced_merge", chain, **cf)
    return RelabelResult(tuple(examples), RelabelCounts(**counts))


def _own_tier(d: TeacherDecision, outcomes: Mapping[str, EntryOutcome]) -> Tier:
    outcome = outcomes.get(d.target_entry_id)
    if outcome is None:
        return Tier.INERT
    if outcome.entry_id != d.target_entry_id:
        raise CreditError(f"relabel_tiers: outcomes[{d.target_entry_id!r}] is for entry {outcome.entry_id!r}")
    return outcome.tier


def _replay(
    decisions: Sequence[TeacherDecision], initial: dict[str, tuple[str, ...]]
) -> tuple[dict[int, tuple[str, ...]], dict[int, tuple[str, tuple[str, ...]]]]:
    """Rebuild decision-time chains. Returns merge position → target chain before the merge, and Write
    position → (nearest same-layer managed neighbour, its chain then); raises on leaks and bad targets."""
    history: dict[str, list[tuple[int, str]]] = {e: [(-1, c) for c in chain] for e, chain in initial.items()}
    seen_ops: set[str] = set()
    for t, d in enumerate(decisions):
        if d.op_id in seen_ops:
            raise CreditError(f"relabel_tiers: decisions[{t}] repeats op_id {d.op_id!r}")
        seen_ops.add(d.op_id)
        if d.kind == "write":
            if d.target_entry_id in history:
                raise CreditError(
                    f"relabel_tiers: decisions[{t}] ({d.op_id}) writes entry {d.target_entry_id!r}, "
                    f"which already exists"
                )
            history[d.target_entry_id] = [(t, d.content)]
        elif d.kind == "merge":
            if d.target_entry_id not in history:
                raise CreditError(
                    f"relabel_tiers: decisions[{t}] ({d.op_id}) merges into entry "
                    f"{d.target_entry_id!r}, which does not exist before it"
                )
            history[d.target_entry_id].append((t, d.content))
    snapshots: dict[int, tuple[str, ...]] = {}
    forced: dict[int, tuple[str, tuple[str, ...]]] = {}
    for t, d in enumerate(decisions):
        for n in d.neighbours:
            if n.layer != VERBATIM_LAYER:
                _check_neighbour(t, d, n, history)
        if d.kind == "merge":
            snapshots[t] = tuple(c for pos, c in history[d.target_entry_id] if pos < t)
        elif d.kind == "write":
            for n in d.neighbours:
                if n.layer == d.layer:
                    forced[t] = (n.entry_id, tuple(c for pos, c in history[n.entry_id] if pos < t))
                    break
    return snapshots, forced


def _check_neighbour(
    t: int, d: TeacherDecision, n: Neighbour, history: dict[str, list[tuple[int, str]]]
) -> None:
    where = f"relabel_tiers: decisions[{t}] ({d.op_id}) neighbour {n.entry_id!r}"
    versions = history.get(n.entry_id)
    if versions is None:
        raise CreditError(f"{where} is written nowhere in the trajectory nor in initial_chains")
    if versions[0][0] >= t:
        raise CreditError(f"{where} is written later (decisions[{versions[0][0]}]): a leak from the future")
    then = {c for pos, c in versions if pos < t}
    later = [c for pos, c in versions if pos >= t and c not in then and c in n.text]
    if later:
        raise CreditError(
            f"{where}: its text contains {later[0]!r}, a version written at or after the decision"
        )
