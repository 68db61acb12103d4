"""``fit(cfg)``: the whole pipeline as one plain function (what ``python -m memprm fit`` and the tests call).

Stages run in pipeline order, each writing its artifacts under the run folder ``<output_dir>/<run_name>``
(``run_name`` defaults to ``<arm>-seed<seed>``), which also holds the resolved config (``config.yaml``) and
every stage's TensorBoard logs under ``tb/``; ``tensorboard --logdir runs/`` overlays runs.
"""

from __future__ import annotations

import logging
import time
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


def fit(cfg: MemprmConfig) -> FitResult:
    from lightning import seed_everything

    seed_everything(cfg.seed, workers=True, verbose=False)
    run_dir = Path(cfg.output_dir) / cfg.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(to_dict(cfg))))
    result = FitResult(run_dir)
    splits = load_source(cfg.data)
    from memprm.stages.roles import build_stack

    stack = build_stack(cfg)
    if "critic" in cfg.fit.stages:
        from memprm.stages.critic_stage import run_critic_stage

        t0 = time.perf_counter()
        result.critic = run_critic_stage(
            stack, splits["train"], splits["dev"], run_dir, cfg.critic, cfg.relabel, cfg.trainer, cfg.validity,
            cfg.seed,
        )  # fmt: skip
        result.seconds["critic"] = time.perf_counter() - t0
        print(
            f"\ncritic stage ({result.seconds['critic']:.0f} s): {result.critic.n_train} train / "
            f"{result.critic.n_val} dev examples; relabeling: {result.critic.relabel_counts}"
        )
        print(result.critic.report.to_markdown())
        print(f"critic saved to {run_dir / 'critic'}; validity report in {run_dir / 'critic' / 'validity'}")
    return result
