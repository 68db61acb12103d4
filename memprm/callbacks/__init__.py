"""Lightning callbacks of the GRPO stage, one per file:

- :class:`LambdaAnnealing` (``lambda_annealing``): λ(k) of the critic shaping, k = the optimizer step;
- :class:`CriticRefresh` (``critic_refresh``): the critic frozen (off) or periodically retrained on online
  labels, anchored to the offline snapshot, audited and rolled back when worse;
- :class:`DevCheckpointSelection` (``dev_selection``): the best policy by dev-selection accuracy, loaded at
  the end of training;
- :class:`ShapingShareMonitor` (``shaping_monitor``): the shaping share over a window of batches;
- :class:`PolicyDriftMonitor` (``policy_drift``): KL, entropy and changed greedy actions vs the SFT policy.

Their settings live in :mod:`memprm.callbacks.callback_config`, which imports neither torch nor lightning. The
callbacks are imported on first access (``from memprm.callbacks import LambdaAnnealing``), so that importing
the configs from here does not pull in lightning.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from memprm.callbacks.callback_config import DevSelectionConfig, DriftMonitorConfig, ShapingMonitorConfig
from memprm.models.critic_config import CriticRefreshConfig

if TYPE_CHECKING:
    from memprm.callbacks.critic_refresh import CriticRefresh
    from memprm.callbacks.dev_selection import DevCheckpointSelection
    from memprm.callbacks.lambda_annealing import LambdaAnnealing
    from memprm.callbacks.policy_drift import PolicyDriftMonitor
    from memprm.callbacks.shaping_monitor import ShapingShareMonitor

_LAZY = {
    "CriticRefresh": "memprm.callbacks.critic_refresh",
    "DevCheckpointSelection": "memprm.callbacks.dev_selection",
    "LambdaAnnealing": "memprm.callbacks.lambda_annealing",
    "PolicyDriftMonitor": "memprm.callbacks.policy_drift",
    "ShapingShareMonitor": "memprm.callbacks.shaping_monitor",
}
__all__ = [
    "CriticRefresh",
    "CriticRefreshConfig",
    "DevCheckpointSelection",
    "DevSelectionConfig",
    "DriftMonitorConfig",
    "LambdaAnnealing",
    "PolicyDriftMonitor",
    "ShapingMonitorConfig",
    "ShapingShareMonitor",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'memprm.callbacks' has no attribute {name!r}")
