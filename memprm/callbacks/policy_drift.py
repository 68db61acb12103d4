"""PolicyDriftMonitor: how far GRPO has moved the policy from the SFT policy it started from, on fixed gates.

Before GRPO starts, the reference (SFT) policy plays the dev *selection* dialogues greedily
(:func:`record_gates`); the gates it met (at most ``drift.max_gates``, evenly spaced) and its log-probabilities
over each gate's candidates are kept. Every ``every_n_steps`` optimizer steps, and before the first, the
current policy re-scores the same candidates and the monitor logs ``drift/action_changed`` (share of gates
whose greedy candidate differs from the reference's), ``drift/kl_to_ref`` (mean exact KL(π ‖ π_ref) over the
candidates) and ``drift/entropy`` (mean entropy of π), plus ``drift/ref_entropy`` at its first measurement. A
flat run stays near 0 KL and 0 changed; a collapsing one drives entropy towards 0. Scoring policy only: the
causal policy has no exact distribution over a candidate set, so it is refused at construction (the GRPO
stage then skips the monitor). The maths is :mod:`memprm.eval.drift`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn

from memprm.callbacks.callback_config import DriftMonitorConfig
from memprm.data.records import Dialogue
from memprm.env.memory_env import MemoryEnv
from memprm.env.policy import GateSample
from memprm.eval.drift import changed_share, entropy, even_indices, kl_divergence
from memprm.memory.bank import MemoryBank
from memprm.models.scoring_policy import ScoringPolicy, eval_mode

log = logging.getLogger("memprm.stages")


@dataclass(frozen=True)
class DriftRecord:
    #: optimizer step of the measurement.
    step: int
    #: share of gates whose greedy candidate differs from the reference's.
    action_changed: float
    #: mean KL(π ‖ π_ref) over the gates.
    kl_to_ref: float
    #: mean entropy of π over the gates.
    entropy: float

    def metrics(self) -> dict[str, float]:
        return {
            "drift/action_changed": self.action_changed,
            "drift/kl_to_ref": self.kl_to_ref,
            "drift/entropy": self.entropy,
        }


def require_scoring(policy: Any) -> ScoringPolicy:
    """``policy`` when it is a :class:`ScoringPolicy`; otherwise the error naming its kind."""
    if not isinstance(policy, ScoringPolicy):
        kind = getattr(getattr(policy, "cfg", None), "kind", "?")
        raise ValueError(
            f"PolicyDriftMonitor: the policy is a {type(policy).__name__} (policy.kind={kind!r}), which has no "
            "exact distribution over a candidate set; drift monitoring needs policy.kind='scoring' "
            "(set drift.enabled=false)"
        )
    return policy


def record_gates(
    env: MemoryEnv, dialogues: Sequence[Dialogue], policy: ScoringPolicy, max_gates: int
) -> tuple[GateSample, ...]:
    """The samples of ``policy`` acting greedily at every gate of ``dialogues`` (each played window by window
    from an empty bank, as the evaluation protocol does), then :func:`memprm.eval.drift.even_indices` of them:
    at most ``max_gates``, the same ones for the same policy and dialogues."""
    samples: list[GateSample] = []

    def manager(obs):
        action, sample = policy.act(obs, greedy=True)
        samples.append(sample)
        return action

    for d in dialogues:
        bank = MemoryBank()
        for s in d.sessions:
            env.play_window(d, s.index, bank, manager)
    return tuple(samples[i] for i in even_indices(len(samples), max_gates))


def candidate_table(
    policy: ScoringPolicy, gates: Sequence[GateSample], batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """(log π(candidate | gate) [N, C] float64, -inf at padding; mask [N, C]) over ``gates``, ``batch_size``
    gates per forward, in eval mode without gradients (the mode is restored)."""
    n, width = len(gates), max(len(g.candidates) for g in gates)
    table, mask = np.full((n, width), -np.inf), np.zeros((n, width), dtype=bool)
    with eval_mode(policy), torch.no_grad():
        for i in range(0, n, batch_size):
            logp, m = policy.candidate_log_probs(gates[i : i + batch_size])  # [B, c], [B, c]
            rows, c = slice(i, i + logp.shape[0]), logp.shape[1]
            table[rows, :c] = logp.double().cpu().numpy()
            mask[rows, :c] = m.cpu().numpy()
    return table, mask


class PolicyDriftMonitor(Callback):
    """Drift of ``pl_module.policy`` from the reference policy on fixed gates (module doc).

    ``reference`` is scored once, here, on ``gates`` (its own greedy samples, :meth:`from_play`): only its
    log-probability table [N, C] is kept, not the model. Logged directly to the trainer's loggers at the
    current step, as :class:`~memprm.callbacks.dev_selection.DevCheckpointSelection` does; under DDP every rank
    measures (the weights are identical) and the loggers write rank 0's. A measurement is due when the
    optimizer step count crosses a multiple of ``every_n_steps`` (once, even if it crosses several).

    Checkpoints hold the history and a fingerprint of the gates, not the gates or the table: both are
    recomputed from the SFT policy and the dev dialogues when the resumed stage builds the monitor. A
    checkpoint whose fingerprint differs (``drift.max_gates`` changed) is not resumed from: its history is
    dropped with a warning and measuring starts again at the resumed step.
    """

    def __init__(self, cfg: DriftMonitorConfig, reference: nn.Module, gates: Sequence[GateSample]):
        reference = require_scoring(reference)
        if not gates:
            raise ValueError("PolicyDriftMonitor: no gates to measure on (the dev selection play met none)")
        self.cfg = cfg
        self.gates = tuple(gates)
        self.ref_logp, self.mask = candidate_table(reference, self.gates, cfg.batch_size)  # [N, C] each
        #: mean entropy of the reference policy over the gates.
        self.ref_entropy = float(entropy(self.ref_logp, self.mask).mean())
        self.fingerprint = gates_fingerprint(self.gates)
        #: every measurement, in order.
        self.history: list[DriftRecord] = []

    @classmethod
    def from_play(
        cls, cfg: DriftMonitorConfig, reference: nn.Module, env: MemoryEnv, dialogues: Sequence[Dialogue]
    ) -> PolicyDriftMonitor:
        """The monitor on the gates ``reference`` meets playing ``dialogues`` greedily (:func:`record_gates`)."""
        policy = require_scoring(reference)
        return cls(cfg, policy, record_gates(env, dialogues, policy, cfg.max_gates))

    def measure(self, policy: nn.Module, step: int) -> DriftRecord:
        """Score the gates with ``policy`` and compare with the reference (nothing logged or kept)."""
        logp, mask = candidate_table(require_scoring(policy), self.gates, self.cfg.batch_size)
        if not np.array_equal(mask, self.mask):
            raise ValueError("PolicyDriftMonitor: the policy's candidate sets differ from the reference's")
        return DriftRecord(
            step,
            changed_share(logp, self.ref_logp, mask),
            float(kl_divergence(logp, self.ref_logp, mask).mean()),
            float(entropy(logp, mask).mean()),
        )

    def _run(self, trainer: Trainer, pl_module: LightningModule) -> None:
        step = int(trainer.global_step)
        record = self.measure(getattr(pl_module, "policy", None), step)
        metrics = record.metrics()
        if not self.history:
            metrics["drift/ref_entropy"] = self.ref_entropy
        self.history.append(record)
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self.history:
            self._run(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        every, step = self.cfg.every_n_steps, int(trainer.global_step)
        if not self.history or step // every > self.history[-1].step // every:
            self._run(trainer, pl_module)

    def state_dict(self) -> dict[str, Any]:
        return {"history": [asdict(r) for r in self.history], "gates": self.fingerprint}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for key in ("history", "gates"):
            if key not in state_dict:
                raise ValueError(f"PolicyDriftMonitor checkpoint state: field {key!r} is missing")
        if state_dict["gates"] != self.fingerprint:
            log.warning(
                "PolicyDriftMonitor: the checkpoint measured other gates (drift.max_gates changed?); its "
                "drift history is dropped and measuring starts again"
            )
            self.history = []
            return
        fields = ("action_changed", "kl_to_ref", "entropy")
        self.history = [
            DriftRecord(int(r["step"]), *(float(r[k]) for k in fields)) for r in state_dict["history"]
        ]


def gates_fingerprint(gates: Sequence[GateSample]) -> str:
    """sha256 of the gates' prompts and candidate texts, in order."""
    doc = json.dumps([[g.prompt, list(g.candidates)] for g in gates])
    return hashlib.sha256(doc.encode()).hexdigest()
