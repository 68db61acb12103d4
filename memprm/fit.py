"""``fit(cfg)``: the whole pipeline as one plain function (what ``python -m memprm fit`` and the tests call).

The stages of ``shared/DESIGN.md``, in order (:data:`PIPELINE`; ``fit.stages`` chooses a subset; an arm is a
config, not a code path): ``critic`` (teacher trajectories → hindsight relabeling → critic → validity
report), ``sft``, ``grpo`` (with dev-checkpoint selection) and ``test``. Each is ``stage(cfg, run) ->
StageResult`` (:mod:`memprm.stages.run_context`). Everything goes under ``<output_dir>/<run_name>``; rerunning
the same command skips every stage whose completion marker holds this config's hash, redoes those whose
settings changed and resumes a killed GRPO stage (:mod:`memprm.stages.markers`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.config import ConfigError, MemprmConfig, config_yaml
from memprm.data.source import load_source
from memprm.env.stack import build_stack, check_llm_keys
from memprm.llm.notes import refuse_oracle_notes
from memprm.llm.profile_tagger import check_tagger_phrasings
from memprm.logs import set_progress_bars
from memprm.memory.embedder import check_embedder
from memprm.models.policy_config import STRUCTURAL_NEEDS
from memprm.stages import critic_stage, grpo_stage, held_out, sft_stage
from memprm.stages.markers import Markers
from memprm.stages.reader_calibration import calibrate_reader
from memprm.stages.run_context import FitResult, Run, StageResult
from memprm.stages.stage_keys import critic_target_mismatch, plan_keys, stage_one_folder, write_config
from memprm.timing import Stopwatch

__all__ = ["PIPELINE", "FitResult", "finished", "fit"]
log = logging.getLogger("memprm.fit")

Stage = Callable[[MemprmConfig, Run], StageResult]

#: The pipeline, in order: stage one (teacher → relabeling → critic → validity), SFT on the teacher's
#: operations, GRPO with dev-checkpoint selection, the held-out test table.
PIPELINE: tuple[tuple[str, Stage], ...] = (
    ("critic", critic_stage.critic),
    ("sft", sft_stage.sft),
    ("grpo", grpo_stage.grpo),
    ("test", held_out.test),
)


def fit(cfg: MemprmConfig, grpo_callbacks: Sequence = ()) -> FitResult:
    """Run ``cfg.fit.stages`` in pipeline order; ``grpo_callbacks`` are extra Lightning callbacks for the GRPO
    stage's Trainer (monitors of your own, benchmarks)."""
    refuse_oracle_notes(cfg.notes)  # the annotation note writer is for tools/policy_gap.py only
    run = open_run(cfg, grpo_callbacks)
    for name, stage in PIPELINE:
        if name in cfg.fit.stages:
            log.info("%s", stage(cfg, run).summary)
    atomic_write_text(run.dir / "timings.json", json.dumps(run.out.seconds, indent=2))
    log.info("run folder: %s  (tensorboard --logdir %s)", run.dir, Path(cfg.output_dir))
    return run.out


def open_run(cfg: MemprmConfig, grpo_callbacks: Sequence = ()) -> Run:
    """Everything before the first stage: the setup checks (API keys, data, embedder: a bad setup fails in a
    second, before anything is written), the run folder and its ``config.yaml``, the roles, the stage keys,
    the reader's calibration and the policy (built here, once, so every stage trains the same one)."""
    check_stage_one_critic(cfg)
    check_grpo_trainable(cfg)
    check_tagger_phrasings(cfg.notes, cfg.data.synthetic)
    check_llm_keys(cfg)
    splits = load_source(cfg.data)
    check_embedder(cfg.embedder)
    from lightning import seed_everything

    seed_everything(cfg.seed, workers=True, verbose=False)
    set_progress_bars(cfg.trainer.progress_bar)
    run_dir = Path(cfg.output_dir) / cfg.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    config_text = config_yaml(cfg)
    version = write_config(run_dir, config_text)
    if version is not None:
        _log_config_text(run_dir, config_text, version)
    stack = build_stack(cfg, Stopwatch())
    stage_one, keys = _stage_keys(cfg, run_dir, splits)
    run = Run(
        run_dir, cfg.seed, splits, stack, keys, Markers(run_dir), stage_one, grpo_callbacks=grpo_callbacks
    )
    calibrate_reader(cfg, stack, splits, run_dir, keys.get("calibration"))
    if {"sft", "grpo", "test"} & set(cfg.fit.stages):
        from memprm.models.policies import build_policy
        from memprm.models.trainable import trainable_state

        run.policy = build_policy(cfg.policy)
        run.snapshots["untrained"] = trainable_state(run.policy)
    return run


def check_stage_one_critic(cfg: MemprmConfig) -> None:
    """A shaped GRPO stage (``rollout.shaping`` not ``none``) in a run without the ``critic`` stage is shaped
    by the trained critic of ``fit.stage_one_dir``: :class:`ConfigError` when that folder is unset, holds
    none (instead of a GRPO run that silently goes unshaped) or holds one trained on other targets than this
    config's ``critic.target`` (:func:`~memprm.stages.stage_keys.critic_target_mismatch`)."""
    stages, shaping = cfg.fit.stages, cfg.rollout.shaping
    if "grpo" not in stages or "critic" in stages or shaping == "none":
        return
    where = cfg.fit.stage_one_dir
    if not where:
        lacks = "fit.stage_one_dir is not set"
    elif not critic_stage.has_critic(Path(where)):
        lacks = f"fit.stage_one_dir={where} holds no trained critic"
    else:
        lacks = critic_target_mismatch(cfg, Path(where))
        if lacks is None:
            return
    raise ConfigError(
        f"fit.stages has no 'critic' and rollout.shaping={shaping} needs a trained critic, but {lacks}: set "
        "fit.stage_one_dir to a run folder with stage one, or rollout.shaping=none"
    )


def check_grpo_trainable(cfg: MemprmConfig) -> None:
    """``grpo.trainable`` or ``sft.trainable`` = ``structural`` (or ``kinds``, ``match``) with a policy that has no structural
    head: :class:`ConfigError` before anything runs (instead of at that stage, after the earlier ones)."""
    for stage, trainable in (("grpo", cfg.grpo.trainable), ("sft", cfg.sft.trainable)):
        if stage in cfg.fit.stages and trainable != "all" and not cfg.policy.structural_head:
            raise ConfigError(
                STRUCTURAL_NEEDS.format(setting=f"{stage}.trainable", kind=cfg.policy.kind, scorer=cfg.policy.scorer)
            )


def finished(cfg: MemprmConfig) -> bool:
    """True when every stage of ``cfg.fit.stages`` has a completion marker with this config's hash in the run
    folder (what ``experiments/run_ladder.py`` skips); loads the data, builds nothing."""
    run_dir = Path(cfg.output_dir) / cfg.run_name
    if not (run_dir / "stages").is_dir():
        return False
    stage_one, keys = _stage_keys(cfg, run_dir, load_source(cfg.data))
    markers = Markers(run_dir)
    own = [s for s in cfg.fit.stages if s != "critic" or stage_one == run_dir]
    return all(markers.hash_of(s) == keys[s].digest for s in own)


def _stage_keys(cfg: MemprmConfig, run_dir: Path, splits) -> tuple[Path, dict]:
    """The folder holding stage one (``fit.stage_one_dir``, else the run's own) and every stage's key; a
    critic this run does not train (stage one elsewhere, or no ``critic`` stage) enters the keys through its
    folder's critic marker hash."""
    stage_one = stage_one_folder(cfg, run_dir)
    trains_critic = stage_one == run_dir and "critic" in cfg.fit.stages
    other_critic = None if trains_critic else Markers(stage_one).hash_of("critic") or "missing"
    return stage_one, plan_keys(cfg, splits, other_critic)


def _log_config_text(run_dir: Path, text: str, version: int) -> None:
    """The resolved config as TensorBoard text at step ``version`` (0, then one step per changed config)."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(run_dir / "tb" / "config")) as w:
        w.add_text("config", "```yaml\n" + text + "```", version)
