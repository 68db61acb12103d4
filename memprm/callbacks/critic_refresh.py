"""CriticRefresh: periodic anchored retraining of the critic the rollouts use, audited, with rollback.

Off (``every_n_steps = 0``, the paper's LoCoMo setting) the callback does nothing: the critic stays frozen.
On (LongMemEval: every 200 steps) it keeps a replay buffer of the rollouts' online-labeled operations and,
every ``every_n_steps`` optimizer steps, retrains the current critic on it with
:func:`memprm.models.critic_retrain.refresh_critic`, anchored to the *offline snapshot* (the critic the handle
held when the callback was built). The injected ``audit(critic) -> ValidityReport`` (the fit wiring runs the
dev validity checks) judges the retrained critic against the current one: worse by more than ``tolerance``
and the refresh is rolled back (the handle keeps the previous critic), else the handle is given the new one.

Each refresh is recorded in :attr:`CriticRefresh.history` and logged; checkpoints hold what a resumed run
needs (:meth:`CriticRefresh.state_dict`). Single process only: under DDP each rank would collect different
rollouts and retrain a different critic, so it refuses to start there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from lightning.pytorch import Callback, LightningModule, Trainer

from memprm.eval.validity import ValidityReport
from memprm.models.critic import FrozenCritic
from memprm.models.critic_config import CriticRefreshConfig
from memprm.models.critic_data import CriticExample
from memprm.models.critic_retrain import CriticHandle, refresh_critic, with_trainable_state
from memprm.models.trainable import trainable_state
from memprm.rollout.batches import GroupBatch

KEPT, ROLLED_BACK, SKIPPED = "kept", "rolled_back", "skipped"
_CHECKS = ("spearman", "miss_auc", "misattach_auc", "adversarial_fp")


@dataclass(frozen=True)
class RefreshRecord:
    #: optimizer step at which the refresh ran.
    step: int
    #: replay examples it trained on (or had, when skipped).
    replay_size: int
    #: ``kept``, ``rolled_back`` or ``skipped``.
    status: str
    #: the current critic's audit summary (check → value), and the retrained one's; empty when skipped.
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)


def audit_summary(report: ValidityReport) -> dict[str, float]:
    """Check → value for the checks that were run (deletion as top − random margin, in points), and passed."""
    out = {c: getattr(report, c).value for c in _CHECKS if getattr(report, c) is not None}
    if report.deletion is not None:
        out["deletion_margin"] = report.deletion.margin()
    out["passed"] = float(report.passed)
    return out


class CriticRefresh(Callback):
    """Replay, anchored retraining, audit and rollback of ``handle.critic``.

    1. Every training batch's rollouts feed the replay buffer with their operations and the online audit's
       labels (``RolloutSteps.critic_inputs``, ``critic_u``, ``critic_rr``; the newest ``max_replay`` are
       kept). A rollout with gate steps but no labels is skipped and counted (``unlabeled``); labels whose
       lengths disagree with the inputs are an error naming the group and rollout.
    2. When the optimizer step count crosses a multiple of ``every_n_steps`` (checked after the batch is
       collected), the current critic is retrained (:meth:`refresh`). The anchor set is ``anchor_texts`` when
       given, else a seeded draw of ``anchor_size`` distinct texts from the buffer at the first refresh, fixed
       from then on; its targets are the snapshot's φ on it, computed once.
    3. The current critic is audited once, then the last kept refresh's report is reused as the baseline; a
       refresh is rolled back when :meth:`ValidityReport.worse_than` says its report is worse than the
       baseline by more than ``tolerance``. A refresh with fewer than ``min_replay`` examples is skipped.

    Each refresh is logged directly to the trainer's loggers at the current step: ``critic_refresh/kept`` (1
    kept, 0 rolled back; nothing when skipped), ``/skipped``, ``/replay_size``, and each check's value before
    and after (``/before_spearman``, ``/after_spearman``, …).
    """

    def __init__(
        self,
        handle: CriticHandle,
        cfg: CriticRefreshConfig,
        audit: Callable[[FrozenCritic], ValidityReport] | None,
        anchor_texts: Sequence[str] | None = None,
    ):
        if cfg.every_n_steps > 0 and audit is None:
            raise ValueError(
                "CriticRefresh: critic_refresh.every_n_steps > 0 needs an audit (the dev validity checks) to "
                "decide rollback; none was given"
            )
        if anchor_texts is not None and not anchor_texts:
            raise ValueError("CriticRefresh: anchor_texts is empty (pass None to draw them from the replay)")
        self.handle, self.cfg, self.audit = handle, cfg, audit
        self.snapshot = handle.critic
        self.replay: deque[CriticExample] = deque(maxlen=cfg.max_replay)
        self.anchor_texts: tuple[str, ...] | None = None if anchor_texts is None else tuple(anchor_texts)
        self._given_anchors = anchor_texts is not None
        self.anchor_scores: np.ndarray | None = None  # [A] the snapshot's φ on anchor_texts
        self.history: list[RefreshRecord] = []
        self.unlabeled = 0
        self._intervals_done = 0
        self._current_report: ValidityReport | None = None
        self._refreshed = False  # the handle holds a retrained critic

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.cfg.every_n_steps > 0 and trainer.world_size > 1:
            raise ValueError(
                f"CriticRefresh: refresh runs in a single process, the trainer has {trainer.world_size}"
            )

    def collect(self, batch: GroupBatch | Sequence[GroupBatch], step: int) -> int:
        """Add ``batch``'s labeled operations to the replay buffer; returns how many were added."""
        added = 0
        for g in [batch] if isinstance(batch, GroupBatch) else list(batch):
            for i, r in enumerate(g.rollouts):
                if r.critic_u is None or r.critic_rr is None or not r.critic_inputs:
                    self.unlabeled += int(r.n_steps > 0)
                    continue
                n = len(r.critic_inputs)
                if len(r.critic_u) != n or len(r.critic_rr) != n:
                    raise ValueError(
                        f"CriticRefresh: group {g.dialogue_id!r} window {g.window}, rollout {i}: {n} "
                        f"critic_inputs but {len(r.critic_u)} critic_u and {len(r.critic_rr)} critic_rr labels"
                    )
                labels = zip(r.critic_inputs, r.critic_u, r.critic_rr, strict=True)
                for t, (text, u, rr) in enumerate(labels):
                    op = f"{g.dialogue_id}/w{g.window}/r{i}/t{t}@{step}"
                    self.replay.append(CriticExample(text, float(u), int(rr), g.dialogue_id, "online", op))
                    added += 1
        return added

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.cfg.every_n_steps == 0:
            return
        step = int(trainer.global_step)
        self.collect(batch, step)
        due = step // self.cfg.every_n_steps
        if due > self._intervals_done:
            self._intervals_done = due
            self.refresh(trainer, step)

    def _ensure_anchors(self) -> None:
        if self.anchor_texts is None:
            distinct = list(dict.fromkeys(e.text for e in self.replay))
            k = min(self.cfg.anchor_size, len(distinct))
            pick = np.sort(np.random.default_rng(self.cfg.seed).choice(len(distinct), size=k, replace=False))
            self.anchor_texts = tuple(distinct[int(i)] for i in pick)
        if self.anchor_scores is None:
            self.anchor_scores = np.asarray(self.snapshot.score(list(self.anchor_texts))[0], dtype=np.float64)

    def refresh(self, trainer: Trainer, step: int) -> RefreshRecord:
        """Retrain (on the trainer's device), audit, keep or roll back; records and logs the outcome."""
        n = len(self.replay)
        if n < self.cfg.min_replay:
            record = RefreshRecord(step, n, SKIPPED)
        else:
            self._ensure_anchors()
            before = self._current_report
            if before is None:  # first refresh, or first after a resume
                before = self.audit(self.handle.critic)
            cfg = replace(self.cfg, seed=self.cfg.seed + len(self.history))
            new = refresh_critic(
                self.handle.critic,
                list(self.replay),
                self.anchor_texts,
                self.anchor_scores,
                cfg,
                device=trainer.strategy.root_device,
            )
            after = self.audit(new)
            kept = not after.worse_than(before, self.cfg.tolerance)
            if kept:
                self.handle.critic, self._refreshed = new, True
            self._current_report = after if kept else before
            record = RefreshRecord(
                step, n, KEPT if kept else ROLLED_BACK, audit_summary(before), audit_summary(after)
            )
        self.history.append(record)
        metrics = {
            "critic_refresh/skipped": float(record.status == SKIPPED),
            "critic_refresh/replay_size": float(n),
        }
        if record.status != SKIPPED:
            metrics["critic_refresh/kept"] = float(record.status == KEPT)
            metrics |= {f"critic_refresh/before_{k}": v for k, v in record.before.items()}
            metrics |= {f"critic_refresh/after_{k}": v for k, v in record.after.items()}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)
        return record

    def state_dict(self) -> dict[str, Any]:
        """The step counter, history, unlabeled count, the replay buffer itself (texts and labels: small), the
        anchor set with its offline scores and, after a kept refresh, the current critic's LoRA and head
        tensors, so a resumed run scores with the refreshed critic. The current critic's audit report is not
        saved: the next refresh after a resume audits the current critic again."""
        net = self.handle.critic.net
        return {
            "intervals_done": self._intervals_done,
            "history": [asdict(r) for r in self.history],
            "unlabeled": self.unlabeled,
            "replay": [asdict(e) for e in self.replay],
            "anchor_texts": None if self.anchor_texts is None else list(self.anchor_texts),
            "anchor_scores": None if self.anchor_scores is None else self.anchor_scores.tolist(),
            "critic_state": trainable_state(net, net.trainable_names()) if self._refreshed else None,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        keys = (
            "intervals_done",
            "history",
            "unlabeled",
            "replay",
            "anchor_texts",
            "anchor_scores",
            "critic_state",
        )
        for key in keys:
            if key not in state_dict:
                raise ValueError(f"CriticRefresh checkpoint state: field {key!r} is missing")
        self._intervals_done = int(state_dict["intervals_done"])
        self.history = [RefreshRecord(**r) for r in state_dict["history"]]
        self.unlabeled = int(state_dict["unlabeled"])
        self.replay = deque((CriticExample(**e) for e in state_dict["replay"]), maxlen=self.cfg.max_replay)
        texts, scores = state_dict["anchor_texts"], state_dict["anchor_scores"]
        if texts is not None:
            if self._given_anchors and tuple(texts) != self.anchor_texts:
                raise ValueError(
                    "CriticRefresh checkpoint state: field 'anchor_texts' differs from the given ones"
                )
            self.anchor_texts = tuple(texts)
        self.anchor_scores = None if scores is None else np.asarray(scores, dtype=np.float64)
        if self.anchor_scores is not None and self.anchor_scores.shape != (len(self.anchor_texts or ()),):
            raise ValueError(
                "CriticRefresh checkpoint state: field 'anchor_scores' does not match 'anchor_texts'"
            )
        self._current_report = None
        self._refreshed = state_dict["critic_state"] is not None
        self.handle.critic = (
            with_trainable_state(self.snapshot, state_dict["critic_state"])
            if self._refreshed
            else self.snapshot
        )
