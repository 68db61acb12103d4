"""From entry credit to operations and steps: version-chain propagation, step credit, the coverage penalty.

An entry's credit goes, un-normalized, to every operation on its version chain (DESIGN.md, "Audit and
credit"); the variants divide it by the chain length or give it only to the versions the reader's evidence
came from (:func:`cited_versions`). Noop steps carry no chain credit; their measured signal is the coverage
penalty.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from memprm.credit.types import AuditRecord, CreditError, Step


class ChainMode(enum.StrEnum):
    UNNORMALIZED = "unnormalized"
    NORMALIZED = "normalized"
    CITED_VERSION = "cited_version"


def propagate_chain_credit(
    entry_credit: Mapping[str, float],
    chains: Mapping[str, Sequence[str]],
    mode: ChainMode | str = ChainMode.UNNORMALIZED,
    *,
    evidence_versions: Mapping[str, Collection[int]] | None = None,
) -> dict[str, float]:
    """Operation id → credit, for every op on every chain in ``chains`` (entry id → op ids, oldest first).

    - ``unnormalized`` (default): every op on entry i's chain gets u_i.
    - ``normalized``: every op gets u_i / len(chain).
    - ``cited_version``: only the ops that wrote entry i's evidence versions get u_i, the others 0. The
      evidence versions are ``evidence_versions[i]`` (version indices the reader's chosen evidence came
      from) when given for i, else the newest version (the op that last wrote the entry the reader saw).

    Entries in ``chains`` without credit get 0 (never retrieved). A credited entry missing from ``chains``, an
    empty chain, an op on two chains, or an evidence index outside the chain raises :class:`CreditError`.

    >>> chains = {"e1": ("op1", "op3"), "e2": ("op2",)}
    >>> propagate_chain_credit({"e1": 1.0, "e2": 0.6}, chains)
    {'op1': 1.0, 'op3': 1.0, 'op2': 0.6}
    >>> propagate_chain_credit({"e1": 1.0}, chains, "normalized")
    {'op1': 0.5, 'op3': 0.5, 'op2': 0.0}
    >>> propagate_chain_credit({"e1": 1.0}, chains, "cited_version")
    {'op1': 0.0, 'op3': 1.0, 'op2': 0.0}
    >>> propagate_chain_credit({"e1": 1.0}, chains, "cited_version", evidence_versions={"e1": {0}})
    {'op1': 1.0, 'op3': 0.0, 'op2': 0.0}
    """
    mode = ChainMode(mode)
    evidence_versions = evidence_versions or {}
    missing = sorted(set(entry_credit) - set(chains))
    if missing:
        raise CreditError(f"propagate_chain_credit: credited entries {missing} have no version chain")
    unknown = sorted(set(evidence_versions) - set(chains))
    if unknown:
        raise CreditError(f"propagate_chain_credit: evidence_versions names entries {unknown} with no chain")
    out: dict[str, float] = {}
    for entry_id, ops in chains.items():
        if not ops:
            raise CreditError(f"propagate_chain_credit: chains[{entry_id!r}] is empty")
        u = float(entry_credit.get(entry_id, 0.0))
        if mode is ChainMode.UNNORMALIZED:
            shares = [u] * len(ops)
        elif mode is ChainMode.NORMALIZED:
            shares = [u / len(ops)] * len(ops)
        else:
            chosen = set(evidence_versions.get(entry_id) or {len(ops) - 1})
            bad = sorted(v for v in chosen if not 0 <= v < len(ops))
            if bad:
                raise CreditError(
                    f"propagate_chain_credit: evidence_versions[{entry_id!r}] = {bad} outside "
                    f"the chain's {len(ops)} versions"
                )
            shares = [u if v in chosen else 0.0 for v in range(len(ops))]
        for op_id, share in zip(ops, shares, strict=True):
            if op_id in out:
                raise CreditError(
                    f"propagate_chain_credit: op {op_id!r} is on two chains (second: {entry_id!r})"
                )
            out[op_id] = share
    return out


def cited_versions(records: Iterable[AuditRecord]) -> dict[str, frozenset[int]]:
    """``evidence_versions`` for the ``cited_version`` mode: entry id → the versions its evidence came from.

    An entry's evidence versions are those read (``AuditRecord.versions``) on the correctly answered questions
    that cited it: the answers its positive credit comes from. An entry cited only on wrong answers takes the
    versions read there, where its toxicity comes from. An entry never cited, or whose records carry no
    versions (audits written before the field), is left out and :func:`propagate_chain_credit` gives it the
    default, its newest version.

    >>> rs = [AuditRecord("e1", "q1", 1.0, True, True, True, versions=(0,)),
    ...       AuditRecord("e1", "q2", 1.0, False, True, True, versions=(2,)),
    ...       AuditRecord("e2", "q2", 1.0, False, True, True, versions=(1,)),
    ...       AuditRecord("e3", "q1", 1.0, True, True, False)]
    >>> {k: sorted(v) for k, v in cited_versions(rs).items()}
    {'e1': [0], 'e2': [1]}
    """
    right: dict[str, set[int]] = {}
    wrong: dict[str, set[int]] = {}
    for r in records:
        if r.cited and r.versions:
            (right if r.correct else wrong).setdefault(r.entry_id, set()).update(r.versions)
    return {e: frozenset(right.get(e) or wrong[e]) for e in dict.fromkeys([*right, *wrong])}


def step_credit(steps: Sequence[Step], op_credit: Mapping[str, float]) -> np.ndarray:
    """``u_t`` ``[T]`` for the episode's gate steps: a Write/Merge step gets its op's credit, a Noop 0.

    A Write/Merge step whose op is missing from ``op_credit``, or a Noop op that has credit, raises.

    >>> s = [Step("op1", "write", "event", "D1:1"), Step("op2", "noop", "profile", "D1:1")]
    >>> step_credit(s, {"op1": 0.6, "op0": 1.0}).tolist()
    [0.6, 0.0]
    """
    out = np.zeros(len(steps), dtype=np.float64)  # [T]
    for t, s in enumerate(steps):
        if s.kind == "noop":
            if s.op_id in op_credit:
                raise CreditError(f"step_credit: steps[{t}] is a Noop but op {s.op_id!r} has chain credit")
        elif s.op_id not in op_credit:
            raise CreditError(f"step_credit: steps[{t}] ({s.kind} op {s.op_id!r}) is on no version chain")
        else:
            out[t] = op_credit[s.op_id]
    return out


def chain_step_credit(
    steps: Sequence[Step],
    entry_credit: Mapping[str, float],
    records: Iterable[AuditRecord],
    chains: Mapping[str, Sequence[str]],
    mode: ChainMode | str,
) -> np.ndarray:
    """``u_t`` ``[T]`` of an episode's steps: ``entry_credit`` propagated along ``chains`` under ``mode`` (the
    ``cited_version`` mode reads the versions the audit ``records`` say the reader used), then per step."""
    read = cited_versions(records) if ChainMode(mode) is ChainMode.CITED_VERSION else None
    return step_credit(steps, propagate_chain_credit(entry_credit, chains, mode, evidence_versions=read))


def coverage_penalty(
    steps: Sequence[Step], failed_anchor_turns: Collection[str], *, layers: Collection[str] | None = None
) -> np.ndarray:
    """``miss_t`` ``[T]`` ∈ {0, 1}: 1 for a Noop gate at a turn that anchors a failed probe.

    Every Noop gate of that turn is penalized (one per managed layer) unless ``layers`` restricts the
    penalty to gates of those layers. Write and Merge gates never get a miss.

    >>> s = [Step("op1", "noop", "event", "D1:3"), Step("op2", "write", "profile", "D1:3"),
    ...      Step("op3", "noop", "event", "D1:4")]
    >>> coverage_penalty(s, {"D1:3"}).tolist()
    [1.0, 0.0, 0.0]
    """
    anchors = set(failed_anchor_turns)
    allowed = None if layers is None else set(layers)
    out = np.zeros(len(steps), dtype=np.float64)  # [T]
    for t, s in enumerate(steps):
        if s.kind == "noop" and s.turn_id in anchors and (allowed is None or s.layer in allowed):
            out[t] = 1.0
    return out
