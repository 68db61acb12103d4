"""SFT initialization of the policy on the teacher's operations, and policy weight files.

Each teacher gate decision is rebuilt into the observation the teacher saw (the turn from the dialogue, the
session date, the logged context and neighbours) and the action it took; the policy turns the pair into its
own training sample (``policy.sample_for``) and SFT minimizes −log π(teacher action), each sample weighted
by the inverse frequency of its action kind to the power ``sft.balance``. :func:`train_sft` runs it: a
Lightning Trainer (:func:`memprm.stages.trainer.build_trainer`, on the policy's device) fits
:class:`memprm.models.sft.SFTModule` on :func:`memprm.models.sft.sft_dataloader`'s batches, and the
per-step loss ``sft/loss`` goes to TensorBoard under ``tb/sft``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from memprm.atomic import atomic_write_text
from memprm.credit.tiers import TeacherDecision
from memprm.data.records import Dialogue
from memprm.env.gates import Action, Observation
from memprm.env.memory_env import session_timestamp
from memprm.env.policy import GateSample
from memprm.env.trajectories import DialogueTrajectory
from memprm.llm.notes import NoteWriter, notes_for
from memprm.llm.rule_notes import RuleNoteWriter
from memprm.models.trainable import load_trainable, save_trainable, trainable_state
from memprm.stages.markers import Markers
from memprm.stages.run_context import Run, StageResult
from memprm.stages.sft_config import SFTConfig
from memprm.stages.stage_keys import fresh_stage
from memprm.stages.trainer import TrainerConfig, build_trainer


def sft(cfg, run: Run) -> StageResult:
    """The SFT stage of ``run``: the policy loaded when done under its key, else trained on stage one's
    teacher trajectories (:func:`run_sft_stage`). The trained state is kept for the test table.
    ``cfg``: a :class:`memprm.config.MemprmConfig`."""
    from memprm.stages.critic_stage import teacher_trajectories

    outputs = ("policy_sft.pt", "sft_losses.json") if cfg.sft.steps else ()
    if run.reusable("sft", "SFT stage", *outputs):
        if cfg.sft.steps:
            load_trainable(run.policy, run.dir / "policy_sft.pt")
            run.out.sft_losses = json.loads((run.dir / "sft_losses.json").read_text())
        summary = f"SFT: done earlier with this config, policy loaded from {run.dir / 'policy_sft.pt'}"
        reused = True
    else:
        fresh_stage(run.dir, "sft", run.markers)
        folder, tkey = run.stage_one / "teacher" / "train", run.keys["teacher:train"]
        trajs = teacher_trajectories(
            run.stack, run.splits["train"], folder, "teacher (train)", tkey, Markers(run.stage_one)
        )
        with run.measure("sft"):
            run.out.sft_losses = run_sft_stage(
                run.policy, trajs, run.splits["train"], cfg.sft, run.dir, cfg.seed, run.stack.env.notes
            )
        run.markers.write(run.keys["sft"])
        summary, reused = "SFT: trained", False
    losses = run.out.sft_losses
    if losses:
        summary += f"; loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps"
    run.snapshots["SFT"] = trainable_state(run.policy)
    return StageResult("sft", reused, summary)


def observation_from_decision(
    dialogue: Dialogue, window: int, d: TeacherDecision, notes: NoteWriter | None = None
) -> Observation:
    """The observation the teacher saw; its notes are rewritten by ``notes`` (the environment's note writer,
    default the offline rule writer), which is deterministic or cached, so they equal the rollout's."""
    turn = dialogue.turn_index()[d.turn_id]
    session = next(s for s in dialogue.sessions if s.index == turn.session_index)
    ts = session_timestamp(session)
    offered = notes_for(notes if notes is not None else RuleNoteWriter(), turn, ts, d.layer)
    return Observation(dialogue.id, window, turn, ts, d.layer, d.context_turns, d.neighbours, offered)


def action_of(d: TeacherDecision) -> Action:
    if d.kind == "noop":
        return Action.noop()
    if d.kind == "write":
        return Action("write", d.content, d.key)
    return Action("merge", d.content, entry_id=d.target_entry_id)


def sft_samples(
    policy,
    trajs: Sequence[DialogueTrajectory],
    dialogues: Sequence[Dialogue],
    notes: NoteWriter | None = None,
) -> list[GateSample]:
    return [s for s, _ in samples_and_kinds(policy, trajs, dialogues, notes)]


def samples_and_kinds(
    policy, trajs, dialogues, notes: NoteWriter | None = None
) -> list[tuple[GateSample, str]]:
    """(the policy's sample, the teacher action's kind) for every teacher gate decision, in log order."""
    by_id = {d.id: d for d in dialogues}
    out = []
    for t in trajs:
        if t.dialogue_id not in by_id:
            raise ValueError(f"SFT: teacher trajectory for dialogue {t.dialogue_id!r}, which is not loaded")
        d = by_id[t.dialogue_id]
        for w in t.windows:
            out.extend(
                (policy.sample_for(observation_from_decision(d, w.window, x, notes), action_of(x)), x.kind)
                for x in w.decisions
            )
    return out


def run_sft_stage(
    policy, trajs, dialogues, cfg: SFTConfig, run_dir: Path, seed: int, notes: NoteWriter | None = None
) -> list[float]:
    from memprm.models.sft import balance_weights

    if cfg.steps == 0:
        return []
    pairs = samples_and_kinds(policy, trajs, dialogues, notes)
    if not pairs:
        raise ValueError("SFT: the teacher trajectories hold no gate decisions")
    samples, kinds = [s for s, _ in pairs], [k for _, k in pairs]
    weights = balance_weights(kinds, cfg.balance)
    losses = train_sft(
        policy, samples, cfg.steps, cfg.lr, cfg.batch_size, seed, weights=weights, tb_dir=run_dir / "tb",
        label_smoothing=cfg.label_smoothing, trainable=cfg.trainable,
    )  # fmt: skip
    save_trainable(policy, run_dir / "policy_sft.pt")
    atomic_write_text(run_dir / "sft_losses.json", json.dumps(losses))
    return losses


def train_sft(
    policy,
    samples: Sequence[GateSample],
    steps: int,
    lr: float,
    batch_size: int,
    seed: int,
    *,
    weights: torch.Tensor | None = None,
    weight_decay: float = 0.0,
    tb_dir: Path | None = None,
    progress: bool = True,
    label_smoothing: float = 0.0,
    trainable: str = "all",
) -> list[float]:
    """``steps`` AdamW steps of SFT (:class:`memprm.models.sft.SFTModule`) on mini-batches of ``samples``
    (with their ``weights`` [N] when given) by a Lightning Trainer on the policy's device; returns each
    step's loss. ``sft/loss`` goes to TensorBoard under ``tb_dir/sft`` (no logger when ``tb_dir`` is None).
    Only the ``trainable`` part of the policy changes (``sft.trainable``; :func:`trainable_subset`)."""
    from memprm.logs import progress_bars_enabled
    from memprm.models.policies import trainable_subset
    from memprm.models.sft import SFTModule, sft_dataloader

    if trainable != "all" and weight_decay > 0:
        raise ValueError(f"SFT: trainable={trainable} needs weight_decay 0 (AdamW would decay the frozen weights)")
    loader = sft_dataloader(samples, batch_size, steps, seed, weights)
    module = SFTModule(policy, lr, weight_decay, label_smoothing)
    device = next(policy.parameters()).device
    gpu = device.type == "cuda"
    cfg = TrainerConfig(
        accelerator="gpu" if gpu else "cpu", progress_bar=progress and progress_bars_enabled()
    )
    trainer = build_trainer(
        cfg,
        tb_dir or Path.cwd(),
        "sft",
        max_steps=steps,
        max_epochs=1,
        devices=[device.index or 0] if gpu else 1,
        **({} if tb_dir is not None else {"logger": False}),
    )
    with warnings.catch_warnings():  # one process, no loader workers, and the policy in eval mode: on purpose
        warnings.filterwarnings("ignore", message=".*does not have many workers")
        warnings.filterwarnings("ignore", message=r".*module\(s\) in eval mode")
        with trainable_subset(policy, trainable, setting="sft.trainable"):
            trainer.fit(module, loader)
    policy.to(device)  # Lightning's teardown moves the module to the CPU
    if len(module.losses) != steps:
        raise RuntimeError(f"SFT: {len(module.losses)} of {steps} steps were taken")
    return module.losses
