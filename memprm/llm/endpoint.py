"""An OpenAI-compatible endpoint's settings (:class:`LLMConfig`), what one question to it ends in (a
:class:`Completion` or a :class:`Failure`), and the errors that stop a run. The transport that uses them, and
its retry and failure policy, is :mod:`memprm.llm.client`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: the placeholder key sent to servers that need none (vLLM's convention).
NO_KEY = "EMPTY"
MESSAGE_ROLES = ("system", "user", "assistant")


class LLMConfigError(ValueError):
    """The client cannot be built as configured (e.g. the API-key variable is not set)."""


class LLMStop(RuntimeError):
    """The run cannot go on with this endpoint; the message is one line naming the endpoint and the cause
    (the CLI prints it without a traceback)."""


class LLMRequestError(LLMStop):
    """The server refused the request for a reason retrying cannot fix and that fails every request."""


class LLMAuthError(LLMRequestError):
    """HTTP 401 / 403: the API key is missing, wrong or lacks access to the model."""


@dataclass(frozen=True)
class LLMConfig:
    """One OpenAI-compatible endpoint and how to talk to it."""

    #: the API root, e.g. ``https://api.deepseek.com/v1`` or ``http://127.0.0.1:8000/v1``; not in the cache key.
    base_url: str
    #: the model id sent to the server, e.g. ``deepseek-chat``; part of the cache key.
    model: str
    #: the pinned model version (a checkpoint date or hash); part of the cache key, so bump it when the served
    #: weights change and old answers stop being reused.
    model_version: str
    #: name of the environment variable holding the API key; ``None`` or ``""`` for a server that needs no key
    #: (the placeholder ``EMPTY`` is sent).
    api_key_env: str | None = "OPENAI_API_KEY"
    #: sampling temperature; 0 makes answers (nearly) deterministic and the cache meaningful.
    temperature: float = 0.0
    #: cap on completion tokens; ``None`` leaves it to the server. Part of the cache key.
    max_tokens: int | None = 1024
    #: per-request timeout in seconds (connect, read, write each), cut to what is left of the question's time.
    timeout_s: float = 30.0
    #: transport retries after the first attempt (429, 5xx, timeouts, connection errors, unparseable bodies).
    max_retries: int = 3
    #: first backoff step in seconds; doubles per retry.
    backoff_base_s: float = 0.5
    #: cap on one backoff sleep, ``Retry-After`` included.
    backoff_max_s: float = 10.0
    #: most seconds one question may take in total: every attempt, backoff sleep and format re-ask (see
    #: "Bounded waiting" in ``docs/design/llm_client.md``).
    question_timeout_s: float = 60.0
    #: most requests of one client in flight at once.
    max_concurrency: int = 8
    #: re-asks after a reply that is not the expected JSON, before the question is recorded as a failure.
    format_retries: int = 2
    #: sqlite file of the response cache (shared by processes and roles); ``None`` = no cache.
    cache_path: str | None = None

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"llm.base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model.strip():
            raise ValueError("llm.model must be a non-empty model id")
        if not self.model_version.strip():
            raise ValueError("llm.model_version must be non-empty (it pins the model in the cache key)")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"llm.temperature must be in [0, 2], got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"llm.max_tokens must be >= 1 or null, got {self.max_tokens}")
        if not self.timeout_s > 0:
            raise ValueError(f"llm.timeout_s must be > 0, got {self.timeout_s}")
        if not self.question_timeout_s > 0:
            raise ValueError(f"llm.question_timeout_s must be > 0, got {self.question_timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"llm.max_retries must be >= 0, got {self.max_retries}")
        if self.backoff_base_s < 0 or self.backoff_max_s < self.backoff_base_s:
            raise ValueError(
                f"llm.backoff_base_s must be >= 0 and <= llm.backoff_max_s, got {self.backoff_base_s} and "
                f"{self.backoff_max_s}"
            )
        if self.max_concurrency < 1:
            raise ValueError(f"llm.max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.format_retries < 0:
            raise ValueError(f"llm.format_retries must be >= 0, got {self.format_retries}")
        if self.cache_path is not None and not self.cache_path.strip():
            raise ValueError("llm.cache_path must be a file path or null, got an empty string")

    def sampling_params(self) -> dict[str, Any]:
        """The sampling parameters sent with every request (and hashed into the cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Completion:
    text: str  # the reply's content ("" when the server sent null)
    tokens_in: int  # prompt tokens reported by the server (0 when it reported no usage)
    tokens_out: int  # completion tokens reported by the server
    cached: bool  # answered from the on-disk cache
    finish_reason: str | None = None  # "stop", "length", ... as reported


@dataclass(frozen=True)
class Failure:
    """A question the model could not answer usably; the caller scores it as a wrong answer."""

    reason: str
    raw: str | None  # the last reply's text (format failures), None when no reply arrived
    #: ``transport`` (retries or time ran out), ``format`` (re-asks ran out), ``request`` (a 4xx for this request)
    kind: Literal["transport", "format", "request"] = "format"


def read_key(cfg: LLMConfig, role: str) -> str:
    if not cfg.api_key_env:
        return NO_KEY
    key = os.environ.get(cfg.api_key_env)
    if not key:
        raise LLMConfigError(
            f"LLM role {role!r}: environment variable {cfg.api_key_env} is not set; it must hold the API key "
            f"for {cfg.base_url} (set llm.api_key_env to null for a server that needs no key)"
        )
    return key


def check_messages(messages: Sequence[Mapping[str, str]], role: str) -> list[dict[str, str]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValueError(
            f"LLM role {role!r}: messages must be a non-empty list of {{role, content}} mappings"
        )
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or set(m) != {"role", "content"}:
            keys = sorted(m) if isinstance(m, Mapping) else type(m).__name__
            raise ValueError(
                f"LLM role {role!r}: messages[{i}] must have exactly keys role, content; got {keys}"
            )
        if m["role"] not in MESSAGE_ROLES:
            raise ValueError(
                f"LLM role {role!r}: messages[{i}].role must be one of {MESSAGE_ROLES}, got {m['role']!r}"
            )
        if not isinstance(m["content"], str):
            raise ValueError(f"LLM role {role!r}: messages[{i}].content must be a string")
        out.append({"role": m["role"], "content": m["content"]})
    return out


DEFAULT_MAX_FAILURE_SHARE = 0.2


def check_max_failure_share(value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"llm.max_failure_share must be in [0, 1], got {value}")


@dataclass(frozen=True)
class LLMRoles:
    """Endpoints of the roles whose kind is ``llm`` (null for offline roles)."""

    reader: LLMConfig | None = None
    judge: LLMConfig | None = None
    probes: LLMConfig | None = None
    teacher: LLMConfig | None = None
    notes: LLMConfig | None = None
    #: stop the run when more than this share of one batch's LLM questions fail (a GRPO batch, a teacher or
    #: evaluated dialogue; :mod:`memprm.llm.failures`), naming the endpoint and the last error.
    max_failure_share: float = DEFAULT_MAX_FAILURE_SHARE

    def __post_init__(self) -> None:
        check_max_failure_share(self.max_failure_share)
