"""Rendering retrieved memory as reader context, and counting context tokens.

Format (one block per entry, path by path, every version with its date):

    [e00003 | event | key: pet]
      v1 (2023-05-08): Ana adopted a dog named Biscuit
      v2 (2023-06-01): Biscuit is a beagle

``approx_tokens`` counts words and punctuation marks (``\\w+|[^\\w\\s]``). It is the documented approximation
used when the reader's own tokenizer is unknown (the offline reader); BPE tokenizers give somewhat more.
LLM readers report the endpoint's own ``prompt_tokens`` instead.
"""

from __future__ import annotations

import re

from memprm.memory.retriever import Retrieval

_TOKEN = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def render_retrieval(retrieval: Retrieval) -> str:
    blocks = []
    for hit in retrieval.hits:
        e = hit.entry
        head = f"[{e.id} | {e.layer}" + (f" | key: {e.key}" if e.key and e.layer != "verbatim" else "") + "]"
        lines = [head]
        for i, v in enumerate(e.versions, start=1):
            date = (v.timestamp or "undated")[:10]
            lines.append(f"  v{i} ({date}): {v.content}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks) if blocks else "(memory is empty)"
