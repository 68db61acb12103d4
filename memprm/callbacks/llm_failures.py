"""LLMFailureStop: stops GRPO before it trains on a batch whose LLM failure share is too high.

Each :class:`~memprm.rollout.batches.GroupBatch` carries its LLM traffic (``llm/questions``, ``llm/failures``:
what its probes, gates, exams and audits asked of every LLM role, :mod:`memprm.rollout.runner`). Before the
training step of a batch, the failures of all its groups over their questions is checked against
``llm.max_failure_share``: above it, :class:`~memprm.llm.failures.LLMFailureRateError` stops the run with one
line naming the batch, the share, the endpoint and the last error — no update is made from a batch whose
rewards come from failed calls (a failed call gives no credit, but a batch of mostly failures measures
nothing). A batch without LLM calls (the offline default) is never stopped. Under DDP the counts are summed
over the ranks first, so every rank takes the same decision (none is left waiting in a collective).
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from memprm.llm.failures import FailureShare, batch_failure_share, stop_if_too_many
from memprm.rollout.batches import GroupBatch


class LLMFailureStop(Callback):
    def __init__(self, max_share: float) -> None:
        self.max_share = max_share

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        groups = [batch] if isinstance(batch, GroupBatch) else list(batch)
        share = batch_failure_share([g.stats for g in groups])
        if getattr(trainer, "world_size", 1) > 1:
            import torch

            both = torch.tensor([float(share.questions), float(share.failures)], device=pl_module.device)
            q, f = trainer.strategy.reduce(both, reduce_op="sum").tolist()
            share = FailureShare(int(q), int(f))
        where = f"GRPO batch {batch_idx} (step {trainer.global_step}; {', '.join(_names(groups))})"
        stop_if_too_many(share, where, self.max_share)


def _names(groups: list[GroupBatch]) -> list[str]:
    return [f"{g.dialogue_id} window {g.window}" for g in groups]
