"""``fit(cfg)``: the whole pipeline as one plain function (what ``python -m memprm fit`` and the tests call).

Stages, in order (``fit.stages`` chooses a subset; an arm is a config, not a code path):

1. ``critic``: teacher trajectories on train and dev → hindsight relabeling → the critic → validity report;
2. ``sft``: the policy initialized on the teacher's operations;
3. ``grpo``: GRPO on grouped rollouts of the train dialogues (critic frozen unless refresh is configured),
   dev-checkpoint selection on the dev *selection* half, the best policy loaded at the end;
4. ``test``: held-out test accuracy and context tokens of the untrained, SFT and trained policies (those the
   run has) beside the heuristic teacher, as a table (``fit.test_baselines=false``: the final policy only).

Everything goes under the run folder ``<output_dir>/<run_name>`` (``run_name`` defaults to
``<arm>-seed<seed>``): the resolved ``config.yaml``, teacher trajectories, the critic, policy weights, the
result tables and every stage's TensorBoard logs under ``tb/``, so ``tensorboard --logdir runs/`` overlays
the ladder's arms.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from memprm.config import MemprmConfig, to_dict
from memprm.data.source import load_source

log = logging.getLogger("memprm.fit")


@dataclass
class FitResult:
    run_dir: Path
    seconds: dict[str, float] = field(default_factory=dict)
    critic: object | None = None  # CriticStageResult
    sft_losses: list[float] = field(default_factory=list)
    grpo: object | None = None  # GRPOStageResult
    test: dict[str, object] = field(default_factory=dict)  # manager name -> EvalResult
    table: str = ""


def fit(cfg: MemprmConfig, grpo_callbacks: Sequence = ()) -> FitResult:
    """Run ``cfg.fit.stages`` in order; ``grpo_callbacks`` are extra Lightning callbacks for the GRPO
    stage's Trainer (monitors of your own, benchmarks)."""
    from lightning import seed_everything

    from memprm.env.rollout import Stopwatch
    from memprm.llm.failures import stage_counters
    from memprm.logs import set_progress_bars
    from memprm.stages.roles import build_stack

    seed_everything(cfg.seed, workers=True, verbose=False)
    set_progress_bars(cfg.trainer.progress_bar)
    run_dir = Path(cfg.output_dir) / cfg.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(to_dict(cfg))))
    _log_config_text(run_dir, cfg)
    res, stages = FitResult(run_dir), cfg.fit.stages
    splits = load_source(cfg.data)
    stack = build_stack(cfg, Stopwatch())
    calibrate_reader(cfg, stack, splits, run_dir)
    policy = untrained = None
    if {"sft", "grpo", "test"} & set(stages):
        from memprm.models.policy_config import build_policy

        policy = build_policy(cfg.policy)
        untrained = {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad}

    def timed(name, fn):
        seed_everything(stage_seed(cfg.seed, name), workers=True, verbose=False)
        t0 = time.perf_counter()
        with stage_counters(run_dir, name):  # LLM calls and failures of the stage -> llm_counters.json
            out = fn()
        res.seconds[name] = time.perf_counter() - t0
        return out

    stage_one = Path(cfg.fit.stage_one_dir) if cfg.fit.stage_one_dir else run_dir
    if "critic" in stages or "sft" in stages:
        from memprm.stages.critic_stage import load_critic_stage, run_critic_stage, teacher_trajectories

        if "critic" in stages and stage_one != run_dir:
            res.critic = timed("critic", lambda: load_critic_stage(stage_one))
            print(f"\ncritic reused from {stage_one / 'critic'}")
        elif "critic" in stages:
            res.critic = timed("critic", lambda: run_critic_stage(
                stack, splits["train"], splits["dev"], run_dir, cfg.critic, cfg.relabel, cfg.trainer,
                cfg.validity, cfg.seed))  # fmt: skip
            c = res.critic
            print(
                f"\ncritic stage ({res.seconds['critic']:.0f} s): {c.n_train} train / {c.n_val} dev examples"
            )
            print(c.report.to_markdown())
        if "sft" in stages:
            from memprm.stages.sft_stage import run_sft_stage

            trajs = teacher_trajectories(
                stack, splits["train"], stage_one / "teacher" / "train", "teacher (train)"
            )
            res.sft_losses = timed("sft", lambda: run_sft_stage(policy, trajs, splits["train"], cfg.sft, run_dir,
                                                               cfg.seed, stack.env.notes))  # fmt: skip
            if res.sft_losses:
                print(
                    f"SFT: loss {res.sft_losses[0]:.3f} -> {res.sft_losses[-1]:.3f} over {len(res.sft_losses)} steps"
                )
    sft_state = (
        {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad} if policy else None
    )
    if "grpo" in stages:
        from memprm.stages.grpo_stage import run_grpo_stage

        critic = res.critic.critic if res.critic is not None and cfg.rollout.shaping != "none" else None
        test_ids = {d.id for d in splits["test"]}
        res.grpo = timed(
            "grpo",
            lambda: run_grpo_stage(
                cfg,
                stack,
                policy,
                critic,
                splits["train"],
                splits["dev_selection"],
                test_ids,
                run_dir,
                cfg.trainer,
                extra_callbacks=grpo_callbacks,
                dev=splits["dev"],
                stage_one=stage_one,
            ),
        )
        print(
            f"GRPO: {res.grpo.steps} steps over {res.grpo.batches} batches; best dev-selection accuracy {res.grpo.best_dev_accuracy} at step "
            f"{res.grpo.best_step}; rollout time outside model forwards: {100 * res.grpo.outside_models_share:.1f}%"
        )
    if "test" in stages:
        res.test, res.table = timed("test", lambda: _test(cfg, stack, policy, untrained, sft_state, splits, run_dir,
                                                          stages, res.critic))  # fmt: skip
        print("\n" + res.table)
    (run_dir / "timings.json").write_text(json.dumps(res.seconds, indent=2))
    print(f"\nrun folder: {run_dir}  (tensorboard --logdir {Path(cfg.output_dir)})")
    return res


def calibrate_reader(cfg: MemprmConfig, stack, splits, run_dir: Path | None = None):
    """Choose the extractive reader's abstention threshold on the dev calibration half with the teacher
    (:mod:`memprm.env.calibration`), before any exam; written to ``reader_calibration.json``."""
    if cfg.reader.kind != "extractive" or not cfg.reader.calibrate_abstention:
        return None
    from memprm.env.calibration import calibrate_abstention

    cal = calibrate_abstention(stack.env, splits["dev_calibration"], stack.teacher)
    print(
        f"reader abstention threshold {cal.threshold:.3f}, overlap weight {cal.overlap_weight} (dev calibration: {cal.n_questions} questions, "
        f"{cal.n_unanswerable} unanswerable; accuracy {cal.accuracy:.3f} vs {cal.accuracy_never:.3f} never abstaining)"
    )
    if run_dir is not None:
        (run_dir / "reader_calibration.json").write_text(json.dumps(cal.as_dict(), indent=2))
    return cal


def stage_seed(seed: int, stage: str) -> int:
    """The seed a stage of a run with ``seed`` starts from: crc32 of ``"<seed>:<stage>"`` (a 32-bit value,
    the same on every machine and Python version)."""
    return zlib.crc32(f"{seed}:{stage}".encode())


def _test(cfg, stack, policy, untrained, sft_state, splits, run_dir, stages, critic_stage=None):
    """Test accuracy of every policy state the run has, beside the heuristic teacher; every exam is audited
    into ``test_audit.jsonl``, with the critic's φ at each gate when the run has a critic."""
    import torch

    from memprm.env.evaluate import evaluate_manager, greedy_manager
    from memprm.inspect.trail import TEST_TRAIL, TrailRecorder
    from memprm.stages.test_stage import write_results

    trail = TrailRecorder(cfg.credit, critic_stage.critic.score if critic_stage is not None else None)

    current = {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad}
    states = {"untrained": untrained}
    if "sft" in stages and cfg.sft.steps > 0:
        states["SFT"] = sft_state
    if "grpo" in stages:
        states[f"GRPO ({cfg.arm})"] = current
    results = {}
    if cfg.fit.test_baselines:
        results["heuristic teacher"] = evaluate_manager(stack.env, splits["test"], stack.teacher, "test: teacher",
                                                        audit=True, on_dialogue=trail.observer("heuristic teacher"))
    else:  # the run's final policy only
        states = dict([list(states.items())[-1]])
    params = dict(policy.named_parameters())
    for name, state in states.items():
        with torch.no_grad():
            for k, v in state.items():
                params[k].copy_(v)
        results[name] = evaluate_manager(stack.env, splits["test"], greedy_manager(policy), f"test: {name}",
                                         audit=True, on_dialogue=trail.observer(name))
    with torch.no_grad():  # leave the policy as training left it
        for k, v in current.items():
            params[k].copy_(v)
    trail.write(run_dir / TEST_TRAIL)
    return results, write_results(results, run_dir, "test")


def _log_config_text(run_dir: Path, cfg: MemprmConfig) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(run_dir / "tb" / "config")) as w:
        w.add_text("config", "```yaml\n" + OmegaConf.to_yaml(OmegaConf.create(to_dict(cfg))) + "```")
