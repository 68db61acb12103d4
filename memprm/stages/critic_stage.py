"""Stage one: teacher trajectories → hindsight relabeling → the memory-utility critic → validity report.

Artifacts under the run folder:

    teacher/train/, teacher/dev/    teacher trajectories (reloaded, not recomputed, when their completion
                                    marker ``stages/teacher_<split>.json`` holds this config's hash)
    critic/                         the exported critic (LoRA adapter + heads, a few MB)
    critic/validity/report.{json,md} the validity checks on the dev dialogue(s)
    critic/mc_targets.json          ``critic.target=mc`` only: the cost of the MC targets (continuation
                                    rollouts, reader/judge calls, seconds) and every sampled step's returns
    tb/critic/                      TensorBoard: train/val losses, Spearman, AUROC, the validity checks
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from memprm.atomic import atomic_write_text, replace_dir
from memprm.data.records import Dialogue
from memprm.env.stack import Stack
from memprm.env.trajectories import DialogueTrajectory, load_trajectories, run_trajectories, save_trajectories
from memprm.eval import ValidityReport
from memprm.eval.validity import ValidityConfig
from memprm.models.critic import CriticConfig, CriticModule, FrozenCritic, save_critic
from memprm.models.critic_data import CriticDataModule
from memprm.stages.critic_validity import critic_validity
from memprm.stages.markers import Markers, StageKey
from memprm.stages.mc_targets import mc_summary, mc_train_examples
from memprm.stages.relabel_stage import relabel_all
from memprm.stages.run_context import Run, StageResult
from memprm.stages.stage_keys import fresh_stage
from memprm.stages.trainer import TrainerConfig, build_trainer

log = logging.getLogger("memprm.stages")
MC_FILE = "mc_targets.json"


@dataclass(frozen=True)
class CriticStageResult:
    critic: FrozenCritic
    report: ValidityReport | None  # None when stage one was reused from another run
    relabel_counts: dict[str, int]
    n_train: int
    n_val: int
    seconds: float
    #: ``critic.target=mc``: the MC targets' cost (:class:`memprm.stages.mc_targets.MCCost` as a dict).
    mc_cost: dict | None = None


def critic(cfg, run: Run) -> StageResult:
    """Stage one of ``run``: reused from ``fit.stage_one_dir`` or from this folder when done under this
    config, else computed (:func:`run_critic_stage`). ``cfg``: a :class:`memprm.config.MemprmConfig`."""
    if not run.own_stage_one:
        with run.measure("critic"):
            run.out.critic = load_critic_stage(run.stage_one)
        return StageResult("critic", True, f"critic reused from {run.stage_one / 'critic'}")
    if run.reusable("critic", "critic stage"):
        with run.measure("critic"):
            run.out.critic = load_critic_stage(run.dir)
        return StageResult(
            "critic", True, f"critic stage: done earlier with this config, reused from {run.dir / 'critic'}"
        )
    fresh_stage(run.dir, "critic", run.markers)
    teacher_keys = (run.keys["teacher:train"], run.keys["teacher:dev"])
    with run.measure("critic") as m:
        c = run.out.critic = run_critic_stage(
            run.stack,
            run.splits["train"],
            run.splits["dev"],
            run.dir,
            cfg.critic,
            cfg.relabel,
            cfg.trainer,
            cfg.validity,
            cfg.seed,
            teacher_keys=teacher_keys,
        )
    run.markers.write(run.keys["critic"])
    summary = f"critic stage ({m.seconds:.0f} s): {c.n_train} train / {c.n_val} dev examples\n"
    if c.mc_cost is not None:
        summary += mc_summary(c.mc_cost) + "\n"
    summary += c.report.to_markdown()
    return StageResult("critic", False, summary)


def teacher_trajectories(
    stack: Stack,
    dialogues: tuple[Dialogue, ...],
    folder: Path,
    desc: str,
    key: StageKey | None = None,
    markers: Markers | None = None,
) -> list[DialogueTrajectory]:
    """Run the teacher over ``dialogues`` once and save them to ``folder`` (atomically); later calls reload
    them. With ``key`` and ``markers`` they are reloaded only when the marker of ``key.stage`` holds the same
    config hash (else recomputed, and the log says which settings changed); without, when the dialogue ids
    match (tools that manage their own folders)."""
    ids = [d.id for d in dialogues]
    if key is not None and markers is not None:
        if markers.done(key, f"teacher trajectories ({folder})") and (folder / "manifest.json").is_file():
            return load_trajectories(folder)[0]
    elif (folder / "manifest.json").is_file():
        trajs, _ = load_trajectories(folder)
        if [t.dialogue_id for t in trajs] == ids:
            log.info("reusing teacher trajectories in %s", folder)
            return trajs
        log.warning("%s holds other dialogues; recomputing", folder)
    trajs = run_trajectories(stack.env, dialogues, stack.teacher, stack.cache(), desc=desc)
    with replace_dir(folder) as tmp:
        save_trajectories(tmp, trajs, {"dialogues": ids, "config_hash": key.digest if key else None})
    if key is not None and markers is not None:
        markers.write(key)
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
    teacher_keys: tuple[StageKey, StageKey] | None = None,
) -> CriticStageResult:
    """Stage one in ``run_dir`` (module doc). ``teacher_keys`` (train, dev): the teacher trajectories' stage
    keys, so they are reused only under the same config (:func:`teacher_trajectories`). ``critic/`` is
    written whole (a temporary folder swapped in)."""
    t0 = time.perf_counter()
    markers = Markers(run_dir) if teacher_keys is not None else None
    tk, dk = teacher_keys or (None, None)
    train_trajs = teacher_trajectories(
        stack, train, run_dir / "teacher" / "train", "teacher (train)", tk, markers
    )
    dev_trajs = teacher_trajectories(stack, dev, run_dir / "teacher" / "dev", "teacher (dev)", dk, markers)
    train_lab, counts = relabel_all(train_trajs, stack.embedder, relabel_cfg)
    dev_lab, _ = relabel_all(dev_trajs, stack.embedder, relabel_cfg)
    mc = None
    if critic_cfg.target == "mc":  # φ on continuation returns (memprm.stages.mc_targets)
        train_ex, mc_steps, mc = mc_train_examples(stack, train, train_trajs, train_lab, critic_cfg, seed)
        log.info("%s", mc_summary(mc.to_dict()))
    else:
        train_ex = [e for r in train_lab for e in r.examples]
    dev_ex = [e for r in dev_lab for e in r.examples]
    module = CriticModule(critic_cfg, model=model, tokenizer=tokenizer)
    dm = CriticDataModule(
        train_ex,
        dev_ex,
        module.tokenizer,
        critic_cfg.max_length,
        critic_cfg.batch_size,
        seed,
        truncation_side=critic_cfg.truncation_side,
        miss_repeats=critic_cfg.miss_repeats,
    )
    trainer = build_trainer(trainer_cfg, run_dir / "tb", "critic", max_epochs=critic_cfg.max_epochs)
    trainer.fit(module, dm)
    critic = module.to_frozen()
    report = critic_validity(
        lambda texts: critic.score(list(texts))[0],
        dev_lab,
        dev_trajs,
        dev,
        stack.env,
        validity_cfg.thresholds,
        validity_cfg.deletion_frac,
        seed,
    )
    with replace_dir(run_dir / "critic") as out:
        save_critic(critic, out)
        report.write(out / "validity")
        atomic_write_text(out / "relabel_counts.json", json.dumps(counts, indent=2))
        atomic_write_text(out / "sizes.json", json.dumps({"n_train": len(train_ex), "n_val": len(dev_ex)}))
        if mc is not None:
            steps = [asdict(s) | {"target": s.target} for s in mc_steps]
            atomic_write_text(out / MC_FILE, json.dumps({"cost": mc.to_dict(), "steps": steps}, indent=1))
    _log_validity(trainer, report)
    mc_cost = None if mc is None else mc.to_dict()
    _log_scalars(trainer, "mc_targets/", mc_cost or {})
    return CriticStageResult(
        critic, report, counts, len(train_ex), len(dev_ex), time.perf_counter() - t0, mc_cost
    )


def load_critic_stage(stage_one: Path) -> CriticStageResult:
    """Stage one of an earlier run (``stage_one`` = its run folder): its critic (the validity report stays
    in that folder; ``report`` is None here)."""
    from memprm.models.critic import load_critic

    folder = stage_one / "critic"
    if not has_critic(stage_one):
        raise FileNotFoundError(f"{folder} holds no trained critic (fit.stage_one_dir={str(stage_one)!r})")
    counts = json.loads((folder / "relabel_counts.json").read_text())
    sizes = folder / "sizes.json"
    n = json.loads(sizes.read_text()) if sizes.is_file() else {"n_train": 0, "n_val": 0}
    mc = json.loads((folder / MC_FILE).read_text())["cost"] if (folder / MC_FILE).is_file() else None
    return CriticStageResult(load_critic(folder), None, counts, n["n_train"], n["n_val"], 0.0, mc)


def has_critic(stage_one: Path) -> bool:
    """True when the run folder ``stage_one`` holds stage one's exported critic (what
    :func:`load_critic_stage` loads)."""
    return (Path(stage_one) / "critic" / "critic.json").is_file()


def _log_validity(trainer, report: ValidityReport) -> None:
    exp = getattr(trainer.logger, "experiment", None)
    if exp is None:
        return
    _log_scalars(trainer, "validity/", report.to_dict())
    exp.add_text("validity/report", report.to_markdown(), trainer.global_step)


def _log_scalars(trainer, prefix: str, d: dict) -> None:
    exp = getattr(trainer.logger, "experiment", None)
    for key, value in _flat_scalars(d).items() if exp is not None else ():
        exp.add_scalar(f"{prefix}{key}", value, trainer.global_step)


def _flat_scalars(d: dict, prefix: str = "") -> dict[str, float]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat_scalars(v, f"{prefix}{k}/"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
            out[f"{prefix}{k}"] = float(v)
    return out
