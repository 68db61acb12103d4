"""The method's credit maths as pure functions (no Lightning): verified presence credit (Eq. 6) and its
propagation along version chains, the coverage penalty, offline hindsight relabeling into tiers, critic
shaping and its schedule, the composite reward and GRPO group advantages.

Typical online use for one rollout of an episode::

    u_entry = presence_credit(records, cfg, entry_ids=bank_entry_ids)
    u = step_credit(steps, propagate_chain_credit(u_entry, chains, cfg.chain))
    miss = coverage_penalty(steps, failed_anchor_turns)
    s = suffix_min_shaping(critic_scores, noop_mask(steps))
    parts = composite_rewards(R, u, miss, s, lam=lambda_schedule(k, lambda0, lambda_inf, k_decay))

then ``group_advantages([parts.total for each rollout])`` over the group.
"""

from memprm.credit.advantage import GroupAdvantages, GroupStatus, gate_advantages, group_advantages
from memprm.credit.chains import (
    ChainMode,
    chain_step_credit,
    cited_versions,
    coverage_penalty,
    propagate_chain_credit,
    step_credit,
)
from memprm.credit.online_labels import online_labels
from memprm.credit.presence import CreditConfig, CreditVariant, PresenceWeights, presence_credit
from memprm.credit.relabel import RelabelResult, relabel_tiers
from memprm.credit.reward import (
    COMPONENTS,
    RewardBreakdown,
    RewardWeights,
    composite_rewards,
    reward_masses,
    shaping_share,
)
from memprm.credit.shaping import (
    lambda_schedule,
    magnitude_ratio,
    suffix_min_shaping,
    sum_shaping,
    sum_shaping_scale,
)
from memprm.credit.tiers import (
    ENTRY_TIERS,
    EntryOutcome,
    LabeledExample,
    Neighbour,
    RelabelConfig,
    RelabelCounts,
    TeacherDecision,
    Tier,
    TierTargets,
    entry_outcomes,
)
from memprm.credit.types import AuditRecord, CreditError, Step, noop_mask

__all__ = [
    "COMPONENTS",
    "ENTRY_TIERS",
    "AuditRecord",
    "ChainMode",
    "CreditConfig",
    "CreditError",
    "CreditVariant",
    "EntryOutcome",
    "GroupAdvantages",
    "GroupStatus",
    "LabeledExample",
    "Neighbour",
    "PresenceWeights",
    "RelabelConfig",
    "RelabelCounts",
    "RelabelResult",
    "RewardBreakdown",
    "RewardWeights",
    "Step",
    "TeacherDecision",
    "Tier",
    "TierTargets",
    "chain_step_credit",
    "cited_versions",
    "composite_rewards",
    "coverage_penalty",
    "entry_outcomes",
    "online_labels",
    "gate_advantages",
    "group_advantages",
    "lambda_schedule",
    "magnitude_ratio",
    "noop_mask",
    "presence_credit",
    "propagate_chain_credit",
    "relabel_tiers",
    "reward_masses",
    "shaping_share",
    "step_credit",
    "suffix_min_shaping",
    "sum_shaping",
    "sum_shaping_scale",
]
