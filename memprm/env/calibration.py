"""Calibrating the offline reader's abstention threshold on the dev calibration half.

The extractive reader abstains when no retrieved version's cosine with the question reaches its threshold
(:mod:`memprm.llm.reader`, step 2). A fixed threshold either never fires or swallows answerable questions, so a
run chooses it on held-out questions: the manager (the heuristic teacher by default) builds each dev
calibration dialogue's bank, every question is retrieved once, and for each question we record its best score,
whether the reader's answer *without* abstention is judged correct, and whether abstaining is. For each
candidate overlap weight the threshold is the candidate (each observed support, plus "never abstain") with the
best accuracy, ties to the lowest; the weight with the best accuracy wins, ties to the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from memprm.data.records import Dialogue
from memprm.llm.roles import ABSTAIN_ANSWER
from memprm.memory.bank import MemoryBank

NEVER = -1.0  # a threshold no support is below: the reader never abstains


@dataclass(frozen=True)
class Calibration:
    threshold: float
    overlap_weight: float
    accuracy: float  # on the calibration questions, at ``threshold``
    accuracy_never: float  # the same questions with abstention off
    n_questions: int
    n_unanswerable: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def choose_threshold(
    scores: Sequence[float], answered_correct: Sequence[bool], abstain_correct: Sequence[bool]
) -> tuple[float, float]:
    """(threshold, accuracy): abstain on question i iff ``scores[i] < threshold``.

    scores [N] best cosine per question; answered_correct [N] the answer without abstention is right;
    abstain_correct [N] abstaining is right. Candidates: NEVER and every score; ties go to the lowest.
    """
    s = np.asarray(scores, dtype=float)
    ans, abst = np.asarray(answered_correct, dtype=bool), np.asarray(abstain_correct, dtype=bool)
    if not len(s):
        return NEVER, 0.0
    best_t, best_acc = NEVER, float(ans.mean())
    for t in np.unique(s):
        acc = float(np.where(s < t, abst, ans).mean())
        if acc > best_acc + 1e-12:
            best_t, best_acc = float(t), acc
    return best_t, best_acc


OVERLAP_WEIGHTS = (0.0, 0.25, 0.5, 0.75)


def calibrate_abstention(env, dialogues: Sequence[Dialogue], manager) -> Calibration:
    """Choose ``env.reader``'s overlap weight and abstention threshold on ``dialogues`` (module docstring)
    and set them. The weight is chosen from :data:`OVERLAP_WEIGHTS` with its best threshold; ties keep the
    first weight."""
    reader = env.reader
    parts, answered, abstained = [], [], []
    previous = reader.abstain_threshold
    reader.abstain_threshold = NEVER
    try:
        for d in dialogues:
            bank = MemoryBank()
            for s in d.sessions:
                env.play_window(d, s.index, bank, manager)
            for q in d.questions:
                retrieval = env.retriever.retrieve(bank, q.text)
                parts.append(reader.support_parts(q, retrieval))
                answered.append(env.judge.judge(q, reader.answer(q, retrieval).answer).correct)
                abstained.append(env.judge.judge(q, ABSTAIN_ANSWER).correct)
    finally:
        reader.abstain_threshold = previous
    best = None
    for w in OVERLAP_WEIGHTS:
        scores = [NEVER if p is None else float(np.max((1 - w) * p[0] + w * p[1])) for p in parts]
        threshold, acc = choose_threshold(scores, answered, abstained)
        if best is None or acc > best[2] + 1e-12:
            best = (w, threshold, acc)
    w, threshold, acc = best
    reader.overlap_weight, reader.abstain_threshold = w, threshold
    return Calibration(
        threshold, w, acc, float(np.mean(answered)) if answered else 0.0, len(parts), int(sum(abstained))
    )
