"""On-disk response cache: one sqlite file in WAL mode, safe for several processes (DDP ranks) at once.

A reply is stored under :func:`cache_key`, the hash of exactly what decides it (model, pinned version,
messages, sampling parameters), never the base URL or the API key. Writes are first-writer-wins, which is
safe because at temperature 0 every writer holds the same answer. :class:`ResponseCache` has the storage
and concurrency details; WAL needs a local filesystem (not NFS).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

KEY_SCHEMA_VERSION = 1

T = TypeVar("T")


def cache_key(
    model: str, model_version: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> str:
    """Hex sha256 of the canonical JSON of the request.

    The JSON is canonical (sorted keys, no whitespace, UTF-8) and holds
    ``{"v", "model", "model_version", "messages", "params"}`` — the model id, its pinned version, the exact
    messages and the sampling parameters. Not the base URL (the same model served from DeepSeek's API or a
    local vLLM answers the same question the same way, at temperature 0) and never the API key, which the
    cache never sees. ``v`` is the key-schema version, bumped if the payload layout changes.
    """
    payload = {
        "v": KEY_SCHEMA_VERSION,
        "model": model,
        "model_version": model_version,
        "messages": [dict(m) for m in messages],
        "params": dict(params),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """``get(key) -> str | None`` and ``put(key, value)`` over one sqlite file (created with its folder).

    Value. Whatever text the caller stores (the client stores a small JSON of the reply and its token counts).
    The table is ``responses(key TEXT PRIMARY KEY, value TEXT)``.

    Concurrency. Every process and every thread opens its own connection (connections are never shared across
    a fork or between threads: the connection is looked up per ``(pid, thread)``). Writes are ``INSERT OR
    IGNORE`` (first writer wins; at temperature 0 all writers hold the same answer), reads see committed rows.
    sqlite's ``busy_timeout`` waits for locks; an ``OperationalError`` saying the database is locked or busy
    (which sqlite can raise without waiting, e.g. while switching to WAL) is retried with backoff for up to
    ``busy_timeout_s``, then raised naming the file. WAL needs a local filesystem (not NFS).
    """

    def __init__(self, path: str | Path, busy_timeout_s: float = 30.0) -> None:
        if busy_timeout_s <= 0:
            raise ValueError(f"ResponseCache({path}): busy_timeout_s must be > 0, got {busy_timeout_s}")
        self.path = Path(path)
        if self.path.exists() and not self.path.is_file():
            raise ValueError(f"ResponseCache: {self.path} exists and is not a file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._conns: list[tuple[int, sqlite3.Connection]] = []  # (pid, connection) opened, for close()
        self._conns_lock = threading.Lock()
        self._conn()  # create the file and table now, so a bad path fails at construction

    def get(self, key: str) -> str | None:
        row = self._retry(lambda c: c.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone())
        return None if row is None else str(row[0])

    def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` unless the key is already there (first writer wins)."""
        self._retry(
            lambda c: c.execute("INSERT OR IGNORE INTO responses (key, value) VALUES (?, ?)", (key, value))
        )

    def __len__(self) -> int:
        return int(self._retry(lambda c: c.execute("SELECT COUNT(*) FROM responses").fetchone()[0]))

    def close(self) -> None:
        """Close this process's connections (other processes keep theirs)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for pid, c in conns:
            if pid == os.getpid():
                c.close()
        self._local = threading.local()

    # --- internals -------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        # A connection inherited through fork is never used; open a fresh one in this process / thread.
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise sqlite3.OperationalError(f"response cache {self.path}: cannot open: {exc}") from exc

        def setup(c: sqlite3.Connection) -> None:
            c.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"could not switch to WAL mode (got {mode!r})")
            c.execute("PRAGMA synchronous = NORMAL")
            c.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

        try:
            self._retry(setup, conn)
        except BaseException:
            conn.close()
            raise
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._conns_lock:
            self._conns.append((os.getpid(), conn))
        return conn

    def _retry(self, op: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection | None = None) -> T:
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.005
        while True:
            c = conn if conn is not None else self._conn()
            try:
                return op(c)
            except sqlite3.OperationalError as exc:
                msg = str(exc).lower()
                if ("locked" not in msg and "busy" not in msg) or time.monotonic() >= deadline:
                    raise sqlite3.OperationalError(f"response cache {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
