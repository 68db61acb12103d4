"""Stage one: teacher trajectories → hindsight relabeling → the memory-utility critic → validity report.

Artifacts under the run folder:

    teacher/train/, teacher/dev/    teacher trajectories (reloaded, not recomputed, when present)
    critic/                         the exported critic (LoRA adapter + heads, a few MB)
    critic/validity/report.{json,md} the validity checks on the dev dialogue(s)
    tb/critic/                      TensorBoard: train/val losses, Spearman, AUROC, the validity checks
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from memprm.data.critic_data import CriticDataModule
from memprm.data.records import Dialogue
from memprm.env.trajectories import DialogueTrajectory, load_trajectories, run_trajectories, save_trajectories
from memprm.eval import ValidityReport
from memprm.eval.validity import ValidityConfig
from memprm.models.critic import CriticConfig, CriticModule, FrozenCritic, save_critic
from memprm.stages.critic_validity import critic_validity
from memprm.stages.relabel import relabel_all
from memprm.stages.roles import Stack
from memprm.stages.trainer import TrainerConfig, build_trainer

log = logging.getLogger("memprm.stages")


@dataclass(frozen=True)
class CriticStageResult:
    critic: FrozenCritic
    report: ValidityReport | None  # None when stage one was reused from another run
    relabel_counts: dict[str, int]
    n_train: int
    n_val: int
    seconds: float


def teacher_trajectories(
    stack: Stack, dialogues: tuple[Dialogue, ...], folder: Path, desc: str
) -> list[DialogueTrajectory]:
    """Run the teacher over ``dialogues`` once; later calls reload ``folder``."""
    ids = [d.id for d in dialogues]
    if (folder / "manifest.json").is_file():
        trajs, _ = load_trajectories(folder)
        if [t.dialogue_id for t in trajs] == ids:
            log.info("reusing teacher trajectories in %s", folder)
            return trajs
        log.warning("%s holds other dialogues; recomputing", folder)
    trajs = run_trajectories(stack.env, dialogues, stack.teacher, stack.cache(), desc=desc)
    save_trajectories(folder, trajs, {"dialogues": ids})
    return trajs


def run_critic_stage(
    stack: Stack,
    train: tuple[Dialogue, ...],
    dev: tuple[Dialogue, ...],
    run_dir: Path,
    critic_cfg: CriticConfig,
    relabel_cfg,
    trainer_cfg: TrainerConfig,
    validity_cfg: ValidityConfig,
    seed: int,
    model=None,
    tokenizer=None,
) -> CriticStageResult:
    t0 = time.perf_counter()
    train_trajs = teacher_trajectories(stack, train, run_dir / "teacher" / "train", "teacher (train)")
    dev_trajs = teacher_trajectories(stack, dev, run_dir / "teacher" / "dev", "teacher (dev)")
    train_lab, counts = relabel_all(train_trajs, stack.embedder, relabel_cfg)
    dev_lab, _ = relabel_all(dev_trajs, stack.embedder, relabel_cfg)
    train_ex = [e for r in train_lab for e in r.examples]
    dev_ex = [e for r in dev_lab for e in r.examples]
    module = CriticModule(critic_cfg, model=model, tokenizer=tokenizer)
    dm = CriticDataModule(
        train_ex, dev_ex, module.tokenizer, critic_cfg.max_length, critic_cfg.batch_size, seed,
        truncation_side=critic_cfg.truncation_side,
    )  # fmt: skip
    trainer = build_trainer(trainer_cfg, run_dir / "tb", "critic", max_epochs=critic_cfg.max_epochs)
    trainer.fit(module, dm)
    critic = module.to_frozen()
    out = run_dir / "critic"
    save_critic(critic, out)
    report = critic_validity(
        lambda texts: critic.score(list(texts))[0], dev_lab, dev_trajs, dev, stack.env,
        validity_cfg.thresholds, validity_cfg.deletion_frac, seed,
    )  # fmt: skip
    report.write(out / "validity")
    (out / "relabel_counts.json").write_text(json.dumps(counts, indent=2))
    _log_validity(trainer, report)
    return CriticStageResult(critic, report, counts, len(train_ex), len(dev_ex), time.perf_counter() - t0)


def load_critic_stage(stage_one: Path) -> CriticStageResult:
    """Stage one of an earlier run (``stage_one`` = its run folder): its critic (the validity report stays
    in that folder; ``report`` is None here)."""
    from memprm.models.critic import load_critic

    folder = stage_one / "critic"
    if not (folder / "critic.json").is_file():
        raise FileNotFoundError(f"{folder} holds no trained critic (fit.stage_one_dir={str(stage_one)!r})")
    counts = json.loads((folder / "relabel_counts.json").read_text())
    return CriticStageResult(load_critic(folder), None, counts, 0, 0, 0.0)


def _log_validity(trainer, report: ValidityReport) -> None:
    exp = getattr(trainer.logger, "experiment", None)
    if exp is None:
        return
    for key, value in _flat_scalars(report.to_dict()).items():
        exp.add_scalar(f"validity/{key}", value, trainer.global_step)
    exp.add_text("validity/report", report.to_markdown(), trainer.global_step)


def _flat_scalars(d: dict, prefix: str = "") -> dict[str, float]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat_scalars(v, f"{prefix}{k}/"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
            out[f"{prefix}{k}"] = float(v)
    return out
