"""What the stages of one ``fit`` share (:class:`Run`) and what each returns (:class:`StageResult`).

Every stage has one signature, ``stage(cfg, run) -> StageResult``: it reuses its outputs when its completion
marker holds this config's hash (:mod:`memprm.stages.markers`), else computes them inside
:meth:`Run.measure` (its own seed, LLM counters and wall time) and writes its marker. Its outputs go on
``run.out``, the :class:`FitResult` that ``fit`` returns.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memprm.data.source import DataSplits
from memprm.env.stack import Stack
from memprm.llm.failures import stage_counters
from memprm.stages.markers import Markers, StageKey


@dataclass
class FitResult:
    """Everything a ``fit`` produced; a stage that did not run leaves its field empty."""

    run_dir: Path
    #: wall seconds of each stage that computed (or loaded stage one), by stage name.
    seconds: dict[str, float] = field(default_factory=dict)
    critic: Any = None  # CriticStageResult
    sft_losses: list[float] = field(default_factory=list)
    grpo: Any = None  # GRPOStageResult
    test: dict[str, Any] = field(default_factory=dict)  # manager name -> EvalResult
    table: str = ""


@dataclass(frozen=True)
class StageResult:
    name: str
    #: True when the outputs were loaded (done earlier under the same config, or stage one of another run).
    reused: bool
    #: what the stage reports, logged by ``fit``.
    summary: str


@dataclass
class Measure:
    seconds: float = 0.0


@dataclass
class Run:
    """The run folder, the data, the roles and the policy of one ``fit``, and its outputs so far."""

    dir: Path
    seed: int
    splits: DataSplits
    stack: Stack
    #: every stage's key (:func:`memprm.stages.stage_keys.plan_keys`) and the run folder's markers.
    keys: dict[str, StageKey]
    markers: Markers
    #: the run folder whose stage one (teacher trajectories, critic) this run uses: its own, or another.
    stage_one: Path
    #: the policy every policy stage trains in place (None when the run has no policy stage).
    policy: Any = None
    #: trainable states of the policy kept for the test table: ``untrained``, then ``SFT``.
    snapshots: dict[str, dict] = field(default_factory=dict)
    #: extra Lightning callbacks for the GRPO stage's Trainer.
    grpo_callbacks: Sequence = ()
    #: the outputs so far (what ``fit`` returns).
    out: FitResult = field(init=False)

    def __post_init__(self) -> None:
        self.out = FitResult(self.dir)

    def reusable(self, stage: str, what: str, *files: str) -> bool:
        """True when ``stage`` finished earlier under this run's key (its marker holds this config's hash; the
        decision is logged as ``what``) and each of ``files`` (in the run folder) is still there."""
        return self.markers.done(self.keys[stage], what) and all((self.dir / f).is_file() for f in files)

    @property
    def own_stage_one(self) -> bool:
        return self.stage_one == self.dir

    @contextmanager
    def measure(self, name: str) -> Iterator[Measure]:
        """The work of stage ``name``: seeded with :func:`stage_seed`, its LLM calls counted into
        ``llm_counters.json``, its wall time recorded in ``out.seconds[name]`` (and on the yielded object)."""
        from lightning import seed_everything

        seed_everything(stage_seed(self.seed, name), workers=True, verbose=False)
        m = Measure()
        t0 = time.perf_counter()
        with stage_counters(self.dir, name):
            yield m
        m.seconds = self.out.seconds[name] = time.perf_counter() - t0


def stage_seed(seed: int, stage: str) -> int:
    """The seed a stage of a run with ``seed`` starts from: crc32 of ``"<seed>:<stage>"`` (a 32-bit value,
    the same on every machine and Python version).

    >>> stage_seed(0, "critic") == stage_seed(0, "critic") != stage_seed(1, "critic")
    True
    """
    return zlib.crc32(f"{seed}:{stage}".encode())
