"""The online stage: GRPO of the policy on grouped rollouts with verified credit and critic shaping.

Wiring (nothing stateful lives on the LightningModule but the policy and the current λ):

- the environment goes into a :class:`GroupRunner`, injected into the :class:`RolloutDataModule`;
- the frozen critic (or none, for arms without shaping) is reached through a :class:`CriticHandle`, so a
  critic refresh swaps what the rollouts use;
- the callbacks: λ(k) annealing, critic refresh (off by default), dev-checkpoint selection on the dev
  *selection* half, the shaping-share monitor;
- logs go to TensorBoard under ``tb/grpo``; the best policy by dev accuracy is loaded at the end;
  ``grpo/critic_refresh.json`` lists every critic refresh (when on) with its audit and whether it was kept;
- the stage ends at ``grpo.max_steps`` optimizer steps or ``grpo.batch_budget`` batches, whichever first.

Resume after a kill: every ``grpo.checkpoint_every`` optimizer steps ``grpo/checkpoints/last.ckpt`` is
written (atomically) with the policy's trainable weights, the optimizer, the loops, every callback's state,
the rollout DataModule's state and the global random generators (:mod:`memprm.callbacks.resume_state`).
``grpo/checkpoints/key.json`` holds the hash of the config the checkpoint belongs to: the stage resumes from
``last.ckpt`` only under the same hash (else it starts over, clearing the checkpoints and ``tb/grpo``), cuts
``tb/grpo``'s event files back to the checkpoint (:mod:`memprm.stages.tb_resume`) and appends the optimizer
step it starts from to ``grpo/starts.json``.
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.data.records import Dialogue
from memprm.env.evaluate import evaluate_manager, greedy_manager
from memprm.rollout.runner import GroupRunner
from memprm.stages.trainer import TrainerConfig, build_trainer

log = logging.getLogger("memprm.stages")


@dataclass(frozen=True)
class GRPOStageResult:
    steps: int  # optimizer steps
    batches: int  # training batches drawn (skipped ones included)
    best_dev_accuracy: float | None
    best_step: int | None
    outside_models_share: float  # rollout wall time outside policy / critic / embedding forwards
    start_step: int = 0  # the optimizer step this process started from (> 0 after a resume)


def run_grpo_stage(
    cfg,  # MemprmConfig
    stack,
    policy,
    critic,  # FrozenCritic | None
    train: tuple[Dialogue, ...],
    dev_selection: tuple[Dialogue, ...],
    test_ids: set[str],
    run_dir: Path,
    trainer_cfg: TrainerConfig,
    extra_callbacks=(),
    dev: tuple[Dialogue, ...] = (),
    stage_one: Path | None = None,
    digest: str = "",
) -> GRPOStageResult:
    """``digest``: the hash of the config this stage runs under (:mod:`memprm.stages.markers`); a checkpoint
    is resumed only when it was written under the same one."""
    from memprm.callbacks import CriticRefresh, DevCheckpointSelection, LambdaAnnealing, ShapingShareMonitor
    from memprm.callbacks.llm_failures import LLMFailureStop
    from memprm.callbacks.resume_state import AtomicCheckpointIO, ResumeState, StepCheckpoint
    from memprm.models.critic_retrain import CriticHandle
    from memprm.models.grpo_module import GRPOPolicyModule
    from memprm.rollout.datamodule import RolloutDataModule
    from memprm.stages.tb_resume import ResumableTensorBoardLogger

    handle = CriticHandle(critic) if critic is not None else None
    runner = GroupRunner(stack.env, cfg.credit, cfg.rollout, handle.score if handle is not None else None,
                         stack.stopwatch)  # fmt: skip
    dm = RolloutDataModule(runner, train, cfg.rollout_data)
    module = GRPOPolicyModule(policy, cfg.grpo)

    def dev_accuracy(p) -> float:
        return evaluate_manager(
            stack.env, dev_selection, greedy_manager(p), desc="dev", progress=False
        ).accuracy

    selection = DevCheckpointSelection(dev_accuracy, cfg.dev_selection, dirpath=run_dir / "grpo",
                                       dialogues=dev_selection, test_dialogue_ids=test_ids)  # fmt: skip
    callbacks = [LambdaAnnealing(cfg.grpo.lambda0, cfg.grpo.lambda_inf, cfg.grpo.k_decay), selection,
                 ShapingShareMonitor(cfg.shaping_monitor, cfg.grpo.weights),
                 LLMFailureStop(cfg.llm.max_failure_share), *extra_callbacks]  # fmt: skip
    refresh = None
    if handle is not None and cfg.critic_refresh.every_n_steps > 0:
        refresh = CriticRefresh(handle, cfg.critic_refresh, _validity_audit(cfg, stack, dev, stage_one))
        callbacks.append(refresh)
    ckpt_dir = run_dir / "grpo" / "checkpoints"
    ckpt_path = _resume_point(ckpt_dir, run_dir / "tb" / "grpo", digest)
    logger = ResumableTensorBoardLogger(str(run_dir / "tb"), "grpo", ckpt_dir / "tb_sizes.json")
    if ckpt_path is not None:
        logger.resume_at(*_resume_facts(ckpt_path))
        module.strict_loading = False  # checkpoints hold the trainable weights only (ResumeState)
    resume = ResumeState(run_dir / "grpo" / "starts.json")
    callbacks.append(resume)
    if cfg.grpo.checkpoint_every > 0:
        callbacks.append(StepCheckpoint(ckpt_dir, cfg.grpo.checkpoint_every))
    budget = cfg.grpo.batch_budget
    trainer = build_trainer(trainer_cfg, run_dir / "tb", "grpo", callbacks, max_steps=cfg.grpo.max_steps,
                            max_epochs=1, limit_train_batches=budget, logger=logger,
                            plugins=[AtomicCheckpointIO()],
                            enable_checkpointing=cfg.grpo.checkpoint_every > 0)  # fmt: skip
    logger.progress = lambda: trainer.fit_loop.epoch_loop.batch_progress.total.ready
    with warnings.catch_warnings():  # the episodes do resume: through the DataModule's state, not the loader's
        warnings.filterwarnings("ignore", message=".*your dataloader is not resumable")
        warnings.filterwarnings("ignore", message=".*Checkpoint directory .* exists and is not empty")
        trainer.fit(module, dm, ckpt_path=ckpt_path)
    batches = trainer.fit_loop.epoch_loop.batch_progress.total.completed
    if refresh is not None and trainer.is_global_zero:  # every refresh: step, replay size, kept / rolled back
        history = [asdict(r) for r in refresh.history]
        atomic_write_text(run_dir / "grpo" / "critic_refresh.json", json.dumps({"history": history}, indent=1))
    if trainer.global_step < cfg.grpo.max_steps:
        warnings.warn(
            f"GRPO stopped at its batch budget ({batches} of grpo.max_batches = {budget} batches) after "
            f"{trainer.global_step} of grpo.max_steps = {cfg.grpo.max_steps} optimizer steps: batches whose "
            "groups all had equal rewards took no step (see grpo/skipped_frac in TensorBoard)",
            stacklevel=2,
        )
    sw = runner.stopwatch.seconds
    outside = 1.0 - sw.get("rollout_models", 0.0) / max(sw.get("rollout", 0.0), 1e-9)
    return GRPOStageResult(trainer.global_step, batches, selection.best_score, selection.best_step, outside,
                           resume.start_step or 0)  # fmt: skip


def _resume_point(ckpt_dir: Path, tb_dir: Path, digest: str) -> Path | None:
    """``last.ckpt`` when it was written under ``digest``; else a clean start (checkpoints and the stage's
    TensorBoard folder cleared, the new key written)."""
    last, key_file = ckpt_dir / "last.ckpt", ckpt_dir / "key.json"
    if last.is_file() and key_file.is_file() and json.loads(key_file.read_text()).get("hash") == digest:
        log.warning("GRPO: resuming from %s", last)
        return last
    if last.is_file():
        log.warning("GRPO: %s was written under another config; starting GRPO over", last)
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    shutil.rmtree(tb_dir, ignore_errors=True)
    (ckpt_dir.parent / "starts.json").unlink(missing_ok=True)
    atomic_write_text(key_file, json.dumps({"hash": digest}) + "\n")
    return None


def _resume_facts(ckpt_path: Path) -> tuple[int, dict | None]:
    """Lightning's count of batches fetched for training when ``ckpt_path`` was saved, and the metrics of the
    checkpointed batch (:data:`memprm.callbacks.resume_state.STEP_LOG_KEY`)."""
    import torch

    from memprm.callbacks.resume_state import STEP_LOG_KEY

    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
    ready = int(ckpt["loops"]["fit_loop"]["epoch_loop.batch_progress"]["total"]["ready"])
    return ready, ckpt.get(STEP_LOG_KEY)


def _validity_audit(cfg, stack, dev, stage_one: Path | None):
    """The dev validity checks of a critic (the refresh's rollback test), on stage one's dev trajectories."""
    from memprm.env.trajectories import load_trajectories
    from memprm.stages.critic_validity import critic_validity
    from memprm.stages.relabel_stage import relabel_all

    if stage_one is None or not dev:
        raise ValueError("critic refresh needs the dev dialogues and stage one's dev teacher trajectories")
    trajs, _ = load_trajectories(stage_one / "teacher" / "dev")
    relabeled, _ = relabel_all(trajs, stack.embedder, cfg.relabel)

    def audit(critic):
        return critic_validity(
            lambda t: critic.score(list(t))[0], relabeled, trajs, dev, stack.env,
            cfg.validity.thresholds, cfg.validity.deletion_frac, cfg.seed,
        )  # fmt: skip

    return audit
