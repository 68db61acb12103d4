"""tools/sft_confusion.py: the greedy pick's kind and whether it is the teacher's very candidate."""

import pytest
import torch
from helpers.tools_loader import load_tool

from memprm.env.policy import GateSample

pytestmark = pytest.mark.timeout(60)


class _Scores:
    """A policy whose log-prob of candidate j is scores[j], whatever the gate."""

    def __init__(self, scores):
        self.scores = torch.tensor(scores)

    def log_probs(self, alts):
        return self.scores[[a.choice for a in alts]], torch.zeros(len(alts))


def test_greedy_pick_tells_a_wrong_merge_target_from_the_teachers():
    tool = load_tool("sft_confusion")
    cands = ("noop:", "write: a note", "merge: into e1", "merge: into e2")
    teacher_merged_e1 = GateSample(prompt="", candidates=cands, choice=2)
    assert tool.greedy_pick(_Scores([-3.0, -2.0, -0.1, -1.0]), teacher_merged_e1) == ("merge", True)
    assert tool.greedy_pick(_Scores([-3.0, -2.0, -1.0, -0.1]), teacher_merged_e1) == ("merge", False)
    assert tool.greedy_pick(_Scores([-0.5, -0.5, -1.0, -1.0]), teacher_merged_e1) == ("noop", False)  # tie: first
