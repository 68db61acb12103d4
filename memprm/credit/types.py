"""Plain typed inputs of the credit maths (no import of ``memprm.memory`` or ``memprm.env``).

The audit stage produces :class:`AuditRecord` (one per entry and question), the environment produces one
:class:`Step` per gate decision; :mod:`memprm.credit.tiers` holds the offline relabeling types. Every record
validates itself on construction and a bad value raises :class:`CreditError` naming the record and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: the gate decisions an episode is made of (the automatic verbatim write is not a gate).
OpKind = Literal["write", "merge", "noop"]
OP_KINDS: tuple[str, ...] = ("write", "merge", "noop")
#: the automatic layer (mirrors ``memprm.memory.bank``): its entries are never Write or Merge targets.
VERBATIM_LAYER = "verbatim"


class CreditError(ValueError):
    """Bad input to the credit maths. The message names the function or record and the field."""


@dataclass(frozen=True)
class AuditRecord:
    """What the audit measured for one entry on one quiz question (DESIGN.md, "Audit and credit").

    Only entries that were retrieved for some question have records: an entry never retrieved is never read,
    so removing it changes nothing (zero detection) and its credit is 0 without any record. ``flips`` is the
    deletion test (correct → wrong when the entry is removed); it is run only on entries cited on a correct
    answer, ``None`` means "not tested". ``cures`` is the toxicity test (wrong → correct when a cited entry
    is removed), run only on entries cited on a wrong answer.
    """

    entry_id: str
    question_id: str
    weight: float  # the question's weight in the quiz (the final session counts double)
    correct: bool  # the answer with the full bank was judged correct
    retrieved: bool
    cited: bool
    flips: bool | None = None
    cures: bool | None = None
    layer: str = ""  # the retrieval path the entry came from (informational; credit ignores it)
    #: on a cited record, the indices (0 = oldest) of the entry's versions the answer was read from
    #: (``ReaderAnswer.evidence``; the newest when the reader did not say): what the ``cited_version`` chain
    #: credit pays. Empty when not cited, and in audits written before the field existed.
    versions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        where = f"AuditRecord(entry_id={self.entry_id!r}, question_id={self.question_id!r})"
        object.__setattr__(self, "versions", tuple(self.versions))  # a list read back from JSON
        if self.versions and not self.cited:
            raise CreditError(f"{where}: versions={self.versions} on a record that is not cited")
        if any(not isinstance(v, int) or v < 0 for v in self.versions):
            raise CreditError(f"{where}: versions must be version indices >= 0, got {self.versions}")
        if not self.entry_id or not self.question_id:
            raise CreditError(f"{where}: entry_id and question_id must be non-empty")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise CreditError(f"{where}: weight must be a finite number > 0, got {self.weight!r}")
        if self.cited and not self.retrieved:
            raise CreditError(
                f"{where}: cited=True but retrieved=False (the audit drops unretrieved citations)"
            )
        if self.flips is not None and not (self.correct and self.cited):
            raise CreditError(
                f"{where}: flips={self.flips} but the deletion test runs only on entries cited on a "
                f"correct answer (correct={self.correct}, cited={self.cited})"
            )
        if self.cures is not None and (self.correct or not self.cited):
            raise CreditError(
                f"{where}: cures={self.cures} but the toxicity test runs only on entries cited on a "
                f"wrong answer (correct={self.correct}, cited={self.cited})"
            )


@dataclass(frozen=True)
class Step:
    """One gate decision t of an episode. Noops have an op id too (the bank logs them)."""

    op_id: str
    kind: OpKind
    layer: str
    turn_id: str

    def __post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise CreditError(
                f"Step(op_id={self.op_id!r}): kind must be one of {OP_KINDS}, got {self.kind!r}"
            )
        if not self.op_id:
            raise CreditError(f"Step(turn_id={self.turn_id!r}): op_id must be non-empty")


def noop_mask(steps: Sequence[Step]) -> np.ndarray:
    """``[T]`` bool, True where the step is a Noop: ``noop_mask(steps)`` → ``array([False, True])``."""
    return np.array([s.kind == "noop" for s in steps], dtype=bool)


def as_vector(values: object, name: str, *, length: int | None = None) -> np.ndarray:
    """``values`` as a finite 1-D float64 array (a copy), else :class:`CreditError` naming ``name``."""
    arr = np.array(values, dtype=np.float64)
    if arr.ndim != 1:
        raise CreditError(f"{name}: expected a 1-D sequence, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise CreditError(f"{name}: expected {length} values (one per step), got {arr.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise CreditError(f"{name}: value at index {int(bad[0])} is not finite ({arr[bad[0]]})")
    return arr
