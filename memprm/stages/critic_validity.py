"""The critic's validity checks on the dev dialogue(s), from relabeled teacher trajectories.

Groups (all from the dev dialogues' labeled examples, scored by the critic's φ):

- ranking: every labeled example vs its tier target;
- miss: teacher Noops labeled ``miss`` plus the counterfactual Noops of load-bearing writes (missed) vs the
  teacher Noops labeled ``skip`` (correct);
- mis-attach: counterfactual forced merges vs the teacher's own merges;
- adversarial: counterfactual writes of uninformative turns vs the teacher's real writes;
- deletion causality: on each dev dialogue's final teacher bank, each managed entry is scored by φ of the
  operation that wrote it; the k top / random / bottom entries (k = ``deletion_frac`` of them, at least 1) are
  removed together across dialogues and all official questions of the dialogues re-answered.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memprm.credit.tiers import Tier
from memprm.data.records import Dialogue
from memprm.env.exam import Quiz, QuizItem, ReaderCache, run_exam
from memprm.env.trajectories import DialogueTrajectory
from memprm.eval import ValidityReport, ValidityThresholds, compute_validity, deletion_causality
from memprm.memory.bank import MANAGED_LAYERS
from memprm.stages.relabel_stage import RelabeledDialogue


def critic_validity(
    score,  # Callable[[list[str]], np.ndarray]: φ for rendered operations
    relabeled: Sequence[RelabeledDialogue],
    trajs: Sequence[DialogueTrajectory],
    dialogues: Sequence[Dialogue],
    env,  # MemoryEnv: the exam machinery for deletion causality
    thresholds: ValidityThresholds | None = None,
    deletion_frac: float = 0.1,
    seed: int = 0,
    label: str = "dev",
) -> ValidityReport:
    labeled = [ex for r in relabeled for ex in r.labeled]
    phi = np.asarray(score([e.text for r in relabeled for e in r.examples]), dtype=np.float64)  # [N]
    targets = np.array([ex.target for ex in labeled])

    def pick(pred) -> np.ndarray:
        return phi[[i for i, ex in enumerate(labeled) if pred(ex)]]

    missed = pick(lambda e: e.kind == "noop" and e.tier == Tier.MISS)
    correct = pick(lambda e: e.kind == "noop" and e.tier == Tier.SKIP)
    forced = pick(lambda e: e.source == "cf_forced_merge")
    merges = pick(lambda e: e.source == "teacher" and e.kind == "merge")
    adversarial = pick(lambda e: e.source == "cf_uninformative_write")
    writes = pick(lambda e: e.source == "teacher" and e.kind == "write")
    deletion = _deletion(score, trajs, dialogues, env, deletion_frac, seed)
    return compute_validity(
        ranking=(phi, targets),
        noops=(missed, correct),
        merges=(forced, merges),
        writes=(adversarial, writes),
        deletion=deletion,
        thresholds=thresholds,
        label=label,
    )


def _deletion(score, trajs, dialogues, env, frac: float, seed: int):
    by_id = {d.id: d for d in dialogues}
    entry_text: dict[str, str] = {}
    for i, t in enumerate(trajs):
        op_input = {s.op_id: x for w in t.windows for s, x in zip(w.steps, w.critic_inputs, strict=True)}
        for e in t.final_bank:
            if e.layer in MANAGED_LAYERS and e.versions[0].op_id in op_input:
                entry_text[f"{i}|{e.id}"] = op_input[e.versions[0].op_id]
    if not entry_text:
        return None
    keys = sorted(entry_text)
    entry_scores = dict(zip(keys, np.asarray(score([entry_text[k] for k in keys])).tolist(), strict=True))
    cache = ReaderCache(env.reader, env.judge)

    def accuracy_without(ids: list[str]) -> float:
        accs, weights = [], []
        for i, t in enumerate(trajs):
            hide = [k.split("|", 1)[1] for k in ids if k.startswith(f"{i}|")]
            qs = by_id[t.dialogue_id].questions
            quiz = Quiz(tuple(QuizItem(q, 1.0, "official") for q in qs))
            res = run_exam(t.final_bank.without(hide), quiz, env.reader, env.judge, env.retriever, cache)
            accs.append(res.accuracy)
            weights.append(len(qs))
        return float(np.average(accs, weights=weights)) if sum(weights) else 0.0

    k = max(1, round(frac * len(keys)))
    return deletion_causality(entry_scores, accuracy_without, accuracy_without([]), k, seed)
