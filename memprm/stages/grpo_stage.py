"""The online stage: GRPO of the policy on grouped rollouts with verified credit and critic shaping.

Wiring (nothing stateful lives on the LightningModule but the policy and the current λ): the environment goes
into a :class:`GroupRunner`, injected into the :class:`RolloutDataModule`; the critic (none for arms
without shaping) is reached through a :class:`CriticHandle`, so a refresh swaps what the rollouts use; the
callbacks are λ(k) annealing, critic refresh (off by default), dev-checkpoint selection on the dev
*selection* half, the shaping-share and policy-drift monitors and the LLM-failure stop. Logs go to
``tb/grpo``; the stage ends at ``grpo.max_steps`` optimizer steps, ``grpo.batch_budget`` batches or
``rollout_data.max_rollouts`` rollouts, whichever first, with the best policy by dev accuracy loaded. A killed
stage resumes from ``grpo/checkpoints/last.ckpt`` (:func:`train_grpo`).
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.env.evaluate import evaluate_manager, greedy_manager
from memprm.models.policies import sampling_temperature, trainable_subset
from memprm.models.trainable import load_trainable, save_trainable, trainable_state
from memprm.rollout.runner import GroupRunner
from memprm.stages.run_context import Run, StageResult
from memprm.stages.stage_keys import selection_split
from memprm.stages.sum_scale import resolve_sum_scale
from memprm.stages.trainer import build_trainer

log = logging.getLogger("memprm.stages")


@dataclass(frozen=True)
class GRPOStageResult:
    steps: int  # optimizer steps
    batches: int  # training batches drawn (skipped ones included)
    best_dev_accuracy: float | None
    best_step: int | None
    outside_models_share: float  # rollout wall time outside policy / critic / embedding forwards
    start_step: int = 0  # the optimizer step this process started from (> 0 after a resume)
    sum_scale: float | None = None  # rollout.sum_scale resolved (None: shaping is not sum)
    #: rollouts played on all ranks (local re-runs included; a batch the loader fetched ahead too)
    rollouts: int = 0


def grpo(cfg, run: Run) -> StageResult:
    """The GRPO stage of ``run``: skipped when done under its key (the final policy loaded), else run or
    resumed (:func:`train_grpo`); the final policy (``policy_grpo.pt``) and the result
    (``grpo/result.json``) are written before the marker. ``cfg``: a :class:`memprm.config.MemprmConfig`."""
    result_path, final = run.dir / "grpo" / "result.json", run.dir / "policy_grpo.pt"
    if run.reusable("grpo", "GRPO stage", "policy_grpo.pt", "grpo/result.json"):
        load_trainable(run.policy, final)
        run.out.grpo = GRPOStageResult(**json.loads(result_path.read_text()))
        return StageResult("grpo", True, f"GRPO: done earlier with this config, policy loaded from {final}")
    run.markers.clear("grpo")
    with (
        run.measure("grpo"),
        sampling_temperature(run.policy, cfg.grpo.temperature),
        trainable_subset(run.policy, cfg.grpo.trainable),
    ):
        out = run.out.grpo = train_grpo(cfg, run)
    save_trainable(run.policy, final)
    atomic_write_text(result_path, json.dumps(asdict(out), indent=1))
    run.markers.write(run.keys["grpo"])
    summary = (
        f"GRPO: {out.steps} steps over {out.batches} batches; best dev-selection accuracy {out.best_dev_accuracy} "
        f"at step {out.best_step}; rollout time outside model forwards: {100 * out.outside_models_share:.1f}%"
    )
    if out.sum_scale is not None:
        summary += f"; sum shaping scaled by {out.sum_scale:.4g}"
    return StageResult("grpo", False, summary)


def episode_dialogues(cfg, splits) -> tuple:
    """The dialogues GRPO plays: the split ``rollout_data.split`` names, or a one-line error naming the setting
    that fills it when the source has no such split or it is empty."""
    name = cfg.rollout_data.split
    dialogues = splits.splits.get(name, ())
    if not dialogues:
        fill = "set data.synthetic.n_rl > 0" if splits.source == "synthetic" else "use rollout_data.split=train"
        raise ValueError(
            f"rollout_data.split={name}: the {splits.source} data has no {name!r} dialogues ({fill})"
        )
    return dialogues


def train_grpo(cfg, run: Run) -> GRPOStageResult:
    """GRPO of ``run.policy`` on the dialogues of ``rollout_data.split`` (train by default), shaped by stage one's critic (none when
    ``rollout.shaping`` is ``none``); ``grpo/critic_refresh.json`` lists every critic refresh (when on). The
    ``sum`` shaping's scale is resolved first (:func:`~memprm.stages.sum_scale.resolve_sum_scale`).

    Resume after a kill: every ``grpo.checkpoint_every`` optimizer steps ``grpo/checkpoints/last.ckpt`` is
    written (atomically) with the policy's trainable weights, the optimizer, the loops, every callback's
    state, the rollout DataModule's state and the global random generators
    (:mod:`memprm.callbacks.resume_state`). ``grpo/checkpoints/key.json`` holds the hash of the config the
    checkpoint belongs to: the stage resumes from ``last.ckpt`` only under the same hash (else it starts
    over, clearing the checkpoints and ``tb/grpo``), cuts ``tb/grpo``'s event files back to the checkpoint
    (:mod:`memprm.stages.tb_resume`) and appends the optimizer step it starts from to ``grpo/starts.json``.
    Ctrl-C or SIGTERM writes ``last.ckpt`` after the current batch and raises
    :class:`~memprm.callbacks.signal_stop.FitInterrupted` (:mod:`memprm.callbacks.signal_stop`)."""
    from memprm.callbacks import CriticRefresh, DevCheckpointSelection, LambdaAnnealing, ShapingShareMonitor
    from memprm.callbacks.llm_failures import LLMFailureStop
    from memprm.callbacks.resume_state import AtomicCheckpointIO, ResumeState, StepCheckpoint
    from memprm.callbacks.signal_stop import StopOnSignal
    from memprm.models.critic_retrain import CriticHandle
    from memprm.models.grpo_module import GRPOPolicyModule
    from memprm.rollout.datamodule import RolloutDataModule
    from memprm.stages.tb_resume import ResumableTensorBoardLogger

    stack, run_dir, dev_selection = run.stack, run.dir, selection_split(cfg, run.splits)
    critic = _shaping_critic(cfg, run)
    handle = CriticHandle(critic) if critic is not None else None
    score = handle.score if handle is not None else None
    ckpt_dir = run_dir / "grpo" / "checkpoints"
    ckpt_path = _resume_point(ckpt_dir, run_dir / "tb" / "grpo", run.keys["grpo"].digest)
    teacher = run.stage_one / "teacher" / "train"
    rollout = resolve_sum_scale(cfg.rollout, critic, teacher, ckpt_dir, resuming=ckpt_path is not None)
    runner = GroupRunner(stack.env, cfg.credit, rollout, score, stack.stopwatch)
    dm = RolloutDataModule(runner, episode_dialogues(cfg, run.splits), cfg.rollout_data, policy=run.policy)
    # the KL penalty's reference is the policy GRPO starts from (SFT's, or the untrained one)
    reference = trainable_state(run.policy) if cfg.grpo.beta_kl > 0 else None
    module = GRPOPolicyModule(run.policy, cfg.grpo, reference=reference)

    def dev_accuracy(p) -> float:
        return evaluate_manager(
            stack.env, dev_selection, greedy_manager(p), desc="dev", progress=False
        ).accuracy

    selection = DevCheckpointSelection(
        dev_accuracy,
        cfg.dev_selection,
        dirpath=run_dir / "grpo",
        dialogues=dev_selection,
        test_dialogue_ids={d.id for d in run.splits["test"]},
    )
    callbacks = [
        LambdaAnnealing(cfg.grpo.lambda0, cfg.grpo.lambda_inf, cfg.grpo.k_decay),
        selection,
        ShapingShareMonitor(cfg.shaping_monitor),
        LLMFailureStop(cfg.llm.max_failure_share),
        *run.grpo_callbacks,
    ]
    if cfg.drift.enabled and cfg.policy.kind == "scoring":  # run.policy is still GRPO's start: the reference
        from memprm.callbacks import PolicyDriftMonitor

        callbacks.append(PolicyDriftMonitor.from_play(cfg.drift, run.policy, stack.env, dev_selection))
    elif cfg.drift.enabled:
        log.warning("GRPO: drift monitoring needs policy.kind=scoring; skipped for %r", cfg.policy.kind)
    refresh = None
    if handle is not None and cfg.critic_refresh.every_n_steps > 0:
        audit = _validity_audit(cfg, stack, run.splits["dev"], run.stage_one)
        refresh = CriticRefresh(handle, cfg.critic_refresh, audit)
        callbacks.append(refresh)
    logger = ResumableTensorBoardLogger(str(run_dir / "tb"), "grpo", ckpt_dir / "tb_sizes.json")
    if ckpt_path is not None:
        logger.resume_at(*_resume_facts(ckpt_path))
        module.strict_loading = False  # checkpoints hold the trainable weights only (ResumeState)
    resume = ResumeState(run_dir / "grpo" / "starts.json")
    stop = StopOnSignal(ckpt_dir / "last.ckpt")
    callbacks += [resume, stop]
    if cfg.grpo.checkpoint_every > 0:
        callbacks.append(StepCheckpoint(ckpt_dir, cfg.grpo.checkpoint_every))
    budget = cfg.grpo.batch_budget
    trainer = build_trainer(
        cfg.trainer,
        run_dir / "tb",
        "grpo",
        callbacks,
        max_steps=cfg.grpo.max_steps,
        max_epochs=1,
        limit_train_batches=budget,
        logger=logger,
        plugins=[AtomicCheckpointIO()],
        enable_checkpointing=cfg.grpo.checkpoint_every > 0,
    )
    logger.progress = lambda: trainer.fit_loop.epoch_loop.batch_progress.total.ready
    with (
        stop.armed(),
        warnings.catch_warnings(),
    ):  # the episodes do resume: through the DataModule's state, not the loader's
        warnings.filterwarnings("ignore", message=".*your dataloader is not resumable")
        warnings.filterwarnings("ignore", message=".*Checkpoint directory .* exists and is not empty")
        trainer.fit(module, dm, ckpt_path=ckpt_path)
    batches = trainer.fit_loop.epoch_loop.batch_progress.total.completed
    if refresh is not None and trainer.is_global_zero:  # every refresh: step, replay size, kept / rolled back
        history = [asdict(r) for r in refresh.history]
        atomic_write_text(
            run_dir / "grpo" / "critic_refresh.json", json.dumps({"history": history}, indent=1)
        )
    rollouts = dm.rollouts_played * trainer.world_size
    if trainer.global_step < cfg.grpo.max_steps:
        cap = cfg.rollout_data.max_rollouts
        warnings.warn(
            f"GRPO stopped at its batch budget ({batches} of grpo.max_batches = {budget} batches; {rollouts} "
            f"rollouts{f', rollout_data.max_rollouts = {cap} per rank' if cap else ''}) after "
            f"{trainer.global_step} of grpo.max_steps = {cfg.grpo.max_steps} optimizer steps: batches whose "
            "groups all had equal rewards took no step (see grpo/skipped_frac in TensorBoard)"
            + (", and local re-runs took rollouts of the budget" if cfg.rollout.local.p > 0 else ""),
            stacklevel=2,
        )
    sw = runner.stopwatch.seconds
    outside = 1.0 - sw.get("rollout_models", 0.0) / max(sw.get("rollout", 0.0), 1e-9)
    return GRPOStageResult(
        trainer.global_step,
        batches,
        selection.best_score,
        selection.best_step,
        outside,
        resume.start_step or 0,
        rollout.sum_scale if rollout.shaping == "sum" else None,
        rollouts,
    )


def _shaping_critic(cfg, run: Run):
    """The critic the rollouts are shaped by: none when ``rollout.shaping`` is ``none``; else this run's
    stage one, or, without a ``critic`` stage, the one saved in ``fit.stage_one_dir``."""
    if cfg.rollout.shaping == "none":
        return None
    if run.out.critic is not None:
        return run.out.critic.critic
    from memprm.stages.critic_stage import load_critic_stage

    log.info("GRPO: shaped by the critic of %s", run.stage_one / "critic")
    return load_critic_stage(run.stage_one).critic


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
        v = cfg.validity
        score = lambda t: critic.score(list(t))[0]  # noqa: E731
        return critic_validity(
            score, relabeled, trajs, dev, stack.env, v.thresholds, v.deletion_frac, cfg.seed
        )

    return audit
