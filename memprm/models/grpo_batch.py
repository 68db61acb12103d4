"""One GRPO training batch weighed: composite rewards at λ, group advantages, skipped groups, logged means.

:func:`prepare_batch` turns the rollout DataModule's :class:`~memprm.rollout.batches.GroupBatch` es (unweighted
measurements) into a :class:`PreparedBatch`: the kept gate samples with their advantages and π_old / reference
log-probs, every group's status, and the reward breakdowns and bank statistics the module logs. Pure: no
Lightning, no torch; :class:`memprm.models.grpo_module.GRPOPolicyModule` calls it once per training step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memprm.credit import (
    COMPONENTS,
    CreditError,
    GroupStatus,
    RewardBreakdown,
    composite_rewards,
    gate_advantages,
    group_advantages,
    shaping_share,
)
from memprm.env.policy import GateSample
from memprm.models.grpo_config import GRPOConfig
from memprm.rollout.batches import GroupBatch

#: status of a group whose rollouts have no gate step at all (nothing to train; counted, not an error).
EMPTY = "empty"
BANK_STATS = ("entries", "versions_per_entry", "context_tokens", "evidence_kept")
#: ``GroupBatch.stats`` keys logged (as means over groups) by prefix.
GROUP_STAT_PREFIXES = ("audit/", "probe/", "reader/", "llm/", "local/", "rollout/")
_LOGPROB_TOL = 1e-4  # float32 log-softmax may round a log-prob of ~0 slightly above 0


@dataclass(frozen=True)
class PreparedBatch:
    """One training step's inputs: the kept samples with their targets, and what is logged about the batch."""

    samples: tuple[GateSample, ...]  # [N] kept rollouts' gate samples, group by group, rollout by rollout
    advantages: np.ndarray  # [N] float64, per-step advantage of each sample
    old_logp: np.ndarray  # [N] float64, π_old log-probs (GateSample.logprob)
    ref_logp: np.ndarray  # [N] float64, reference log-probs (GateSample.ref_logprob)
    statuses: tuple[str, ...]  # [n_groups] GroupStatus value, or EMPTY
    group_advantages: tuple[tuple[np.ndarray, ...], ...]  # [n_groups][G][T_i] as group_advantages gave
    breakdowns: tuple[RewardBreakdown, ...]  # every rollout with steps, all groups
    tasks: np.ndarray  # [n_rollouts] R of every rollout of every whole-window group
    bank: tuple[tuple[str, float], ...]  # (key, mean over rollouts carrying it) for BANK_STATS present
    #: (key, mean over the groups carrying it) of the groups' ``audit/*``, ``probe/*``, ``reader/*``, ``llm/*``
    group_stats: tuple[tuple[str, float], ...] = ()
    #: gate mode: mean over the kept groups of each component's share of the advantage mass (COMPONENTS order)
    advantage_shares: tuple[float, ...] = ()
    #: [n_groups] True for a local re-run group (``GroupBatch.origin``), and R of every rollout of those
    local: tuple[bool, ...] = ()
    local_tasks: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n_groups(self) -> int:
        return len(self.statuses)

    def metrics(self, lam: float) -> dict[str, float]:
        """The batch-side metrics: all but ``grpo/loss``, ``clip_frac``, ``entropy`` and ``kl``.

        - ``task/accuracy``: mean R over all rollouts of all groups (skipped ones included);
        - ``reward/credit``, ``/miss``, ``/shaping``, ``/total``: means over all gate steps of all rollouts
          of the weighted, signed components w_u·u, −w_miss·miss, λ·s̃ and of the total step reward (which
          includes w_task·R at each rollout's last step); ``reward/shaping_share`` over all rollouts;
        - ``grpo/groups``, ``grpo/steps`` (gate samples that entered the loss), ``grpo/zero_variance_frac``,
          ``grpo/identical_frac``, ``grpo/empty_frac`` and ``grpo/skipped_frac`` (their sum), ``grpo/lambda``;
        - ``bank/entries``, ``bank/versions_per_entry``, ``bank/context_tokens``, ``bank/evidence_kept``:
          means over the whole-window groups' rollouts whose ``RolloutSteps.stats`` carry the key;
        - local re-run groups (:mod:`memprm.rollout.local_groups`) count in ``grpo/*``; besides,
          ``local/groups``, ``local/zero_variance_frac``, ``local/task_accuracy`` (their mean R, not in
          ``task/accuracy``) and, from their stats, ``local/identical_actions`` (share of local groups whose
          re-runs took the same actions), ``local/reader_calls``, ``local/dropped_questions``;
        - ``audit/*`` (reader calls of building, answering and auditing a quiz; failure and citation
          counts), ``reader/missing_citations``, ``probe/*``, ``llm/*`` and ``rollout/continued_sessions``
          (``rollout.horizon``'s greedy sessions before the quiz): means over the groups whose
          ``GroupBatch.stats`` carry the key (:mod:`memprm.rollout.runner`).
        """
        steps = list(self.breakdowns)
        out = {"task/accuracy": float(self.tasks.mean())} if len(self.tasks) else {}
        if steps:
            for name in ("credit", "miss", "shaping", "total"):
                out[f"reward/{name}"] = float(np.concatenate([getattr(b, name) for b in steps]).mean())
            out["reward/shaping_share"] = shaping_share(steps)
        out |= {f"advantage/{c}_share": v for c, v in zip(COMPONENTS, self.advantage_shares, strict=False)}
        n = self.n_groups
        out["grpo/groups"] = float(n)
        out["grpo/steps"] = float(len(self.samples))
        counts = {s: sum(st == s for st in self.statuses) for s in (*GroupStatus, EMPTY)}
        out["grpo/zero_variance_frac"] = counts[GroupStatus.ZERO_VARIANCE] / n
        out["grpo/identical_frac"] = counts[GroupStatus.IDENTICAL_ROLLOUTS] / n
        out["grpo/empty_frac"] = counts[EMPTY] / n
        out["grpo/skipped_frac"] = (n - counts[GroupStatus.OK]) / n
        out["grpo/lambda"] = float(lam)
        local = [st for st, is_local in zip(self.statuses, self.local, strict=True) if is_local]
        if local:
            out["local/groups"] = float(len(local))
            zero = sum(st == GroupStatus.ZERO_VARIANCE for st in local)
            out["local/zero_variance_frac"] = zero / len(local)
            out["local/task_accuracy"] = float(self.local_tasks.mean())
        out.update({f"bank/{k}": v for k, v in self.bank})
        out.update(dict(self.group_stats))
        return out


def mean_over_ranks(per_rank: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each key's mean over the ranks whose dict carries it; keys in first-seen order."""
    sums: dict[str, list[float]] = {}
    for metrics in per_rank:
        for name, value in metrics.items():
            sums.setdefault(name, []).append(float(value))
    return {name: sum(vals) / len(vals) for name, vals in sums.items()}


def prepare_batch(
    groups: Sequence[GroupBatch], lam: float, cfg: GRPOConfig, *, check_reference: bool = True
) -> PreparedBatch:
    """Weigh, normalize and flatten ``groups`` (steps 1–3 of the module docstring). Pure: no torch.

    A local re-run group (``GroupBatch.origin``) gets outcome advantages on its rollouts' R whatever
    ``grpo.advantage_mode`` says (no composite reward: its rollouts carry no credit, penalty or shaping), and
    stays out of ``tasks``, ``bank`` and ``breakdowns`` (it is reported under ``local/*``).

    Bad input raises ``ValueError`` naming the group (dialogue, window), the rollout and the field.
    ``check_reference=False``: the caller scores the kept samples' reference log-probs itself afterwards
    (:class:`~memprm.models.grpo_module.GRPOPolicyModule`), so ``ref_logp`` is not checked here.
    """
    if not groups:
        raise ValueError("GRPO batch: no groups")
    samples: list[GateSample] = []
    adv_flat: list[np.ndarray] = []
    statuses: list[str] = []
    all_adv: list[tuple[np.ndarray, ...]] = []
    breakdowns: list[RewardBreakdown] = []
    shares: list[tuple[float, ...]] = []  # gate mode: each kept group's component shares of the advantage
    tasks: list[float] = []
    local_tasks: list[float] = []
    bank: dict[str, list[float]] = {k: [] for k in BANK_STATS}
    for g in groups:
        if not isinstance(g, GroupBatch):
            raise ValueError(f"GRPO batch: expected GroupBatch items, got {type(g).__name__}")
        where = f"GRPO batch: group {g.dialogue_id!r} window {g.window}"
        if g.group_size == 0:
            raise ValueError(f"{where}: the group has no rollouts")
        for i, r in enumerate(g.rollouts):
            (local_tasks if g.is_local else tasks).append(float(r.task))
            for k in BANK_STATS if not g.is_local else ():
                if k in r.stats:
                    v = float(r.stats[k])
                    if not math.isfinite(v):
                        raise ValueError(f"{where}, rollout {i}: stats[{k!r}] = {v} is not finite")
                    bank[k].append(v)
        lengths = [r.n_steps for r in g.rollouts]
        if max(lengths) == 0:
            statuses.append(EMPTY)
            all_adv.append(tuple(np.zeros(0) for _ in g.rollouts))
            continue
        if min(lengths) == 0:
            raise ValueError(
                f"{where}: rollouts have {lengths} gate steps; the forks of one window share its gates, so "
                "a rollout without steps beside rollouts with steps is inconsistent"
            )
        parts = []
        for i, r in enumerate(g.rollouts if not g.is_local else ()):
            try:
                parts.append(
                    composite_rewards(r.task, r.credit, r.miss, r.shaping, lam=lam, weights=cfg.weights)
                )
            except CreditError as exc:
                raise ValueError(f"{where}, rollout {i}: {exc}") from exc
        breakdowns.extend(parts)
        try:
            if g.is_local:  # a local re-run group: outcome advantages on its window quiz's R
                ga = group_advantages(
                    [np.zeros(r.n_steps) for r in g.rollouts],
                    "outcome",
                    outcomes=[r.task for r in g.rollouts],
                    eps=cfg.adv_eps,
                )
            elif cfg.advantage_mode == "gate":  # per component, standardized, then weighted
                w = cfg.weights
                ga = gate_advantages(
                    [np.stack([getattr(b, c) for c in COMPONENTS]) for b in parts],
                    [w.task, w.credit, w.miss, lam],
                    eps=cfg.adv_eps,
                )
            else:
                ga = group_advantages(
                    [b.total for b in parts],
                    cfg.advantage_mode,
                    outcomes=[r.task for r in g.rollouts],
                    eps=cfg.adv_eps,
                )
        except CreditError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        if ga.shares:
            shares.append(ga.shares)
        statuses.append(ga.status.value)
        all_adv.append(ga.advantages)
        if ga.skip:
            continue
        for i, (r, a) in enumerate(zip(g.rollouts, ga.advantages, strict=True)):
            for t, s in enumerate(r.samples):
                _check_logprob(s.logprob, f"{where}, rollout {i}, step {t}: GateSample.logprob")
                if cfg.beta_kl > 0 and check_reference:
                    _check_logprob(s.ref_logprob, f"{where}, rollout {i}, step {t}: GateSample.ref_logprob")
            samples.extend(r.samples)
            adv_flat.append(a)
    old = np.array([s.logprob for s in samples], dtype=np.float64)
    ref = np.array([s.ref_logprob for s in samples], dtype=np.float64)
    if cfg.beta_kl > 0 and check_reference and samples and not np.any(ref):
        raise ValueError(
            "GRPO batch: grpo.beta_kl > 0 but every kept sample has ref_logprob = 0.0: the rollouts carry no "
            "reference (SFT) log-probs (GateSample.with_logprobs fills them)"
        )
    return PreparedBatch(
        samples=tuple(samples),
        advantages=np.concatenate(adv_flat) if adv_flat else np.zeros(0),
        old_logp=old,
        ref_logp=ref,
        statuses=tuple(statuses),
        group_advantages=tuple(all_adv),
        breakdowns=tuple(breakdowns),
        tasks=np.array(tasks, dtype=np.float64),
        bank=tuple((k, float(np.mean(v))) for k, v in bank.items() if v),
        group_stats=_group_means(groups, GROUP_STAT_PREFIXES),
        advantage_shares=tuple(float(v) for v in np.mean(shares, axis=0)) if shares else (),
        local=tuple(g.is_local for g in groups),
        local_tasks=np.array(local_tasks, dtype=np.float64),
    )


def _group_means(groups: Sequence[GroupBatch], prefixes: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    keys = sorted({k for g in groups for k in g.stats if k.startswith(prefixes)})
    return tuple((k, float(np.mean([g.stats[k] for g in groups if k in g.stats]))) for k in keys)


def _check_logprob(v: float, what: str) -> None:
    if not (math.isfinite(v) and v <= _LOGPROB_TOL):
        raise ValueError(f"{what} = {v!r} is not a log-probability (finite, <= 0)")
