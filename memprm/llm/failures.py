"""Failed LLM calls as a measured outcome: the per-batch failure share, the stop, and the run folder's ledger.

A failed reader or judge call is never an answer (:mod:`memprm.env.exam`); this module watches how many
there are:

- :class:`OutcomeLedger` (process-wide :data:`LEDGER`): what the exams, probe gates and audits did with
  failures and citations, by kind;
- :func:`failure_share`: failed questions / questions asked of every LLM role between two snapshots of the
  role counters (:mod:`memprm.llm.stats`);
- :class:`FailureGuard`: stops the run with :class:`LLMFailureRateError` when the share since its last check
  exceeds ``llm.max_failure_share`` (default 0.2);
- :func:`stage_counters`: writes the LLM counters and the ledger a stage added to ``<run>/llm_counters.json``
  (one key per stage), also when the stage stops on an error.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memprm.llm.endpoint import DEFAULT_MAX_FAILURE_SHARE, LLMStop, check_max_failure_share
from memprm.llm.stats import all_stats

#: exam / gate / audit outcome counters kept in :data:`LEDGER`.
OUTCOMES = (
    "quiz_answers_failed",  # first-pass reader calls that failed (the question is not scored)
    "quiz_verdicts_failed",  # first-pass judge calls that failed (the question is not scored)
    "gate_probes_failed",  # probes dropped because one of their three gate answers failed
    "deletion_tests_failed",  # deletion re-answers that failed (no flip, no cure)
    "missing_citations",  # reader replies without a ``cited`` field
    "citation_cap_hits",  # answers citing more than ``reader.max_citations`` entries
    "dropped_citations",  # cited ids that were not retrieved
)


class LLMFailureRateError(LLMStop):
    """Too many LLM calls failed in one batch: the run stops (one line: the share, endpoint, last error)."""


class OutcomeLedger:
    """Thread-safe, only-increasing counters of :data:`OUTCOMES`.

    What the exams, probe gates and audits did with failures and citations, by kind: quiz answers / verdicts
    that failed, probes dropped because a gate's answer failed, deletion re-answers that failed, replies
    without ``cited``, answers over the citation cap, forged (unretrieved) citations.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(OUTCOMES, 0)

    def add(self, **increments: int) -> None:
        unknown = sorted(set(increments) - set(OUTCOMES))
        if unknown:
            raise KeyError(f"OutcomeLedger: unknown counter(s) {unknown}; counters are {OUTCOMES}")
        with self._lock:
            for k, n in increments.items():
                if n < 0:
                    raise ValueError(f"OutcomeLedger: counter {k} cannot decrease (got {n})")
                self._counts[k] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


LEDGER = OutcomeLedger()

Snapshot = dict[str, dict[str, int]]  # role -> counter -> value


def snapshot() -> Snapshot:
    """Every registered role's counters now."""
    return {role: s.as_dict() for role, s in all_stats().items()}


def delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> Snapshot:
    """``after - before`` per role and counter (a role new in ``after`` counts from 0)."""
    return {
        role: {k: v - before.get(role, {}).get(k, 0) for k, v in counts.items()}
        for role, counts in after.items()
    }


@dataclass(frozen=True)
class FailureShare:
    questions: int
    failures: int

    @property
    def share(self) -> float:
        return self.failures / self.questions if self.questions else 0.0


def failure_share(change: Mapping[str, Mapping[str, int]]) -> FailureShare:
    """Failed questions / questions over every role of ``change`` (a :func:`delta`)."""
    return FailureShare(
        sum(c.get("questions", 0) for c in change.values()),
        sum(c.get("failures", 0) for c in change.values()),
    )


def batch_failure_share(stats: Sequence[Mapping[str, float]]) -> FailureShare:
    """The failure share over several groups' ``llm/questions`` and ``llm/failures`` stats (summed)."""
    return FailureShare(
        int(sum(s.get("llm/questions", 0.0) for s in stats)),
        int(sum(s.get("llm/failures", 0.0) for s in stats)),
    )


_LIMIT = {"max_share": DEFAULT_MAX_FAILURE_SHARE}


def set_max_failure_share(value: float) -> None:
    """The process-wide ``llm.max_failure_share`` that :class:`FailureGuard` s without their own limit use."""
    check_max_failure_share(value)
    _LIMIT["max_share"] = float(value)


def last_error() -> str:
    """``"<role> at <endpoint>: <reason>"`` of the most recent failure of any role ("" when none)."""
    roles = [s for s in all_stats().values() if s.last_error_seq]
    if not roles:
        return ""
    last = max(roles, key=lambda s: s.last_error_seq)
    return f"{last.role} at {last.last_error}"


class FailureGuard:
    """Raises :class:`LLMFailureRateError` when the share of failed LLM questions since the previous
    :meth:`check` exceeds the limit (``max_share``, else the process-wide one).

    A check covers what happened since the last one (a GRPO batch, a teacher dialogue, an evaluated
    dialogue). The error's one-line message names the endpoint and the last error. The process-wide limit is
    ``llm.max_failure_share`` (default 0.2), set by :func:`set_max_failure_share` where the roles are built
    from config.
    """

    def __init__(self, max_share: float | None = None) -> None:
        if max_share is not None:
            check_max_failure_share(max_share)
        self.max_share = max_share
        self._last = snapshot()
        self.last_change: Snapshot = {}

    def check(self, where: str) -> FailureShare:
        now = snapshot()
        self.last_change = delta(self._last, now)
        self._last = now
        return stop_if_too_many(failure_share(self.last_change), where, self.max_share)


def stop_if_too_many(share: FailureShare, where: str, max_share: float | None = None) -> FailureShare:
    """Raise :class:`LLMFailureRateError` when ``share`` exceeds ``max_share`` (None: the process-wide limit);
    else return it."""
    limit = _LIMIT["max_share"] if max_share is None else max_share
    if share.failures and share.share > limit:
        raise LLMFailureRateError(
            f"{share.failures} of {share.questions} LLM questions failed in {where} "
            f"({100 * share.share:.0f}% > llm.max_failure_share = {limit:g}); last error: {last_error()}"
        )
    return share


def log_dict(change: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """``{"llm/<role>/<counter>": n}`` of a :func:`delta`, plus ``llm/questions``, ``llm/failures`` and
    ``llm/failure_share`` over all roles (roles that asked nothing are left out)."""
    out: dict[str, float] = {}
    for role, counts in sorted(change.items()):
        if counts.get("calls", 0) or counts.get("questions", 0):
            out.update({f"llm/{role}/{k}": float(v) for k, v in counts.items()})
    share = failure_share(change)
    if share.questions:
        out |= {
            "llm/questions": float(share.questions),
            "llm/failures": float(share.failures),
            "llm/failure_share": share.share,
        }
    return out


@contextmanager
def stage_counters(run_dir: str | Path, stage: str) -> Iterator[None]:
    """Around a stage: afterwards (also on an error) ``<run_dir>/llm_counters.json[stage]`` holds the LLM
    counters per role and the :data:`LEDGER` counters the stage added, and the last error."""
    llm0, ledger0 = snapshot(), LEDGER.snapshot()
    try:
        yield
    finally:
        ledger1 = LEDGER.snapshot()
        entry = {
            "llm": {r: c for r, c in delta(llm0, snapshot()).items() if any(c.values())},
            "outcomes": {k: ledger1[k] - ledger0[k] for k in OUTCOMES},
            "last_error": last_error(),
        }
        write_json_entry(Path(run_dir) / "llm_counters.json", stage, entry)


def write_json_entry(path: Path, key: str, value: object) -> None:
    """Set ``key`` in the JSON object file ``path`` (created if absent), written to a temporary file and
    renamed over it so a reader never sees half a file."""
    data = json.loads(path.read_text()) if path.is_file() else {}
    data[key] = value
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)
