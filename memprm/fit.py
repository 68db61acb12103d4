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

Rerunning the same command resumes: every stage writes its outputs atomically, then a completion marker
``stages/<stage>.json`` holding the hash of the config it depends on (:mod:`memprm.stages.markers`, the keys
in :mod:`memprm.stages.stage_keys`). A stage whose marker matches is skipped and its outputs loaded; one whose
settings changed is redone and the log names the changed settings; a killed GRPO stage continues from
``grpo/checkpoints/last.ckpt``. A ``config.yaml`` that differs from this run's is kept as ``config.<k>.yaml``.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.config import MemprmConfig, config_yaml
from memprm.data.source import load_source
from memprm.memory.embedder import check_embedder
from memprm.stages.markers import Markers, StageKey
from memprm.stages.stage_keys import fresh_stage, plan_keys, write_config

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
    stage's Trainer (monitors of your own, benchmarks).

    Rerunning the same command skips every stage whose completion marker holds this config's hash (its
    outputs are loaded), redoes those whose settings changed (the log names them) and resumes a killed GRPO
    stage from its last checkpoint (:mod:`memprm.stages.markers`, :mod:`memprm.stages.stage_keys`)."""
    from memprm.env.stack import check_llm_keys

    check_llm_keys(cfg)  # bad setup fails in a second, before anything is loaded or written
    splits = load_source(cfg.data)
    check_embedder(cfg.embedder)

    from lightning import seed_everything

    from memprm.env.stack import build_stack
    from memprm.llm.failures import stage_counters
    from memprm.logs import set_progress_bars
    from memprm.timing import Stopwatch

    seed_everything(cfg.seed, workers=True, verbose=False)
    set_progress_bars(cfg.trainer.progress_bar)
    run_dir = Path(cfg.output_dir) / cfg.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    config_text = config_yaml(cfg)
    version = write_config(run_dir, config_text)
    if version is not None:
        _log_config_text(run_dir, config_text, version)
    res, stages = FitResult(run_dir), cfg.fit.stages
    stack = build_stack(cfg, Stopwatch())
    stage_one = Path(cfg.fit.stage_one_dir) if cfg.fit.stage_one_dir else run_dir
    own = stage_one == run_dir
    keys = plan_keys(cfg, splits, None if own else Markers(stage_one).hash_of("critic") or "missing")
    markers = Markers(run_dir)
    calibrate_reader(cfg, stack, splits, run_dir, keys.get("calibration"))
    policy = untrained = None
    if {"sft", "grpo", "test"} & set(stages):
        from memprm.models.policies import build_policy

        policy = build_policy(cfg.policy)
        untrained = {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad}

    def timed(name, fn):
        seed_everything(stage_seed(cfg.seed, name), workers=True, verbose=False)
        t0 = time.perf_counter()
        with stage_counters(run_dir, name):  # LLM calls and failures of the stage -> llm_counters.json
            out = fn()
        res.seconds[name] = time.perf_counter() - t0
        return out

    if "critic" in stages or "sft" in stages:
        from memprm.stages.critic_stage import load_critic_stage, run_critic_stage, teacher_trajectories

        if "critic" in stages and not own:
            res.critic = timed("critic", lambda: load_critic_stage(stage_one))
            print(f"\ncritic reused from {stage_one / 'critic'}")
        elif "critic" in stages and markers.done(keys["critic"], "critic stage"):
            res.critic = timed("critic", lambda: load_critic_stage(run_dir))
            print(f"\ncritic stage: done earlier with this config, reused from {run_dir / 'critic'}")
        elif "critic" in stages:
            fresh_stage(run_dir, "critic", markers)
            res.critic = timed("critic", lambda: run_critic_stage(
                stack, splits["train"], splits["dev"], run_dir, cfg.critic, cfg.relabel, cfg.trainer,
                cfg.validity, cfg.seed, teacher_keys=(keys["teacher:train"], keys["teacher:dev"])))  # fmt: skip
            markers.write(keys["critic"])
            c = res.critic
            print(
                f"\ncritic stage ({res.seconds['critic']:.0f} s): {c.n_train} train / {c.n_val} dev examples"
            )
            print(c.report.to_markdown())
        if "sft" in stages:
            from memprm.stages.sft_stage import load_policy, run_sft_stage

            if markers.done(keys["sft"], "SFT stage") and _sft_outputs(run_dir, cfg.sft.steps):
                if cfg.sft.steps:
                    load_policy(policy, run_dir / "policy_sft.pt")
                    res.sft_losses = json.loads((run_dir / "sft_losses.json").read_text())
                print(f"SFT: done earlier with this config, policy loaded from {run_dir / 'policy_sft.pt'}")
            else:
                fresh_stage(run_dir, "sft", markers)
                trajs = teacher_trajectories(stack, splits["train"], stage_one / "teacher" / "train",
                                             "teacher (train)", keys["teacher:train"], Markers(stage_one))  # fmt: skip
                res.sft_losses = timed("sft", lambda: run_sft_stage(policy, trajs, splits["train"], cfg.sft,
                                                                   run_dir, cfg.seed, stack.env.notes))  # fmt: skip
                markers.write(keys["sft"])
            if res.sft_losses:
                print(
                    f"SFT: loss {res.sft_losses[0]:.3f} -> {res.sft_losses[-1]:.3f} over {len(res.sft_losses)} steps"
                )
    sft_state = (
        {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad} if policy else None
    )
    if "grpo" in stages:
        res.grpo = _grpo(cfg, stack, policy, res, splits, run_dir, stage_one, keys["grpo"], markers, timed,
                         grpo_callbacks)  # fmt: skip
        print(
            f"GRPO: {res.grpo.steps} steps over {res.grpo.batches} batches; best dev-selection accuracy {res.grpo.best_dev_accuracy} at step "
            f"{res.grpo.best_step}; rollout time outside model forwards: {100 * res.grpo.outside_models_share:.1f}%"
        )
    if "test" in stages:
        if markers.done(keys["test"], "test stage") and (run_dir / "test_results.json").is_file():
            res.test, res.table = _load_test(run_dir)
        else:
            markers.clear("test")
            res.test, res.table = timed("test", lambda: _test(cfg, stack, policy, untrained, sft_state, splits,
                                                              run_dir, stages, res.critic))  # fmt: skip
            markers.write(keys["test"])
        print("\n" + res.table)
    atomic_write_text(run_dir / "timings.json", json.dumps(res.seconds, indent=2))
    print(f"\nrun folder: {run_dir}  (tensorboard --logdir {Path(cfg.output_dir)})")
    return res


def finished(cfg: MemprmConfig) -> bool:
    """True when every stage of ``cfg.fit.stages`` has a completion marker with this config's hash in the run
    folder (what ``experiments/run_ladder.py`` skips); loads the data, builds nothing."""
    run_dir = Path(cfg.output_dir) / cfg.run_name
    if not (run_dir / "stages").is_dir():
        return False
    stage_one = Path(cfg.fit.stage_one_dir) if cfg.fit.stage_one_dir else run_dir
    critic = None if stage_one == run_dir else Markers(stage_one).hash_of("critic") or "missing"
    keys, markers = plan_keys(cfg, load_source(cfg.data), critic), Markers(run_dir)
    own = [s for s in cfg.fit.stages if s != "critic" or stage_one == run_dir]
    return all(markers.hash_of(s) == keys[s].digest for s in own)


def _sft_outputs(run_dir: Path, steps: int) -> bool:
    return steps == 0 or all((run_dir / f).is_file() for f in ("policy_sft.pt", "sft_losses.json"))


def _grpo(cfg, stack, policy, res, splits, run_dir, stage_one, key, markers, timed, callbacks):
    """The GRPO stage: skipped when done under ``key`` (its final policy loaded), else run or resumed; its
    final policy (``policy_grpo.pt``) and result (``grpo/result.json``) are written before its marker."""
    from memprm.stages.grpo_stage import GRPOStageResult, run_grpo_stage
    from memprm.stages.sft_stage import load_policy, save_policy

    result_path = run_dir / "grpo" / "result.json"
    if markers.done(key, "GRPO stage") and (run_dir / "policy_grpo.pt").is_file() and result_path.is_file():
        load_policy(policy, run_dir / "policy_grpo.pt")
        print(f"GRPO: done earlier with this config, policy loaded from {run_dir / 'policy_grpo.pt'}")
        return GRPOStageResult(**json.loads(result_path.read_text()))
    markers.clear("grpo")
    critic = res.critic.critic if res.critic is not None and cfg.rollout.shaping != "none" else None
    out = timed("grpo", lambda: run_grpo_stage(
        cfg, stack, policy, critic, splits["train"], splits["dev_selection"], {d.id for d in splits["test"]},
        run_dir, cfg.trainer, extra_callbacks=callbacks, dev=splits["dev"], stage_one=stage_one,
        digest=key.digest))  # fmt: skip
    save_policy(policy, run_dir / "policy_grpo.pt")
    atomic_write_text(result_path, json.dumps(asdict(out), indent=1))
    markers.write(key)
    return out


def _load_test(run_dir: Path):
    from memprm.env.evaluate import EvalResult

    results = {k: EvalResult(**v) for k, v in json.loads((run_dir / "test_results.json").read_text()).items()}
    print("test stage: done earlier with this config; its table:")
    return results, (run_dir / "test_results.md").read_text().rstrip("\n")


def calibrate_reader(cfg: MemprmConfig, stack, splits, run_dir: Path | None = None, key: StageKey | None = None):
    """Choose the extractive reader's abstention threshold on the dev calibration half with the teacher
    (:mod:`memprm.env.calibration`), before any exam; written to ``reader_calibration.json``. With ``key``
    and a ``run_dir`` whose calibration marker holds its hash, the saved choice is applied instead."""
    if cfg.reader.kind != "extractive" or not cfg.reader.calibrate_abstention:
        return None
    from memprm.env.calibration import Calibration, calibrate_abstention

    path = None if run_dir is None else run_dir / "reader_calibration.json"
    markers = None if run_dir is None or key is None else Markers(run_dir)
    if markers is not None and markers.done(key, "reader calibration") and path.is_file():
        cal = Calibration(**json.loads(path.read_text()))
        stack.env.reader.overlap_weight, stack.env.reader.abstain_threshold = cal.overlap_weight, cal.threshold
    else:
        cal = calibrate_abstention(stack.env, splits["dev_calibration"], stack.teacher)
        if path is not None:
            atomic_write_text(path, json.dumps(cal.as_dict(), indent=2))
        if markers is not None:
            markers.write(key)
    print(
        f"reader abstention threshold {cal.threshold:.3f}, overlap weight {cal.overlap_weight} (dev calibration: {cal.n_questions} questions, "
        f"{cal.n_unanswerable} unanswerable; accuracy {cal.accuracy:.3f} vs {cal.accuracy_never:.3f} never abstaining)"
    )
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


def _log_config_text(run_dir: Path, text: str, version: int) -> None:
    """The resolved config as TensorBoard text at step ``version`` (0, then one step per changed config)."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(run_dir / "tb" / "config")) as w:
        w.add_text("config", "```yaml\n" + text + "```", version)
