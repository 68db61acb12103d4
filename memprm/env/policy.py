"""What every memory-manager policy provides to the rollout loop, SFT and GRPO.

A policy acts at one gate at a time and returns, with the action, a :class:`GateSample`: everything needed
to recompute the action's log-probability later (with gradients) in a training step. One container serves
both policy kinds:

- the *scoring* policy: ``candidates`` holds the rendered candidate actions (Noop, Write, Merge into each
  shown neighbour), ``choice`` the index picked, ``view`` what the two-tower scorer reads of the gate and its
  candidates, ``completion`` is empty;
- the *causal-LM* policy: ``candidates`` is empty, ``completion`` is the generated JSON operation.

``logprob`` is the behaviour policy's log-probability at sampling time (GRPO's π_old); ``ref_logprob`` the
reference (SFT) policy's, filled when a KL penalty is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from memprm.env.candidates import GateView
from memprm.env.gates import Action, Observation

if TYPE_CHECKING:  # torch only for annotations: configs and containers import this module cheaply
    import torch


@dataclass(frozen=True)
class GateSample:
    prompt: str
    candidates: tuple[str, ...] = ()
    choice: int = -1
    completion: str = ""
    logprob: float = 0.0
    ref_logprob: float = 0.0
    view: GateView | None = None

    def with_logprobs(self, logprob: float, ref_logprob: float | None = None) -> GateSample:
        return replace(
            self, logprob=logprob, ref_logprob=self.ref_logprob if ref_logprob is None else ref_logprob
        )


class GatePolicy(Protocol):
    """Implemented by :class:`memprm.models.scoring_policy.ScoringPolicy` and
    :class:`memprm.models.causal_policy.CausalPolicy` (both ``torch.nn.Module``)."""

    def act(
        self, obs: Observation, *, greedy: bool = False, generator: torch.Generator | None = None
    ) -> tuple[Action, GateSample]:
        """Choose an action at ``obs`` (sampled, or the most likely one with ``greedy``), no gradients."""
        ...

    def sample_for(self, obs: Observation, action: Action) -> GateSample:
        """The sample that would have produced ``action`` at ``obs`` (teacher actions, for SFT)."""
        ...

    def log_probs(self, samples: Sequence[GateSample]) -> tuple[torch.Tensor, torch.Tensor]:
        """(log π(action | gate) [N], entropy [N]) under the current weights, with gradients."""
        ...
