"""One client for any OpenAI-compatible chat-completions endpoint (DeepSeek's API, a local vLLM server).

The one idea: **failures are values.** A question (a :meth:`LLMClient.complete` or
:meth:`LLMClient.complete_json` call with all its transport retries, backoff sleeps and format re-asks)
waits at most ``question_timeout_s`` and ends in a reply or a :class:`Failure`, never an exception; callers
treat a failure as its own outcome, never as an answer (:mod:`memprm.env.exam`). Only a wrong or
unauthorized key (401, 403) stops the run at once (:class:`LLMAuthError`). Raw replies are cached
(:mod:`memprm.llm.cache`), so a replay reproduces a run with zero HTTP requests. The key lives only in the
openai client, never in the cache or the logs; build one client per process.

The choices (what is retried and how, bounded waiting, format re-asks, cache, concurrency, the key) are
recorded in ``docs/design/llm_client.md``.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import openai

from memprm.llm.cache import ResponseCache, cache_key
from memprm.llm.endpoint import (
    NO_KEY,
    Completion,
    Failure,
    LLMAuthError,
    LLMConfig,
    check_messages,
    read_key,
)
from memprm.llm.stats import RoleStats, stats_for
from memprm.llm.wire import backoff_s, parse_chat_body, parse_json_object, retry_after_s

log = logging.getLogger("memprm.llm")

T = TypeVar("T")

_RETRY_STATUS = frozenset({408, 409, 429})
REASK_TEMPLATE = (
    "Your previous reply could not be used: {error}. "
    "Reply again with only the JSON object requested, and no other text."
)


_MIN_ATTEMPT_S = 0.1  # no attempt starts with less of the question's time left


class _Refused(Exception):
    """A 4xx that fails this request only (not retried)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Transient(Exception):
    """An attempt that may succeed if retried."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class LLMClient:
    """``complete`` / ``complete_json`` (and their ``_many`` batch forms) for one role on one endpoint."""

    def __init__(self, cfg: LLMConfig, role: str, stats: RoleStats | None = None, seed: int | None = None):
        if not role:
            raise ValueError("LLMClient: role must be a non-empty string")
        self.cfg = cfg
        self.role = role
        self.stats = stats if stats is not None else stats_for(role)
        self._key = read_key(cfg, role)
        self._openai = openai.OpenAI(
            base_url=cfg.base_url, api_key=self._key, timeout=cfg.timeout_s, max_retries=0
        )
        self.cache = ResponseCache(cfg.cache_path) if cfg.cache_path is not None else None
        self._slots = threading.BoundedSemaphore(cfg.max_concurrency)
        self._rng = random.Random(seed)  # jitter only; answers never depend on it
        self._rng_lock = threading.Lock()

    # --- public API ------------------------------------------------------------------------------------
    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion | Failure:
        """The model's reply, from the cache or the server; a :class:`Failure` when transport retries run out."""
        convo = check_messages(messages, self.role)
        self.stats.add(questions=1)
        out = self._ask(convo, time.monotonic() + self.cfg.question_timeout_s)
        if isinstance(out, Failure):
            self._fail(out)
        return out

    def complete_json(
        self, messages: Sequence[Mapping[str, str]], validate: Callable[[dict[str, Any]], T]
    ) -> T | Failure:
        """``validate(reply as a JSON object)``, re-asking up to ``format_retries`` times on a bad reply."""
        convo = check_messages(messages, self.role)
        self.stats.add(questions=1)
        deadline = time.monotonic() + self.cfg.question_timeout_s
        reason, raw = "", ""
        for attempt in range(self.cfg.format_retries + 1):
            if attempt:
                self.stats.add(reasks=1)
            out = self._ask(convo, deadline)
            if isinstance(out, Failure):
                self._fail(out)
                return out
            try:
                return validate(parse_json_object(out.text))
            except (ValueError, KeyError, TypeError) as exc:
                self.stats.add(format_failures=1)
                reason, raw = f"{type(exc).__name__}: {exc}"[:300], out.text
                log.debug("role=%s: reply %d not usable (%s)", self.role, attempt + 1, self._redact(reason))
                convo = [
                    *convo,
                    {"role": "assistant", "content": out.text},
                    {"role": "user", "content": REASK_TEMPLATE.format(error=reason)},
                ]
        log.warning(
            "role=%s: reply still not usable after %d re-asks: %s",
            self.role,
            self.cfg.format_retries,
            self._redact(reason),
        )
        out = Failure(reason=reason, raw=raw, kind="format")
        self._fail(out)
        return out

    def complete_many(self, batch: Sequence[Sequence[Mapping[str, str]]]) -> list[Completion | Failure]:
        """:meth:`complete` over a batch, ``max_concurrency`` at a time, results in input order."""
        return self._map(self.complete, batch)

    def complete_json_many(
        self, batch: Sequence[Sequence[Mapping[str, str]]], validate: Callable[[dict[str, Any]], T]
    ) -> list[T | Failure]:
        """:meth:`complete_json` over a batch, ``max_concurrency`` at a time, results in input order."""
        return self._map(lambda m: self.complete_json(m, validate), batch)

    def close(self) -> None:
        self._openai.close()
        if self.cache is not None:
            self.cache.close()

    # --- internals -------------------------------------------------------------------------------------
    def _fail(self, failure: Failure) -> None:
        self.stats.fail(failure.kind, self.cfg.base_url, self._redact(failure.reason)[:300])

    def _map(self, fn: Callable[[Any], T], batch: Sequence[Any]) -> list[T]:
        items = list(batch)
        if len(items) <= 1:
            return [fn(m) for m in items]
        with ThreadPoolExecutor(max_workers=min(self.cfg.max_concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def _ask(self, messages: list[dict[str, str]], deadline: float) -> Completion | Failure:
        """One model request: cache, else HTTP with transport retries until ``deadline`` (``time.monotonic``).
        Counts ``calls`` and below."""
        self.stats.add(calls=1)
        key = cache_key(self.cfg.model, self.cfg.model_version, messages, self.cfg.sampling_params())
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.add(cache_hits=1)
                log.debug("role=%s: cache hit %s", self.role, key[:12])
                return self._from_cache(hit, key)
        reason, attempts = "", 0
        for attempt in range(self.cfg.max_retries + 1):
            left = deadline - time.monotonic()
            if left < _MIN_ATTEMPT_S:
                reason = f"{reason}; no time left of llm.question_timeout_s={self.cfg.question_timeout_s:g}"
                break
            attempts += 1
            try:
                text, n_in, n_out, finish = self._post(messages, attempt, min(self.cfg.timeout_s, left))
            except _Refused as exc:
                log.warning("role=%s: %s (not retried)", self.role, self._redact(exc.reason))
                return Failure(reason=f"request: {exc.reason}", raw=None, kind="request")
            except _Transient as exc:
                reason = exc.reason
                if attempt == self.cfg.max_retries:
                    break
                with self._rng_lock:
                    u = self._rng.random()
                delay = backoff_s(
                    attempt, self.cfg.backoff_base_s, self.cfg.backoff_max_s, exc.retry_after, u
                )
                if time.monotonic() + delay + _MIN_ATTEMPT_S > deadline:
                    reason = (
                        f"{reason}; no time left of llm.question_timeout_s={self.cfg.question_timeout_s:g}"
                    )
                    break
                self.stats.add(retries=1)
                log.warning(
                    "role=%s: %s (attempt %d of %d); retrying in %.3fs",
                    self.role,
                    self._redact(reason),
                    attempt + 1,
                    self.cfg.max_retries + 1,
                    delay,
                )
                time.sleep(delay)
                continue
            self.stats.add(tokens_in=n_in, tokens_out=n_out)
            if self.cache is not None:
                value = {"text": text, "tokens_in": n_in, "tokens_out": n_out, "finish_reason": finish}
                self.cache.put(key, json.dumps(value, ensure_ascii=False))
            return Completion(text, n_in, n_out, cached=False, finish_reason=finish)
        log.warning("role=%s: giving up after %d attempts: %s", self.role, attempts, self._redact(reason))
        return Failure(reason=f"transport: {reason}", raw=None, kind="transport")

    def _post(
        self, messages: list[dict[str, str]], attempt: int, timeout: float
    ) -> tuple[str, int, int, str | None]:
        params: dict[str, Any] = {"temperature": self.cfg.temperature}
        if self.cfg.max_tokens is not None:
            params["max_tokens"] = self.cfg.max_tokens
        with self._slots:
            self.stats.add(http_requests=1)
            log.debug(
                "role=%s: POST chat/completions model=%s attempt=%d", self.role, self.cfg.model, attempt + 1
            )
            try:
                raw = self._openai.chat.completions.with_raw_response.create(
                    model=self.cfg.model, messages=messages, timeout=timeout, **params
                )
                body = raw.text
            except openai.APIStatusError as exc:
                code = exc.status_code
                if code in _RETRY_STATUS or code >= 500:
                    raise _Transient(f"HTTP {code}", retry_after_s(exc.response.headers)) from None
                detail = " ".join(self._redact(str(exc)).split())[:300]
                if code in (401, 403):
                    key = (
                        f"the API key in ${self.cfg.api_key_env}"
                        if self.cfg.api_key_env
                        else "a request without key"
                    )
                    raise LLMAuthError(
                        f"LLM role {self.role!r}: {self.cfg.base_url} refused {key} with HTTP {code} for model "
                        f"{self.cfg.model!r} (set a valid key, or llm.{self.role}.api_key_env): {detail}"
                    ) from None
                raise _Refused(f"HTTP {code} for model {self.cfg.model!r}: {detail}") from None
            except openai.APITimeoutError:
                raise _Transient(f"timed out after {timeout:g}s") from None
            except openai.APIConnectionError as exc:
                cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "no detail"
                raise _Transient(f"connection error ({cause})") from None
        try:
            return parse_chat_body(body)
        except ValueError as exc:
            raise _Transient(f"unusable response body: {exc}") from None

    def _from_cache(self, value: str, key: str) -> Completion:
        try:
            d = json.loads(value)
            return Completion(
                str(d["text"]),
                int(d["tokens_in"]),
                int(d["tokens_out"]),
                cached=True,
                finish_reason=d["finish_reason"],
            )
        except (ValueError, KeyError, TypeError) as exc:
            path = self.cache.path if self.cache is not None else "?"
            raise ValueError(f"response cache {path}: row {key} is corrupt ({exc})") from None

    def _redact(self, text: str) -> str:
        if self._key != NO_KEY and len(self._key) >= 4:
            return text.replace(self._key, "***")
        return text
