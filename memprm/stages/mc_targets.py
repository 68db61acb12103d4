"""Monte-Carlo critic targets (``critic.target=mc``): the AgentPRM control (Choudhury, 2025; paper §4.2).

In each train window with a non-empty quiz, ``critic.mc_steps_per_window`` teacher operations are sampled. Each
is continued ``critic.mc_continuations`` times: a fork of the bank at the window's start replays the teacher's
recorded actions up to and including the operation (ids and kinds checked against the record), then the
behaviour policy (the teacher with ε-random actions) plays the window's remaining gates. Each continuation
sits the window's own quiz (as the teacher's exam; no audit) and its score R ∈ [0, 1] is one sample of the
return; the operation's target u is the mean. The example text and u_rr are the audit example's (the same
decision-time rendering and retrieval log), so only u differs; it carries no tier, so ``critic.miss_repeats``
(a reweighting by audit label) does not apply. Unsampled operations and counterfactuals are left out. The
dev side (Lightning's val metrics, the validity report) keeps the audit labels, every critic's yardstick.
The cost (continuations played and examined, reader and judge calls, wall time) is :class:`MCCost`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from memprm.credit.tiers import TeacherDecision
from memprm.data.records import Dialogue
from memprm.env.exam import ReaderCache, run_exam
from memprm.env.gates import Action, Observation
from memprm.env.managers import NoisyManager
from memprm.env.memory_env import Manager, MemoryEnv, WindowPlay, advance_reference
from memprm.env.replay import check_gate, recorded_action
from memprm.env.trajectories import DialogueTrajectory, WindowRecord
from memprm.llm.failures import FailureGuard
from memprm.memory.bank import MemoryBank
from memprm.models.critic_config import CriticConfig
from memprm.models.critic_data import CriticExample
from memprm.stages.relabel_stage import RelabeledDialogue

Behaviour = Callable[[int], Manager]  # seed -> the manager that plays a continuation's remaining gates


@dataclass(frozen=True)
class MCStep:
    dialogue_id: str
    window: int
    op_id: str
    #: the exam score R of each continuation whose exam did not fail entirely.
    returns: tuple[float, ...]

    @property
    def target(self) -> float:
        return float(np.mean(self.returns))


@dataclass(frozen=True)
class MCCost:
    """What the MC targets cost: ``rollouts`` continuation windows were played and examined."""

    rollouts: int
    sampled_steps: int
    teacher_steps: int  # every gate decision of the train teacher trajectories
    #: gates the behaviour policy decided in the continuations (its teacher's calls when it is an LLM)
    behaviour_gates: int
    windows: int  # train windows with a non-empty quiz (each one teacher exam and audit)
    reader_calls: int  # reader cache misses: the quizzes' probe gates and the continuations' exams
    judge_calls: int
    failed_exams: int  # continuations whose every question failed (left out of their step's mean)
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def mc_summary(cost: dict) -> str:
    """One line for the log and the stage summary, from :meth:`MCCost.to_dict`."""
    c = cost
    return (
        f"MC targets: {c['sampled_steps']} of {c['teacher_steps']} train operations in {c['windows']} "
        f"windows, {c['rollouts']} continuation rollouts ({c['failed_exams']} failed, "
        f"{c['behaviour_gates']} behaviour-policy gates), "
        f"{c['reader_calls']} reader / {c['judge_calls']} judge calls, {c['seconds']:.0f} s"
    )


def noisy_teacher(teacher: Manager, epsilon: float) -> Behaviour:
    return lambda seed: NoisyManager(teacher, epsilon, seed)


class Continuation:
    """Replays ``recorded`` (one window's teacher decisions) at gates 0..``upto``, then asks ``behaviour``
    (None: replays them all, and a gate beyond the record is an error)."""

    def __init__(self, recorded: Sequence[TeacherDecision], upto: int, behaviour: Manager | None = None):
        self.recorded, self.upto, self.behaviour, self.gate = recorded, upto, behaviour, 0

    def __call__(self, obs: Observation) -> Action:
        i, self.gate = self.gate, self.gate + 1
        if i > self.upto and self.behaviour is not None:
            return self.behaviour(obs)
        where = f"MC replay of {obs.dialogue_id} window {obs.window}, gate {i} ({obs.turn.id}/{obs.layer})"
        if i >= len(self.recorded):
            raise RuntimeError(f"{where}: the teacher record has {len(self.recorded)} gates")
        check_gate(self.recorded[i], obs, where)
        return recorded_action(self.recorded[i])


def _check_replay(play: WindowPlay, rec: WindowRecord, upto: int, dialogue_id: str) -> None:
    """The replayed gates 0..``upto`` made the teacher's recorded operations (same op ids and kinds)."""
    got = [(s.op_id, s.kind) for s in play.steps[: upto + 1]]
    want = [(s.op_id, s.kind) for s in rec.steps[: upto + 1]]
    if got != want or len(play.steps) != len(rec.steps):
        raise RuntimeError(f"MC replay of {dialogue_id} window {rec.window} diverged from its teacher record")


def mc_returns(
    env: MemoryEnv,
    dialogues: Sequence[Dialogue],
    trajs: Sequence[DialogueTrajectory],
    steps_per_window: int,
    continuations: int,
    behaviour: Behaviour,
    seed: int,
) -> tuple[list[MCStep], MCCost]:
    """The continuation returns of the sampled operations of ``trajs`` (the teacher on ``dialogues``). The
    sample and each continuation's behaviour seed are fixed by ``seed`` and the position (dialogue in
    ``trajs``, window, gate, continuation)."""
    t0, by_id = time.perf_counter(), {d.id: d for d in dialogues}
    out, guard = [], FailureGuard()
    n = dict(rollouts=0, steps=0, gates=0, windows=0, reader=0, judge=0, failed=0)
    for di, traj in enumerate(trajs):
        dialogue = by_id[traj.dialogue_id]
        bank, reference = MemoryBank(), MemoryBank()
        for rec in traj.windows:
            start, last = bank.fork(), len(rec.steps) - 1
            advance_reference(reference, dialogue, rec.window)
            mainline = env.play_window(dialogue, rec.window, bank, Continuation(rec.decisions, last))
            _check_replay(mainline, rec, last, traj.dialogue_id)  # bank is now the next window's start
            n["steps"] += len(rec.steps)
            if not rec.quiz_size or not rec.steps:
                continue
            n["windows"] += 1
            cache = ReaderCache(env.reader, env.judge)
            quiz = env.prepare_quiz(dialogue, rec.window, reference, cache).quiz
            rng = np.random.default_rng([seed, di, rec.window])
            for t in sorted(int(i) for i in rng.choice(last + 1, min(steps_per_window, last + 1), False)):
                returns = []
                for k in range(continuations):
                    manager = behaviour(_seed(seed, di, rec.window, t, k))
                    fork = start.fork()
                    play = env.play_window(
                        dialogue, rec.window, fork, Continuation(rec.decisions, t, manager)
                    )
                    _check_replay(play, rec, t, traj.dialogue_id)
                    exam = run_exam(fork, quiz, env.reader, env.judge, env.retriever, cache)
                    n["rollouts"] += 1
                    n["gates"] += last - t
                    if exam.all_failed:
                        n["failed"] += 1
                    else:
                        returns.append(exam.accuracy)
                if returns:
                    out.append(MCStep(traj.dialogue_id, rec.window, rec.steps[t].op_id, tuple(returns)))
            n["reader"] += cache.reader_calls
            n["judge"] += cache.judge_calls
            guard.check(f"MC continuations of {traj.dialogue_id}, window {rec.window}")
    cost = MCCost(
        n["rollouts"], len(out), n["steps"], n["gates"], n["windows"], n["reader"], n["judge"], n["failed"],
        time.perf_counter() - t0,
    )  # fmt: skip
    return out, cost


def _seed(*position: int) -> int:
    return int(np.random.SeedSequence(list(position)).generate_state(1)[0])


def mc_examples(steps: Sequence[MCStep], relabeled: Sequence[RelabeledDialogue]) -> list[CriticExample]:
    """One critic example per step: its teacher example (text, u_rr) with u = the step's mean return."""
    teacher = {
        (r.dialogue_id, lab.op_id): ex
        for r in relabeled
        for lab, ex in zip(r.labeled, r.examples, strict=True)
        if lab.source == "teacher"
    }
    return [replace(teacher[(s.dialogue_id, s.op_id)], u=s.target, kind="mc_rollout", tier="") for s in steps]


def mc_train_examples(
    stack, dialogues, trajs, relabeled, cfg: CriticConfig, seed: int
) -> tuple[list[CriticExample], list[MCStep], MCCost]:
    """The MC critic's training set on ``dialogues`` under ``cfg`` (a ``target=mc`` critic config), the
    behaviour policy being ``stack.teacher`` with ``cfg.mc_epsilon``."""
    steps, cost = mc_returns(
        stack.env, dialogues, trajs, cfg.mc_steps_per_window, cfg.mc_continuations,
        noisy_teacher(stack.teacher, cfg.mc_epsilon), seed,
    )  # fmt: skip
    return mc_examples(steps, relabeled), steps, cost
