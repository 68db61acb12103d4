"""Content clusters of a teacher trajectory: near-duplicate content ops share one tier (paper §3.3).

Two content ops (Write/Merge) on *different* entries are copies when the cosine of their content embeddings
is >= ``RelabelConfig.cluster_threshold``, or, with ``same_key_is_copy``, when both are Writes with the same
layer and non-empty key (a contradictory pair counts as a copy: the second should have been a Merge of the
first). Layers are not separated: an event and a profile entry with the same content are copies. Clusters are
the connected components of that relation (single linkage). Within a cluster:

- the earliest member gets the highest tier of any member;
- a later member on another entry than the earliest is a copy: capped at ``duplicate`` (an inert copy stays
  inert, the lower tier);
- later members on the earliest's own entry are versions of it and keep their own tier.

Ops in one entry are never copies of each other, so an update merged into its own entry is not penalized.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memprm.credit.tiers import ENTRY_TIERS, RelabelConfig, TeacherDecision, Tier
from memprm.credit.types import CreditError

_RANK = {t: k for k, t in enumerate(ENTRY_TIERS)}


def cluster_tiers(
    decisions: Sequence[TeacherDecision],
    content_ops: Sequence[int],
    own: Mapping[int, Tier],
    embeddings: Mapping[str, Sequence[float] | np.ndarray],
    config: RelabelConfig,
) -> tuple[dict[int, Tier], set[int], int]:
    """Final tier per content-op position, the positions of later copies, and how many earliest writers rose.

    ``content_ops`` are the positions of the Writes and Merges in ``decisions``, ``own[i]`` their tier from
    their entry's outcome, ``embeddings`` op id → content vector.

    >>> d = [TeacherDecision("a", "write", "event", "t1", "", content="x", target_entry_id="e1"),
    ...      TeacherDecision("b", "write", "event", "t2", "", content="x!", target_entry_id="e2")]
    >>> final, copies, promoted = cluster_tiers(d, [0, 1], {0: Tier.INERT, 1: Tier.LOAD_BEARING},
    ...                                         {"a": [1, 0], "b": [1, 0.1]}, RelabelConfig())
    >>> [final[0].value, final[1].value], copies, promoted
    (['load_bearing', 'duplicate'], {1}, 1)
    """
    final = dict(own)
    if not content_ops:
        return final, set(), 0
    rows = []
    for i in content_ops:
        op_id = decisions[i].op_id
        if op_id not in embeddings:
            raise CreditError(
                f"relabel_tiers: embeddings has no vector for content op {op_id!r} (decisions[{i}])"
            )
        v = np.asarray(embeddings[op_id], dtype=np.float64)
        norm = float(np.linalg.norm(v)) if v.ndim == 1 and np.all(np.isfinite(v)) else 0.0
        if norm == 0:
            raise CreditError(f"relabel_tiers: embeddings[{op_id!r}] must be a finite non-zero 1-D vector")
        rows.append(v / norm)
    unit = np.stack(rows)  # [N, d]
    cos = unit @ unit.T  # [N, N]
    parent = list(range(len(content_ops)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, ia in enumerate(content_ops):
        da = decisions[ia]
        for b in range(a + 1, len(content_ops)):
            db = decisions[content_ops[b]]
            if da.target_entry_id == db.target_entry_id:
                continue
            same_key = config.same_key_is_copy and da.kind == db.kind == "write" and da.key != ""
            same_key = same_key and (da.key, da.layer) == (db.key, db.layer)
            if same_key or cos[a, b] >= config.cluster_threshold:
                parent[find(b)] = find(a)
    clusters: dict[int, list[int]] = {}
    for k, i in enumerate(content_ops):
        clusters.setdefault(find(k), []).append(i)
    copies: set[int] = set()
    promoted = 0
    for members in clusters.values():
        if len(members) < 2:
            continue
        first = min(members)
        best = max((own[i] for i in members), key=_RANK.__getitem__)
        promoted += _RANK[best] > _RANK[own[first]]
        final[first] = best
        for i in members:
            if decisions[i].target_entry_id != decisions[first].target_entry_id:
                copies.add(i)
                final[i] = min(own[i], Tier.DUPLICATE, key=_RANK.__getitem__)
    return final, copies, promoted
