"""LambdaAnnealing: sets the GRPO module's shaping weight λ(k) from the schedule, k = the optimizer step.

``pl_module.shaping_lambda = lambda_schedule(k, λ0, λ∞, K_decay)`` with k = ``trainer.global_step`` (Lightning
counts optimizer steps, manual optimization included), at the start of every training batch and on train
start. The GRPO module reads λ once per batch, when it weighs the batch's rewards, so this is the value of
the batch's first optimizer step; under manual optimization a batch's later PPO steps share it (the rewards
are weighed once). λ is never changed at batch end: a callback reading ``shaping_lambda`` in
``on_train_batch_end`` (the shaping monitor) sees the value the batch used, whatever the callback order.

Logged as ``anneal/lambda`` (with ``anneal/k``) per step. Resuming from a checkpoint continues at the
restored global step, so λ resumes at the right k by construction; the state (last k and λ, and the
schedule) is saved so that resuming with a different schedule is refused rather than silently mixed.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from memprm.credit.shaping import lambda_schedule


class LambdaAnnealing(Callback):
    """Writes λ(k) = (λ0 − λ∞)·max(1 − k/K_decay, 0) + λ∞ to ``pl_module.shaping_lambda`` (module doc)."""

    def __init__(self, lambda0: float, lambda_inf: float, k_decay: float):
        lambda_schedule(
            0, lambda0, lambda_inf, k_decay
        )  # validates the schedule (CreditError names the field)
        self.lambda0, self.lambda_inf, self.k_decay = float(lambda0), float(lambda_inf), float(k_decay)
        #: the step and value last written (-1 / None before the first).
        self.last_k: int = -1
        self.last_lambda: float | None = None

    def value(self, k: int) -> float:
        return lambda_schedule(k, self.lambda0, self.lambda_inf, self.k_decay)

    def _set(self, trainer: Trainer, pl_module: LightningModule) -> float:
        if not hasattr(pl_module, "shaping_lambda"):
            raise ValueError(
                f"LambdaAnnealing: {type(pl_module).__name__} has no attribute 'shaping_lambda' to anneal"
            )
        k = int(trainer.global_step)
        lam = self.value(k)
        pl_module.shaping_lambda = lam
        self.last_k, self.last_lambda = k, lam
        return lam

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._set(trainer, pl_module)

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        lam = self._set(trainer, pl_module)
        size = len(batch) if isinstance(batch, (list, tuple)) else 1
        pl_module.log("anneal/lambda", lam, on_step=True, on_epoch=False, batch_size=size)
        pl_module.log("anneal/k", float(self.last_k), on_step=True, on_epoch=False, batch_size=size)

    def _schedule(self) -> list[float]:
        return [self.lambda0, self.lambda_inf, self.k_decay]

    def state_dict(self) -> dict[str, Any]:
        return {"last_k": self.last_k, "last_lambda": self.last_lambda, "schedule": self._schedule()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for key in ("last_k", "last_lambda", "schedule"):
            if key not in state_dict:
                raise ValueError(f"LambdaAnnealing checkpoint state: field {key!r} is missing")
        saved = [float(v) for v in state_dict["schedule"]]
        if saved != self._schedule():
            raise ValueError(
                f"LambdaAnnealing checkpoint state: field 'schedule' is (λ0, λ∞, K_decay) = {tuple(saved)}, "
                f"this run's is {tuple(self._schedule())}; resuming with a different schedule is refused"
            )
        self.last_k = int(state_dict["last_k"])
        last = state_dict["last_lambda"]
        self.last_lambda = None if last is None else float(last)
