"""The chat-completions wire format and the retry timing, as pure functions the client calls.

- :func:`parse_chat_body`: a response body -> its content, token counts and finish reason (or ``ValueError``);
- :func:`parse_json_object`: the JSON object in a model reply (whole, fenced or embedded in prose);
- :func:`retry_after_s` and :func:`backoff_s`: how long to sleep before a transport retry.

The retry policy itself is documented once, in :mod:`memprm.llm.client`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any


def parse_chat_body(body: str) -> tuple[str, int, int, str | None]:
    """``(content, prompt_tokens, completion_tokens, finish_reason)`` of a chat-completions response body.

    Raises ``ValueError`` naming what is wrong when the body is not a chat completion. ``usage`` may be absent
    (some servers omit it): the token counts are then 0.
    """
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"response body is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise ValueError(f"response body is JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("response has no choices[0].message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"choices[0].message.content is {type(content).__name__}, not a string")
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError("response usage is not an object")
    tokens = []
    for name in ("prompt_tokens", "completion_tokens"):
        n = usage.get(name, 0)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"usage.{name} is {n!r}, not a non-negative integer")
        tokens.append(n)
    finish = choices[0].get("finish_reason")
    return content or "", tokens[0], tokens[1], finish if isinstance(finish, str) else None


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model reply: the whole text, a ```json fenced block, or the outermost ``{...}``."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0].strip()
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError as exc:
        lo, hi = stripped.find("{"), stripped.rfind("}")
        if not 0 <= lo < hi:
            raise ValueError("the reply contains no JSON object") from None
        try:
            obj = json.loads(stripped[lo : hi + 1])
        except json.JSONDecodeError:
            raise ValueError(f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"the reply is a JSON {type(obj).__name__}, not an object")
    return obj


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds asked for by ``Retry-After-Ms`` or ``Retry-After`` (seconds or an HTTP date); None if absent."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            v = float(ms) / 1000.0
            if math.isfinite(v) and v >= 0:
                return v
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        v = float(ra)
    except ValueError:
        try:
            v = parsedate_to_datetime(ra).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, v) if math.isfinite(v) else None


def backoff_s(retry: int, base: float, cap: float, retry_after: float | None, u: float) -> float:
    """Sleep before transport retry ``retry`` (0-based): ``Retry-After`` if given, else jittered exponential.

    ``u`` in [0, 1) is the jitter draw: ``min(cap, base·2^retry) · (0.5 + 0.5·u)``.
    """
    if retry_after is not None:
        return min(cap, retry_after)
    return min(cap, base * 2.0**retry) * (0.5 + 0.5 * u)
