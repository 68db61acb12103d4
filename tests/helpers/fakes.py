"""Test doubles shared by the test files (not collected: the name does not start with test_)."""

from __future__ import annotations

from memprm.llm.endpoint import Failure


class FakeClient:
    """Stands in for ``LLMClient.complete_json``: canned replies (dicts, or a ``Failure``) validated as the
    real client does; records every conversation sent."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.messages: list[list[dict]] = []

    def complete_json(self, messages, validate):
        self.messages.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Failure):
            return reply
        try:
            return validate(reply)
        except (ValueError, KeyError, TypeError) as exc:
            return Failure(reason=str(exc), raw=str(reply))
