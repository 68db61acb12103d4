"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1 (tests/chat_server.py) with faults."""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing as mp
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from helpers.chat_server import CHAT_PATH, ChatServer, hang, malformed, ok, status

from memprm.llm.cache import ResponseCache, cache_key
from memprm.llm.client import LLMClient
from memprm.llm.endpoint import NO_KEY, Completion, Failure, LLMConfig, LLMConfigError, LLMRequestError
from memprm.llm.stats import COUNTERS, RoleStats, stats_for
from memprm.llm.wire import backoff_s, parse_chat_body, parse_json_object, retry_after_s

KEY_ENV = "MEMPRM_TEST_LLM_KEY"
SECRET = "sk-test-7f3a9c1e5b2d4f60a8e1-do-not-leak"
HELLO = [{"role": "user", "content": "hello there world"}]


@pytest.fixture
def server():
    with ChatServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def make_cfg(base_url: str, tmp_path: Path | None = None, **kw: object) -> LLMConfig:
    defaults = dict(
        base_url=base_url,
        model="test-model",
        model_version="2025-01-01",
        api_key_env=KEY_ENV,
        timeout_s=2.0,
        max_retries=3,
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        max_concurrency=4,
        format_retries=2,
        cache_path=None if tmp_path is None else str(tmp_path / "cache.sqlite"),
    )
    defaults.update(kw)
    return LLMConfig(**defaults)


def make_client(cfg: LLMConfig, role: str = "reader") -> LLMClient:
    return LLMClient(cfg, role, stats=RoleStats(role), seed=0)


def answer_of(d: dict) -> str:
    if not isinstance(d["answer"], str):
        raise ValueError("answer must be a string")
    return d["answer"]


# --- happy path and request shape ------------------------------------------------------------------------
def test_complete_round_trip_sends_model_params_and_key(server):
    client = make_client(make_cfg(server.base_url, max_tokens=64))
    out = client.complete(HELLO)
    assert out == Completion(
        "hello there world", tokens_in=3, tokens_out=3, cached=False, finish_reason="stop"
    )
    (req,) = server.chat_requests
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "test-model"
    assert req.body["messages"] == HELLO
    assert req.body["temperature"] == 0.0
    assert req.body["max_tokens"] == 64
    s = client.stats.as_dict()
    assert s == dict(
        s, calls=1, http_requests=1, retries=0, cache_hits=0, tokens_in=3, tokens_out=3, failures=0
    )


def test_max_tokens_none_is_not_sent(server):
    make_client(make_cfg(server.base_url, max_tokens=None)).complete(HELLO)
    assert "max_tokens" not in server.chat_requests[0].body


def test_no_key_server_gets_placeholder(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    make_client(make_cfg(server.base_url, api_key_env=None)).complete(HELLO)
    assert server.chat_requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MEMPRM_TEST_UNSET_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="MEMPRM_TEST_UNSET_KEY is not set"):
        LLMClient(make_cfg("http://127.0.0.1:9/v1", api_key_env="MEMPRM_TEST_UNSET_KEY"), "judge")


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"base_url": "127.0.0.1:8000"}, "base_url"),
        ({"model": " "}, "model"),
        ({"model_version": ""}, "model_version"),
        ({"temperature": -0.1}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"timeout_s": 0.0}, "timeout_s"),
        ({"max_retries": -1}, "max_retries"),
        ({"backoff_base_s": 1.0, "backoff_max_s": 0.5}, "backoff_base_s"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"format_retries": -1}, "format_retries"),
        ({"cache_path": ""}, "cache_path"),
    ],
)
def test_config_validation_names_the_field(bad, field):
    with pytest.raises(ValueError, match=f"llm.{field}"):
        make_cfg(**{"base_url": "http://127.0.0.1:9/v1", **bad})


def test_messages_are_checked_before_sending(server):
    client = make_client(make_cfg(server.base_url))
    with pytest.raises(ValueError, match=r"messages\[1\]\.role"):
        client.complete([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}])
    with pytest.raises(ValueError, match="non-empty list"):
        client.complete([])
    assert server.chat_requests == []


# --- transport faults ------------------------------------------------------------------------------------
def test_429_then_success_honours_retry_after(server):
    server.script(status(429, retry_after=0.2))
    client = make_client(make_cfg(server.base_url))
    t0 = time.monotonic()
    out = client.complete(HELLO)
    elapsed = time.monotonic() - t0
    assert isinstance(out, Completion) and out.text == "hello there world"
    assert [r.behaviour for r in server.chat_requests] == ["status", "default"]
    assert client.stats["retries"] == 1 and client.stats["http_requests"] == 2 and client.stats["calls"] == 1
    # Retry-After (0.2 s) is capped by backoff_max_s (0.01 s): the client must not sleep the full 0.2 s.
    assert elapsed < 0.2


def test_retry_after_is_slept_when_below_the_cap(server):
    server.script(status(429, retry_after=0.15))
    client = make_client(make_cfg(server.base_url, backoff_max_s=1.0))
    t0 = time.monotonic()
    client.complete(HELLO)
    assert time.monotonic() - t0 >= 0.15


def test_500_twice_then_ok(server):
    server.script(status(500), status(503))
    client = make_client(make_cfg(server.base_url))
    out = client.complete(HELLO)
    assert isinstance(out, Completion) and out.text == "hello there world"
    assert len(server.chat_requests) == 3
    assert client.stats["retries"] == 2 and client.stats["failures"] == 0


def test_hang_past_timeout_then_ok(server):
    server.script(hang(2.0))
    client = make_client(make_cfg(server.base_url, timeout_s=0.5))
    t0 = time.monotonic()
    out = client.complete(HELLO)
    elapsed = time.monotonic() - t0
    assert isinstance(out, Completion) and out.text == "hello there world"
    assert [r.behaviour for r in server.chat_requests] == ["hang", "default"]
    assert client.stats["retries"] == 1
    assert 0.5 <= elapsed < 1.8  # gave up on the hang at the timeout, did not wait it out


def test_malformed_body_is_a_transport_retry(server):
    server.script(malformed())
    client = make_client(make_cfg(server.base_url))
    out = client.complete(HELLO)
    assert isinstance(out, Completion) and out.text == "hello there world"
    assert len(server.chat_requests) == 2
    assert client.stats["retries"] == 1 and client.stats["format_failures"] == 0


def test_transport_exhaustion_is_a_counted_failure_and_not_cached(server, tmp_path):
    server.script(*[status(500)] * 4)  # max_retries=3: 4 attempts, all fail
    client = make_client(make_cfg(server.base_url, tmp_path))
    out = client.complete(HELLO)
    assert isinstance(out, Failure) and out.kind == "transport" and out.raw is None
    assert "HTTP 500" in out.reason
    assert len(server.chat_requests) == 4
    assert client.stats["retries"] == 3 and client.stats["failures"] == 1
    assert len(client.cache) == 0
    # The next call goes to the server again and succeeds.
    assert isinstance(client.complete(HELLO), Completion)
    assert len(server.chat_requests) == 5 and len(client.cache) == 1


def test_transport_failure_inside_complete_json_is_one_failure(server):
    server.script(*[status(502)] * 4)
    client = make_client(make_cfg(server.base_url))
    out = client.complete_json(HELLO, answer_of)
    assert isinstance(out, Failure) and out.kind == "transport"
    assert client.stats["failures"] == 1 and client.stats["reasks"] == 0


def test_other_4xx_raises_at_once_without_the_key(server):
    server.script(status(401, message=f"Incorrect API key provided: {SECRET}"))
    client = make_client(make_cfg(server.base_url))
    with pytest.raises(LLMRequestError, match="HTTP 401") as info:
        client.complete(HELLO)
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert len(server.chat_requests) == 1 and client.stats["retries"] == 0


def test_connection_refused_exhausts_into_failure():
    with ChatServer() as srv:
        url = srv.base_url  # a port that was just free; nothing listens after stop
    client = make_client(make_cfg(url, max_retries=1))
    out = client.complete(HELLO)
    assert isinstance(out, Failure) and out.kind == "transport" and "connection error" in out.reason
    assert client.stats["http_requests"] == 2 and client.stats["retries"] == 1


# --- format re-asks --------------------------------------------------------------------------------------
def test_malformed_content_is_reasked_then_a_failure():
    with ChatServer(responder=lambda messages: "Sure! The answer is Paris.") as srv:
        client = make_client(make_cfg(srv.base_url, format_retries=2))
        out = client.complete_json(HELLO, answer_of)
        reqs = srv.chat_requests
    assert isinstance(out, Failure) and out.kind == "format"
    assert out.raw == "Sure! The answer is Paris."
    assert "no JSON object" in out.reason
    assert len(reqs) == 3
    s = client.stats.as_dict()
    assert (s["calls"], s["reasks"], s["format_failures"], s["failures"], s["retries"]) == (3, 2, 3, 1, 0)
    # Each re-ask is a new conversation: the original messages, the bad reply, a user turn naming the error.
    assert [m["role"] for m in reqs[1].body["messages"]] == ["user", "assistant", "user"]
    assert reqs[1].body["messages"][1]["content"] == "Sure! The answer is Paris."
    assert "no JSON object" in reqs[1].body["messages"][2]["content"]
    assert len(reqs[2].body["messages"]) == 5


def test_reask_recovers_from_bad_json_and_missing_field(server):
    server.script(ok('{"answer": "Par'), ok('{"city": "Paris"}'), ok('```json\n{"answer": "Paris"}\n```'))
    client = make_client(make_cfg(server.base_url, format_retries=2))
    assert client.complete_json(HELLO, answer_of) == "Paris"
    s = client.stats.as_dict()
    assert (s["reasks"], s["format_failures"], s["failures"]) == (2, 2, 0)
    assert "KeyError" in server.chat_requests[2].body["messages"][-1]["content"]


def test_format_retries_zero_fails_on_first_bad_reply(server):
    server.script(ok("[1, 2]"))
    client = make_client(make_cfg(server.base_url, format_retries=0))
    out = client.complete_json(HELLO, answer_of)
    assert isinstance(out, Failure) and "JSON list" in out.reason
    assert len(server.chat_requests) == 1


# --- cache -----------------------------------------------------------------------------------------------
def test_replay_with_a_fresh_client_sends_zero_requests(server, tmp_path):
    server.script(ok("not json"), ok('{"answer": "Paris"}'), ok("plain text"), ok("x"), ok("y"), ok("z"))
    first = make_client(make_cfg(server.base_url, tmp_path))
    q2 = [{"role": "user", "content": "second question"}]
    q3 = [{"role": "user", "content": "third question"}]
    results = [first.complete_json(HELLO, answer_of), first.complete(q2), first.complete_json(q3, answer_of)]
    n_http = len(server.chat_requests)
    assert n_http == 6 and results[0] == "Paris" and isinstance(results[2], Failure)
    assert len(first.cache) == 6  # raw replies, bad ones included (re-validated on every read)

    replay = make_client(make_cfg(server.base_url, tmp_path))
    again = [replay.complete_json(HELLO, answer_of), replay.complete(q2), replay.complete_json(q3, answer_of)]
    assert len(server.chat_requests) == n_http  # zero HTTP requests the second time
    assert again[0] == "Paris"
    assert again[1] == Completion("plain text", 2, 2, cached=True, finish_reason="stop")
    assert again[2] == results[2]  # the same Failure, reproduced from the cache
    s = replay.stats.as_dict()
    assert (s["calls"], s["cache_hits"], s["http_requests"], s["tokens_in"], s["tokens_out"]) == (
        6,
        6,
        0,
        0,
        0,
    )
    assert s["failures"] == 1 and s["reasks"] == 3


def test_cache_ignores_base_url_but_not_version_or_temperature(tmp_path):
    with ChatServer() as a, ChatServer() as b:
        make_client(make_cfg(a.base_url, tmp_path)).complete(HELLO)
        out = make_client(make_cfg(b.base_url, tmp_path)).complete(HELLO)
        assert isinstance(out, Completion) and out.cached and b.chat_requests == []
        make_client(make_cfg(b.base_url, tmp_path, model_version="2025-02-01")).complete(HELLO)
        assert len(b.chat_requests) == 1
        make_client(make_cfg(b.base_url, tmp_path, temperature=0.7)).complete(HELLO)
        assert len(b.chat_requests) == 2
        make_client(make_cfg(b.base_url, tmp_path, model="other-model")).complete(HELLO)
        assert len(b.chat_requests) == 3
        make_client(make_cfg(b.base_url, tmp_path, max_tokens=8)).complete(HELLO)
        assert len(b.chat_requests) == 4
        assert len(a.chat_requests) == 1


def test_cache_key_is_sha256_of_canonical_json():
    msgs = [{"role": "user", "content": "é"}]
    canonical = (
        '{"messages":[{"content":"é","role":"user"}],"model":"m","model_version":"v1",'
        '"params":{"max_tokens":5,"temperature":0.0},"v":1}'
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert cache_key("m", "v1", msgs, {"temperature": 0.0, "max_tokens": 5}) == expected
    assert cache_key("m", "v1", msgs, {"max_tokens": 5, "temperature": 0.0}) == expected  # order-free
    assert cache_key("m", "v2", msgs, {"temperature": 0.0, "max_tokens": 5}) != expected


def test_key_never_in_cache_files_or_logs(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # root: memprm.llm, openai and httpx loggers all captured
    server.script(status(429, retry_after=0.001), status(500), hang(1.0), malformed(), ok("not json"))
    cfg = make_cfg(server.base_url, tmp_path, timeout_s=0.3, max_retries=4)
    client = make_client(cfg)
    assert client.complete_json(HELLO, answer_of).kind == "format"  # type: ignore[union-attr]
    client.complete([{"role": "user", "content": "another"}])
    server.script(status(403, message=f"key {SECRET} is not allowed"))
    with pytest.raises(LLMRequestError):
        client.complete([{"role": "user", "content": "third"}])
    client.close()
    # The key was really in play ...
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.chat_requests)
    assert len(caplog.records) > 0
    assert any(r.name == "memprm.llm" and "retrying" in r.getMessage() for r in caplog.records)
    assert any(r.name.startswith("openai") for r in caplog.records)  # the openai package's debug lines too
    assert any(r.name.startswith(("httpx", "httpcore")) for r in caplog.records)
    # ... yet appears in no log line and in no byte of the cache files.
    assert SECRET not in caplog.text
    for rec in caplog.records:
        assert SECRET not in rec.getMessage() and SECRET not in str(rec.exc_text or "")
    files = [p for p in tmp_path.iterdir() if p.name.startswith("cache.sqlite")]
    assert any(p.name == "cache.sqlite" for p in files)
    assert len(ResponseCache(cfg.cache_path)) == 4
    for p in tmp_path.iterdir():
        assert SECRET.encode() not in p.read_bytes(), p.name


def test_corrupt_cache_row_is_a_clear_error(server, tmp_path):
    cfg = make_cfg(server.base_url, tmp_path)
    key = cache_key(cfg.model, cfg.model_version, HELLO, cfg.sampling_params())
    ResponseCache(cfg.cache_path).put(key, "{not json")
    with pytest.raises(ValueError, match="is corrupt"):
        make_client(cfg).complete(HELLO)


def test_cache_put_is_first_writer_wins(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", "first")
    cache.put("k", "second")
    assert cache.get("k") == "first" and len(cache) == 1
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_cache_waits_for_a_lock_then_gives_up_naming_the_file(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO responses VALUES ('held', 'x')")
    threading.Timer(0.2, lambda: other.execute("COMMIT")).start()
    patient = ResponseCache(path, busy_timeout_s=5.0)
    patient.put("k", "v")  # waits for the writer, then succeeds
    assert patient.get("held") == "x" and patient.get("k") == "v"
    other.execute("BEGIN IMMEDIATE")
    impatient = ResponseCache(path, busy_timeout_s=0.1)
    with pytest.raises(sqlite3.OperationalError, match="c.sqlite"):
        impatient.put("k2", "v2")
    other.execute("ROLLBACK")
    other.close()


def _cache_worker(path: str, worker: int, barrier, results) -> None:
    cache = ResponseCache(path, busy_timeout_s=20.0)
    barrier.wait()
    bad = 0
    for i in range(150):
        k = f"k{(i + worker * 50) % 200}"  # workers overlap on 100 keys
        cache.put(k, f"v-{k}")
        got = cache.get(k)
        bad += got != f"v-{k}"
        other = cache.get(f"k{(i * 7) % 200}")
        bad += other is not None and other != f"v-k{(i * 7) % 200}"
    results.put((worker, bad))


def test_two_processes_share_the_cache(tmp_path):
    ctx = mp.get_context("spawn")
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path)
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_cache_worker, args=(path, w, barrier, results)) for w in (0, 1)]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=30) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert got == [(0, 0), (1, 0)]
    cache = ResponseCache(path)
    assert len(cache) == 200
    assert all(cache.get(f"k{i}") == f"v-k{i}" for i in range(200))


def _forked_child(cache: ResponseCache, results) -> None:
    results.put(cache.get("parent"))
    cache.put("child", "from-child")


def test_cache_survives_fork(tmp_path):
    cache = ResponseCache(tmp_path / "f.sqlite")
    cache.put("parent", "from-parent")
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    p = ctx.Process(target=_forked_child, args=(cache, results))
    p.start()
    assert results.get(timeout=10) == "from-parent"
    p.join(timeout=10)
    assert p.exitcode == 0
    assert cache.get("child") == "from-child"


# --- concurrency -----------------------------------------------------------------------------------------
def test_complete_many_bounds_concurrency_and_keeps_order():
    with ChatServer(latency_s=0.1) as srv:
        client = make_client(make_cfg(srv.base_url, max_concurrency=3))
        batch = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
        out = client.complete_many(batch)
        assert [c.text for c in out] == [f"q{i}" for i in range(10)]  # type: ignore[union-attr]
        assert 1 <= srv.max_in_flight <= 3  # the bound is the claim; reaching it depends on load


def test_semaphore_bounds_callers_own_threads():
    with ChatServer(latency_s=0.05) as srv:
        client = make_client(make_cfg(srv.base_url, max_concurrency=2))
        threads = [
            threading.Thread(target=client.complete, args=([{"role": "user", "content": f"t{i}"}],))
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(srv.chat_requests) == 8
        assert 1 <= srv.max_in_flight <= 2


def test_complete_json_many(server):
    server.script(ok('{"answer": "a"}'), ok("bad"), ok('{"answer": "b"}'))
    client = make_client(make_cfg(server.base_url, max_concurrency=1))
    out = client.complete_json_many([HELLO, [{"role": "user", "content": "other"}]], answer_of)
    assert out == ["a", "b"]


# --- pure helpers ----------------------------------------------------------------------------------------
def test_parse_chat_body():
    body = {"choices": [{"message": {"content": "hi"}, "finish_reason": "length"}]}
    assert parse_chat_body(json.dumps(body)) == ("hi", 0, 0, "length")  # no usage: 0 tokens
    body["usage"] = {"prompt_tokens": 7, "completion_tokens": 2}
    assert parse_chat_body(json.dumps(body)) == ("hi", 7, 2, "length")
    body["choices"][0]["message"]["content"] = None
    assert parse_chat_body(json.dumps(body))[0] == ""
    with pytest.raises(ValueError, match="not JSON"):
        parse_chat_body("<html>")
    with pytest.raises(ValueError, match="choices"):
        parse_chat_body('{"choices": []}')
    with pytest.raises(ValueError, match="content is int"):
        parse_chat_body('{"choices": [{"message": {"content": 3}}]}')
    with pytest.raises(ValueError, match="usage.prompt_tokens"):
        parse_chat_body('{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": -1}}')


def test_parse_json_object():
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('  ```json\n{"a": 1}\n```  ') == {"a": 1}
    assert parse_json_object('Here it is: {"a": {"b": 2}} hope that helps') == {"a": {"b": 2}}
    with pytest.raises(ValueError, match="JSON list"):
        parse_json_object("[1]")
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_json_object('{"a": }')
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("no braces")


def test_backoff_and_retry_after():
    assert backoff_s(3, 0.5, 30.0, None, 0.0) == 2.0  # 0.5·2³ = 4, times 0.5
    assert backoff_s(3, 0.5, 30.0, None, 1.0) == 4.0
    assert backoff_s(10, 0.5, 30.0, None, 0.0) == 15.0  # capped at 30, times 0.5
    assert backoff_s(0, 0.5, 30.0, 100.0, 0.3) == 30.0  # Retry-After capped, no jitter
    assert backoff_s(0, 0.5, 30.0, 2.0, 0.3) == 2.0
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past


# --- stats -----------------------------------------------------------------------------------------------
def test_role_stats_are_thread_safe_and_loggable():
    s = RoleStats("judge")

    def bump():
        for _ in range(1000):
            s.add(calls=1, tokens_in=2)

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s["calls"] == 8000 and s["tokens_in"] == 16000
    assert list(s.as_dict()) == list(COUNTERS)
    assert s.log_dict()["llm/judge/calls"] == 8000
    with pytest.raises(KeyError, match="unknown counter"):
        s.add(cals=1)
    with pytest.raises(ValueError, match="cannot decrease"):
        s.add(calls=-1)


def test_registry_shares_counters_per_role(server):
    role = "probe-registry-test"
    before = stats_for(role)["calls"]
    LLMClient(make_cfg(server.base_url), role).complete(HELLO)
    LLMClient(make_cfg(server.base_url), role).complete(HELLO)
    assert stats_for(role)["calls"] == before + 2


def test_server_unknown_path_is_404_and_recorded(server):
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(urllib.request.Request(server.base_url + "/nope", data=b"{}", method="POST"))
    assert info.value.code == 404
    assert [r.behaviour for r in server.requests] == ["not_found"] and server.chat_requests == []
    assert CHAT_PATH == "/v1/chat/completions"
