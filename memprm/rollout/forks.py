"""Playing one window on several forked banks with a policy, recording every gate's sample.

Shared by the whole-window groups (:mod:`memprm.rollout.runner`) and the local re-run groups
(:mod:`memprm.rollout.local_groups`): the same play, timed under the stopwatch's ``policy`` key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memprm.data.records import Dialogue
from memprm.env.memory_env import MemoryEnv, WindowPlay
from memprm.env.policy import GateSample
from memprm.memory.bank import MemoryBank
from memprm.timing import Stopwatch


@dataclass(frozen=True)
class ForkPlay:
    """What one fork's play left: the window's gates and the policy's sample at each (π_old log-probs)."""

    play: WindowPlay
    samples: tuple[GateSample, ...]

    @property
    def actions(self) -> tuple[tuple[int, str], ...]:
        """The actions taken, gate by gate: (candidate chosen, generated completion)."""
        return tuple((s.choice, s.completion) for s in self.samples)


def play_forks(
    env: MemoryEnv,
    dialogue: Dialogue,
    window: int,
    banks: Sequence[MemoryBank],
    policy,
    stopwatch: Stopwatch,
    *,
    greedy: bool = False,
    generator=None,
) -> list[ForkPlay]:
    """Play session ``window`` on each bank of ``banks`` (mutated in place), in order, with ``policy``."""
    out = []
    for bank in banks:
        recorded: list[GateSample] = []

        def manager(obs, recorded=recorded):
            with stopwatch("policy"):
                action, sample = policy.act(obs, greedy=greedy, generator=generator)
            recorded.append(sample)
            return action

        play = env.play_window(dialogue, window, bank, manager)
        out.append(ForkPlay(play, tuple(recorded)))
    return out
