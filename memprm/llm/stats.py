"""Per-role counters of LLM traffic, thread-safe, for logging as ``llm/<role>/<counter>``.

Every counter is an integer that only ever increases (:data:`COUNTERS`; what each counts is on
:class:`RoleStats`). ``questions`` is the denominator of the failure share and ``failures`` its numerator
(:mod:`memprm.llm.failures`). A process-wide registry (:func:`stats_for`) gives every client of one role the
same counters; a client may also be handed its own :class:`RoleStats` (tests do, to stay independent).
"""

from __future__ import annotations

import itertools
import threading

COUNTERS = (
    "questions",
    "calls",
    "cache_hits",
    "http_requests",
    "retries",
    "reasks",
    "tokens_in",
    "tokens_out",
    "failures",
    "failures_transport",
    "failures_format",
    "failures_request",
    "format_failures",
)
FAILURE_KINDS = ("transport", "format", "request")
_FAILURE_SEQ = itertools.count(1)


class RoleStats:
    """Thread-safe counters for one role.

    Counters (all integers, only ever increased):

    - ``questions`` — questions asked of the client: one per :meth:`~memprm.llm.client.LLMClient.complete` /
      :meth:`~memprm.llm.client.LLMClient.complete_json` call, whatever its re-asks and retries (the
      denominator of the failure share);
    - ``calls`` — model requests asked of the client: one per ``LLMClient.complete``, plus one per format
      re-ask inside ``LLMClient.complete_json`` (each re-ask is a new conversation);
    - ``cache_hits`` — calls answered from the on-disk cache (no HTTP); always ``<= calls``;
    - ``http_requests`` — HTTP attempts sent, transport retries included;
    - ``retries`` — transport retries (429, 5xx, timeouts, connection errors, unparseable bodies);
    - ``reasks`` — format re-asks (a reply that was not the expected JSON, asked again);
    - ``tokens_in`` / ``tokens_out`` — prompt / completion tokens reported by the server for answers received
      over HTTP (cache hits cost nothing and add nothing);
    - ``failures`` — questions that ended as a :class:`~memprm.llm.endpoint.Failure` (transport retries or
      format re-asks exhausted, or a 4xx that fails the one request), each counted once, and by kind in
      ``failures_transport`` / ``failures_format`` / ``failures_request`` (the three sum to ``failures``);
    - ``format_failures`` — replies that failed JSON parsing or validation (every bad reply, re-asked or
      final).

    Besides the counters, :attr:`last_error` keeps the most recent failure as ``"<endpoint>: <reason>"`` (the
    message of a run stopped for too many failures names it).
    """

    def __init__(self, role: str) -> None:
        if not role:
            raise ValueError("RoleStats: role must be a non-empty string")
        self.role = role
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTERS, 0)
        self._last_error = ""
        self._last_seq = 0  # order of the last failure among all roles (0: none yet)

    def add(self, **increments: int) -> None:
        unknown = sorted(set(increments) - set(COUNTERS))
        if unknown:
            raise KeyError(f"RoleStats({self.role!r}): unknown counter(s) {unknown}; counters are {COUNTERS}")
        for name, n in increments.items():
            if n < 0:
                raise ValueError(f"RoleStats({self.role!r}): counter {name} cannot decrease (got {n})")
        with self._lock:
            for name, n in increments.items():
                self._counts[name] += n

    def fail(self, kind: str, endpoint: str, reason: str) -> None:
        """Count one failed question of ``kind`` (one of :data:`FAILURE_KINDS`) and remember it as the last error."""
        if kind not in FAILURE_KINDS:
            raise KeyError(
                f"RoleStats({self.role!r}): unknown failure kind {kind!r}; kinds are {FAILURE_KINDS}"
            )
        self.add(failures=1, **{f"failures_{kind}": 1})
        with self._lock:
            self._last_error = f"{endpoint}: {reason}"
            self._last_seq = next(_FAILURE_SEQ)

    @property
    def last_error(self) -> str:
        """``"<endpoint>: <reason>"`` of the most recent failure ("" before any)."""
        with self._lock:
            return self._last_error

    @property
    def last_error_seq(self) -> int:
        """Order of the last failure among every role's failures (larger = more recent; 0 = none)."""
        with self._lock:
            return self._last_seq

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def as_dict(self) -> dict[str, int]:
        """A consistent snapshot, counters in :data:`COUNTERS` order."""
        with self._lock:
            return dict(self._counts)

    def log_dict(self, prefix: str = "llm") -> dict[str, int]:
        """``{"llm/<role>/<counter>": value}``, ready for a logger."""
        return {f"{prefix}/{self.role}/{k}": v for k, v in self.as_dict().items()}

    def __repr__(self) -> str:
        return f"RoleStats({self.role!r}, {self.as_dict()})"


_REGISTRY: dict[str, RoleStats] = {}
_REGISTRY_LOCK = threading.Lock()


def stats_for(role: str) -> RoleStats:
    """The process-wide counters of ``role`` (created on first use)."""
    with _REGISTRY_LOCK:
        if role not in _REGISTRY:
            _REGISTRY[role] = RoleStats(role)
        return _REGISTRY[role]


def all_stats_log_dict(prefix: str = "llm") -> dict[str, int]:
    """Every registered role's counters as ``{"llm/<role>/<counter>": value}``, roles sorted."""
    with _REGISTRY_LOCK:
        roles = sorted(_REGISTRY.items())
    out: dict[str, int] = {}
    for _, stats in roles:
        out.update(stats.log_dict(prefix))
    return out


def all_stats() -> dict[str, RoleStats]:
    """Every registered role's counters, by role (sorted)."""
    with _REGISTRY_LOCK:
        return dict(sorted(_REGISTRY.items()))
