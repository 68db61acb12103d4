"""Typed configs: plain YAML files mirrored by frozen dataclasses.

Each option is documented once, on its dataclass field. A section's dataclass lives in the module it configures,
or, when that module imports torch or lightning, beside it in ``<module>_config.py``, so that loading a config
(and rejecting a bad one) imports neither. This module gathers every section. A YAML file and
dotted command-line overrides (``retriever.widths.event=6``) are merged with OmegaConf, then converted into the
dataclasses by :func:`build`, which rejects unknown keys and wrong types with the full dotted path, and lets
each dataclass validate its values in ``__post_init__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from omegaconf import OmegaConf

from memprm.callbacks.callback_config import DevSelectionConfig, DriftMonitorConfig, ShapingMonitorConfig
from memprm.configtools import ConfigError, build, load_yaml, to_dict
from memprm.credit.presence import CreditConfig
from memprm.credit.tiers import RelabelConfig
from memprm.data.source import DataConfig
from memprm.env.gates import EnvConfig
from memprm.env.teacher import TeacherConfig
from memprm.eval.validity import ValidityConfig
from memprm.llm.endpoint import LLMRoles
from memprm.llm.judge import JudgeConfig
from memprm.llm.notes import NoteWriterConfig
from memprm.llm.probes import ProbeConfig
from memprm.llm.reader import ReaderConfig
from memprm.memory.embedder import EmbedderConfig
from memprm.memory.retriever import RetrieverConfig
from memprm.models.critic_config import CriticConfig, CriticRefreshConfig
from memprm.models.grpo_config import GRPOConfig
from memprm.models.policy_config import PolicyConfig
from memprm.rollout.datamodule_config import RolloutDataConfig
from memprm.rollout.runner import RolloutConfig
from memprm.stages.sft_config import SFTConfig
from memprm.stages.trainer import TrainerConfig

T = TypeVar("T")
__all__ = ["ConfigError", "FitConfig", "MemprmConfig", "build", "config_yaml", "load_config", "to_dict"]


STAGES = ("critic", "sft", "grpo", "test")


@dataclass(frozen=True)
class FitConfig:
    #: the stages ``fit`` runs, each once and in pipeline order: ``critic`` (teacher trajectories, relabeling,
    #: critic, validity report), ``sft``, ``grpo``, ``test`` (see :mod:`memprm.fit`). Without ``critic``, a
    #: shaped GRPO (``rollout.shaping`` not ``none``) uses the critic of ``stage_one_dir``.
    stages: tuple[str, ...] = STAGES
    #: the run folder's name under ``output_dir``; empty = ``<arm>-seed<seed>``.
    run_name: str = ""
    #: a run folder whose stage one (teacher trajectories and trained critic) this run reuses instead of
    #: recomputing it — arms of one seed share stage one; empty = this run's own folder. One whose critic was
    #: trained on other targets (``critic.target`` and its ``mc_*`` settings) is not reused: a run with a
    #: ``critic`` stage trains its own stage one (the log says so), one without refuses to start.
    stage_one_dir: str = ""
    #: the test stage also evaluates the heuristic teacher and the untrained and SFT policies beside the
    #: run's final policy; False = the final policy only (the ladder's later arms of a seed, where those
    #: baselines are the same as in the first arm).
    test_baselines: bool = True

    def __post_init__(self) -> None:
        bad = [s for s in self.stages if s not in STAGES]
        if bad or not self.stages:
            raise ValueError(f"fit.stages must be a non-empty list from {STAGES}, got {list(self.stages)}")
        if list(self.stages) != sorted(set(self.stages), key=STAGES.index):
            raise ValueError(
                f"fit.stages must list each stage once, in the pipeline order {', '.join(STAGES)}; "
                f"got {list(self.stages)}"
            )


@dataclass(frozen=True)
class MemprmConfig:
    """The whole run. Sections mirror the pipeline's stages."""

    data: DataConfig = field(default_factory=DataConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    probes: ProbeConfig = field(default_factory=ProbeConfig)
    notes: NoteWriterConfig = field(default_factory=NoteWriterConfig)
    teacher: TeacherConfig = field(default_factory=TeacherConfig)
    llm: LLMRoles = field(default_factory=LLMRoles)
    env: EnvConfig = field(default_factory=EnvConfig)
    relabel: RelabelConfig = field(default_factory=RelabelConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    validity: ValidityConfig = field(default_factory=ValidityConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    credit: CreditConfig = field(default_factory=CreditConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    rollout_data: RolloutDataConfig = field(default_factory=RolloutDataConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    dev_selection: DevSelectionConfig = field(default_factory=DevSelectionConfig)
    critic_refresh: CriticRefreshConfig = field(default_factory=CriticRefreshConfig)
    shaping_monitor: ShapingMonitorConfig = field(default_factory=ShapingMonitorConfig)
    drift: DriftMonitorConfig = field(default_factory=DriftMonitorConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    fit: FitConfig = field(default_factory=FitConfig)
    #: the ladder arm this run belongs to (names the run folder and the TensorBoard run).
    arm: str = "ours"
    #: seed for everything stochastic in the run.
    seed: int = 0
    #: folder for logs, checkpoints and reports (one sub-folder per run).
    output_dir: str = "runs"

    @property
    def run_name(self) -> str:
        return self.fit.run_name or f"{self.arm}-seed{self.seed}"


def config_yaml(cfg: MemprmConfig) -> str:
    """``cfg`` as the YAML a run folder keeps (``config.yaml``); ``load_config`` of it gives ``cfg`` back."""
    return OmegaConf.to_yaml(OmegaConf.create(to_dict(cfg)))


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = (), cls: type[T] = MemprmConfig
) -> T:
    """Defaults ← YAML file (optional; its ``extends`` resolved, :func:`~memprm.configtools.load_yaml`) ← dotted
    overrides, as a validated ``cls`` instance."""
    merged = OmegaConf.create({})
    if path is not None:
        merged = OmegaConf.merge(merged, load_yaml(path))
    if overrides:
        bad = [o for o in overrides if "=" not in o]
        if bad:
            raise ConfigError(f"overrides must look like key.sub=value, got {bad}")
        merged = OmegaConf.merge(merged, OmegaConf.from_dotlist(list(overrides)))
    raw = OmegaConf.to_container(merged, resolve=True)
    return build(cls, raw or {}, where=str(path) if path else "")
