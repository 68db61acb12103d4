"""The decision-time rendering of an operation: the critic's input, offline and online alike.

Offline, labeled examples (:class:`memprm.credit.tiers.LabeledExample`) are rendered; online, the gate's
observation and the chosen action are. Both go through :func:`render_operation`, so the critic sees exactly the
same text layout in both stages. Only decision-time information appears: the turn, its context, the operation,
the target entry's chain as it was, and the neighbours retrieved then.
"""

from __future__ import annotations

from collections.abc import Sequence

from memprm.credit.tiers import LabeledExample, Neighbour
from memprm.env.gates import Action, Observation
from memprm.memory.bank import MemoryBank


def render_operation(
    kind: str,
    layer: str,
    content: str | None,
    key: str,
    target_chain: Sequence[str],
    turn_text: str,
    context: Sequence[str],
    neighbours: Sequence[Neighbour],
) -> str:
    # The operation comes last: over-long renderings are cut from the left, keeping the decision itself.
    lines = []
    if neighbours:
        lines.append("neighbours: " + " || ".join(f"{n.entry_id}: {n.text}" for n in neighbours))
    if context:
        lines.append("context: " + " / ".join(context))
    lines.append(f"turn: {turn_text}")
    if target_chain:
        lines.append("target chain: " + " | ".join(target_chain))
    lines.append(f"operation: {kind.upper()} layer: {layer}" + (f" key: {key}" if key else ""))
    if content:
        lines.append(f"content: {content}")
    return "\n".join(lines)


def render_example(ex: LabeledExample) -> str:
    return render_operation(
        ex.kind, ex.layer, ex.content, ex.key, ex.target_chain, ex.turn_text, ex.context_turns, ex.neighbours
    )


def render_gate(obs: Observation, action: Action, bank: MemoryBank) -> str:
    """Render ``action`` at ``obs`` with ``bank`` as it is *before* the action is applied."""
    chain: tuple[str, ...] = ()
    if action.kind == "merge" and action.entry_id in bank:
        chain = tuple(v.content for v in bank.entry(action.entry_id).versions)
    content = action.content if action.kind != "noop" else None
    return render_operation(
        action.kind, obs.layer, content, action.key, chain, obs.turn.render, obs.context, obs.neighbours
    )
