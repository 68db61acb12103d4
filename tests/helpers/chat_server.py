"""A fake OpenAI-compatible chat-completions server for tests (a helper module, not a test file).

It is a real HTTP server on 127.0.0.1 with an ephemeral port, threaded, speaking ``POST /v1/chat/completions``
with the real response schema (``id, object, created, model, choices[0].message.content, finish_reason,
usage{prompt_tokens, completion_tokens, total_tokens}``). Tests import it with ``from chat_server import ...``
(as ``helpers.chat_server``: pytest puts ``tests/`` on ``sys.path`` because there is no ``tests/__init__.py``).

Behaviour per request comes from a script (a FIFO queue), else from the ``fault`` schedule
``callable(n) -> Behaviour | None`` (``n`` = 0-based number of the chat request; see :func:`after`,
:func:`always`, :func:`every`), else from the default responder ``callable(messages) -> content`` (echo of the
last user message by default; :func:`exam_responder` plays reader and judge of an exam):

- :func:`ok` — 200 with the given content;
- :func:`status` — an error status (429, 500, ...) with an OpenAI-style error body (message settable) and
  an optional ``Retry-After`` header;
- :func:`hang` — waits ``seconds`` (bounded: it also ends when the server stops), then answers like the default
  responder; a client that timed out has gone by then and the write error is swallowed;
- :func:`malformed` — 200 with a body that is not JSON.

Token counts are whitespace word counts, so tests can compute them by hand: ``prompt_tokens`` sums the words of
every message's content, ``completion_tokens`` counts the words of the reply. Every request is recorded
(path, headers, parsed body, the behaviour used) and the peak number of requests in flight is tracked.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"

Responder = Callable[[list[dict[str, Any]]], str]


@dataclass(frozen=True)
class Ok:
    content: str


@dataclass(frozen=True)
class Status:
    code: int
    retry_after: float | None = None
    message: str = "scripted error"


@dataclass(frozen=True)
class Hang:
    seconds: float


@dataclass(frozen=True)
class Malformed:
    body: str = '{"id": "chatcmpl-broken", "choices": [ this is not json'


Behaviour = Ok | Status | Hang | Malformed
Fault = Callable[[int], "Behaviour | None"]


def after(n: int, behaviour: Behaviour) -> Fault:
    """Requests ``0 .. n-1`` are answered normally, every later one with ``behaviour`` (e.g. 500-after-N)."""
    return lambda i: behaviour if i >= n else None


def always(behaviour: Behaviour) -> Fault:
    return lambda i: behaviour


def every(k: int, behaviour: Behaviour) -> Fault:
    """Every ``k``-th request (``k-1, 2k-1, ...``) gets ``behaviour`` (a transient 429 / 500)."""
    return lambda i: behaviour if i % k == k - 1 else None


def ok(content: str) -> Ok:
    return Ok(content)


def status(code: int, retry_after: float | None = None, message: str = "scripted error") -> Status:
    return Status(code, retry_after, message)


def hang(seconds: float) -> Hang:
    return Hang(seconds)


def malformed(body: str | None = None) -> Malformed:
    return Malformed() if body is None else Malformed(body)


_ENTRY = re.compile(r"^\[(?P<id>[^ |\]]+) \|", re.M)
_VERSION = re.compile(r"^  v\d+ \([^)]*\): (?P<text>.*)$", re.M)


def exam_responder(
    facts: dict[str, tuple[str, str]], cite: str = "honest", reply: str = "json", poison: str = "POISON"
) -> Responder:
    """Reader and judge of an exam in one responder, told apart by the prompt (the judge's has "Gold answer:").

    Reader: ``facts`` maps a question's text to (keyword, answer); it answers ``answer`` citing the first
    memory entry (prompt order) whose text contains ``keyword``, or abstains citing nothing. ``cite``:
    ``honest`` (that entry), ``everything`` (every entry in the prompt), ``forged`` (that entry and the
    unretrieved id ``e99999``), ``none`` (no ``cited`` field). An answer read from an entry containing
    ``poison`` is wrong ("Madrid"). ``reply="bad_json"``: the reader replies prose.
    Judge: CORRECT iff the generated answer contains the gold answer (case-insensitive).
    """

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = echo(messages)
        if "Gold answer:" in prompt:
            gold = prompt.split("Gold answer:", 1)[1].split("\n", 1)[0].strip().lower()
            said = prompt.split("Generated answer:", 1)[1].split("\n", 1)[0].strip().lower()
            return json.dumps({"label": "CORRECT" if gold and gold in said else "WRONG"})
        if reply == "bad_json":
            return "I think the answer is somewhere in the memory."
        question = prompt.split("Question:", 1)[1].split("\n", 1)[0].strip()
        memory = prompt.split("Memory:", 1)[1].split("Question:", 1)[0]
        blocks = [(m["id"], memory[m.end() :].split("\n[", 1)[0]) for m in _ENTRY.finditer(memory)]
        keyword, answer = facts.get(question, ("", ""))
        texts = {eid: " ".join(_VERSION.findall(body)) for eid, body in blocks}
        used = [eid for eid, _ in blocks if keyword and keyword in texts[eid]][:1]
        if not used:
            return json.dumps({"answer": "Not mentioned in the conversation", "cited": []})
        cited = {"honest": used, "everything": [eid for eid, _ in blocks], "forged": used + ["e99999"]}
        out: dict[str, Any] = {"answer": "Madrid" if poison and poison in texts[used[0]] else answer}
        if cite != "none":
            out["cited"] = cited[cite]
        return json.dumps(out)

    return respond


def echo(messages: list[dict[str, Any]]) -> str:
    """The content of the last ``user`` message (empty string when there is none)."""
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def word_count(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # header names lower-cased
    body: dict[str, Any] | None  # None when the request body was not JSON
    behaviour: str  # "ok", "status", "hang", "malformed", "default" or "not_found"


class ChatServer:
    """``with ChatServer() as srv: srv.base_url`` — started on enter, stopped (threads ended) on exit.

    ``latency_s`` delays every 200 answer (scripted ``ok`` and default) so that concurrent requests overlap,
    which makes :attr:`max_in_flight` meaningful.
    """

    def __init__(
        self,
        responder: Responder = echo,
        latency_s: float = 0.0,
        model: str | None = None,
        fault: Fault | None = None,
    ) -> None:
        self.responder = responder
        self.fault = fault
        self.latency_s = latency_s
        self.model = model  # reported model name; None = echo the requested one
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> ChatServer:
        server = self

        class Handler(_Handler):
            owner = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # ends any hang in progress
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting and inspection ----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ChatServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order; later requests use the default responder."""
        with self._lock:
            self._script.extend(behaviours)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    # --- used by the handler ---------------------------------------------------------------------------
    def _enter(self, path: str, headers: dict[str, str], body: dict[str, Any] | None) -> Behaviour | None:
        """Record the request on arrival (a hanging one is visible at once) and pick its behaviour."""
        with self._lock:
            n = sum(r.path == CHAT_PATH for r in self._requests)
            behaviour = self._script.popleft() if self._script else None
            if behaviour is None and self.fault is not None:
                behaviour = self.fault(n)
            name = "default" if behaviour is None else type(behaviour).__name__.lower()
            self._requests.append(RecordedRequest(path, headers, body, name))
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            return behaviour

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(rec)

    def _completion_body(self, request: dict[str, Any], content: str) -> bytes:
        with self._lock:
            self._counter += 1
            n = self._counter
        messages = request.get("messages") or []
        prompt_tokens = sum(word_count(str(m.get("content", ""))) for m in messages)
        completion_tokens = word_count(content)
        body = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    owner: ChatServer
    protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive threads to clean up

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr access log
        return

    def do_POST(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        body = body if isinstance(body, dict) else None
        if self.path != CHAT_PATH:
            owner._record(RecordedRequest(self.path, headers, body, "not_found"))
            self._send(404, _error_body(404, f"no route {self.path}"))
            return
        behaviour = owner._enter(self.path, headers, body)
        try:
            self._respond(behaviour, body or {})
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up (timeout) before the answer
        finally:
            owner._leave()

    def _respond(self, behaviour: Behaviour | None, request: dict[str, Any]) -> None:
        owner = self.owner
        if isinstance(behaviour, Status):
            extra = {} if behaviour.retry_after is None else {"Retry-After": f"{behaviour.retry_after:g}"}
            self._send(behaviour.code, _error_body(behaviour.code, behaviour.message), extra)
            return
        if isinstance(behaviour, Malformed):
            self._send(200, behaviour.body.encode())
            return
        if isinstance(behaviour, Hang):
            owner._stop.wait(behaviour.seconds)
        elif owner.latency_s > 0:
            owner._stop.wait(owner.latency_s)
        content = (
            behaviour.content if isinstance(behaviour, Ok) else owner.responder(request.get("messages", []))
        )
        self._send(200, owner._completion_body(request, content))

    def _send(self, code: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)


def _error_body(code: int, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "server_error", "code": code}}).encode()
