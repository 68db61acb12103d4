"""The sum-shaping arm's scale (``rollout.sum_scale``), resolved once before GRPO trains (paper Remark 4).

``auto`` is the factor that gives the sum shaping the suffix-min shaping's mean magnitude on stage one's
train teacher trajectories, each window scored by stage one's critic (:func:`teacher_sum_scale`). The value
is kept in ``grpo/checkpoints/sum_scale.json`` beside ``last.ckpt`` (cleared with it when GRPO starts over),
so a resumed stage uses the value it started with; ``grpo/result.json`` records it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from memprm.atomic import atomic_write_text
from memprm.credit import CreditError, noop_mask, sum_shaping_scale
from memprm.env.trajectories import DialogueTrajectory, load_trajectories
from memprm.rollout.runner import RolloutConfig

log = logging.getLogger("memprm.stages")


def teacher_sum_scale(score: Callable[[list[str]], np.ndarray], trajs: Sequence[DialogueTrajectory]) -> float:
    """:func:`~memprm.credit.shaping.sum_shaping_scale` over every window of ``trajs``, scored by ``score``
    (rendered operations -> φ ``[N]``) in one call."""
    windows = [w for t in trajs for w in t.windows if w.steps]
    texts = [x for w in windows for x in w.critic_inputs]
    phi = np.asarray(score(texts), dtype=np.float64) if texts else np.zeros(0)  # [N]
    ends = np.cumsum([len(w.critic_inputs) for w in windows])
    parts = np.split(phi, ends[:-1]) if windows else []
    return sum_shaping_scale((p, noop_mask(w.steps)) for p, w in zip(parts, windows, strict=True))


def resolve_sum_scale(
    rollout: RolloutConfig, critic, teacher_dir: Path, ckpt_dir: Path, resuming: bool
) -> RolloutConfig:
    """``rollout`` with ``sum_scale`` a number: unchanged unless ``shaping`` is ``sum`` with ``sum_scale``
    ``auto`` and a ``critic`` (a FrozenCritic); then the value in ``ckpt_dir/sum_scale.json`` when
    ``resuming`` and it is there, else :func:`teacher_sum_scale` of ``critic`` on the trajectories in
    ``teacher_dir`` (stage one's ``teacher/train``), written there."""
    if rollout.shaping != "sum" or rollout.sum_scale != "auto" or critic is None:
        return rollout
    path = ckpt_dir / "sum_scale.json"
    if resuming and path.is_file():
        value = float(json.loads(path.read_text())["sum_scale"])
        log.info("GRPO: sum shaping scaled by %.6g (kept from the start of this GRPO run)", value)
        return replace(rollout, sum_scale=value)
    trajs, _ = load_trajectories(teacher_dir)
    try:
        value = teacher_sum_scale(lambda texts: critic.score(list(texts))[0], trajs)
    except CreditError as exc:
        where = f"rollout.sum_scale=auto on {teacher_dir}"
        raise ValueError(f"{where}: {exc}; set rollout.sum_scale=<number>") from exc
    atomic_write_text(path, json.dumps({"sum_scale": value, "teacher": str(teacher_dir)}) + "\n")
    log.info("GRPO: sum shaping scaled by %.6g (suffix-min magnitude on %s)", value, teacher_dir)
    return replace(rollout, sum_scale=value)
