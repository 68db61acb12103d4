"""The strict JSON operation format shared by the LLM teacher and the causal-LM policy, and the gate prompt.

A manager answers a gate with exactly one JSON object:

    {"op": "write", "content": "<memory text>", "key": "<short topic key>"}
    {"op": "merge", "entry_id": "<id of a shown neighbour>", "content": "<the new version>"}
    {"op": "noop"}

``parse_operation`` validates it against the gate: a merge must target one of the neighbours shown, content
must be non-empty, no other keys matter. Anything else is invalid → ``None`` (callers apply a Noop and count).
"""

from __future__ import annotations

import json
import re
from importlib import resources

from memprm.env.gates import Action, Observation

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_operation(text: str, obs: Observation) -> Action | None:
    """The action in ``text`` (a JSON object, possibly fenced or surrounded by prose), or None if invalid."""
    m = _OBJECT.search(text or "")
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    return validate_operation(obj, obs)


def validate_operation(obj: object, obs: Observation) -> Action | None:
    if not isinstance(obj, dict):
        return None
    op = obj.get("op")
    if op == "noop":
        return Action.noop()
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    if op == "write":
        key = obj.get("key", "")
        return Action("write", content.strip(), key if isinstance(key, str) else "")
    if op == "merge":
        target = obj.get("entry_id")
        if target not in {n.entry_id for n in obs.neighbours}:
            return None
        return Action("merge", content.strip(), entry_id=target)
    return None


def format_operation(action: Action) -> str:
    """The canonical JSON text of ``action`` (SFT targets of the causal policy)."""
    if action.kind == "noop":
        return json.dumps({"op": "noop"})
    if action.kind == "write":
        return json.dumps({"op": "write", "content": action.content, "key": action.key}, ensure_ascii=False)
    return json.dumps(
        {"op": "merge", "entry_id": action.entry_id, "content": action.content}, ensure_ascii=False
    )


def gate_prompt(obs: Observation) -> str:
    """The prompt a generative manager sees at a gate (template: ``memprm/prompts/manager.txt``)."""
    template = resources.files("memprm.prompts").joinpath("manager.txt").read_text()
    neighbours = "\n".join(f"[{n.entry_id}] {n.text}" for n in obs.neighbours) or "(none)"
    context = "\n".join(obs.context) or "(start of session)"
    date = (obs.timestamp or "unknown")[:10]
    return template.format(
        layer=obs.layer, date=date, context=context, turn=obs.turn.render, neighbours=neighbours
    )
