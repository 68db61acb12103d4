"""The peer-method controls of issue 25: gold-evidence credit, ``bank/evidence_kept`` and local re-run groups."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy

from memprm.config import load_config, to_dict
from memprm.credit import (
    CreditConfig,
    CreditError,
    Step,
    presence_credit,
    propagate_chain_credit,
    step_credit,
)
from memprm.credit.gold import EvidenceKept, GoldOutcome, gold_credit
from memprm.data.records import Question
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.evaluate import summarize_exams
from memprm.env.exam import ExamResult, Quiz, QuizItem, ReaderCache, run_exam
from memprm.env.gold_evidence import bank_evidence_kept, entry_sources, gold_entry_credit, quiz_evidence
from memprm.env.memory_env import advance_reference
from memprm.env.policy import GateSample
from memprm.env.stack import build_stack
from memprm.memory.bank import MemoryBank
from memprm.models.grpo_batch import prepare_batch
from memprm.models.grpo_config import GRPOConfig
from memprm.rollout import datamodule as datamodule_module
from memprm.rollout.batches import GroupBatch, LocalOrigin, RolloutSteps
from memprm.rollout.datamodule import RolloutDataModule, _Episodes
from memprm.rollout.datamodule_config import RolloutDataConfig
from memprm.rollout.local_groups import LocalRerunConfig
from memprm.rollout.runner import GroupRunner, RolloutConfig

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ gold credit, evidence kept
def hand_bank() -> tuple[MemoryBank, dict[str, str]]:
    """e1: written from D1:1, merged from D1:3; e2 (profile) from D1:2; e3 from D1:9; the verbatim entry of
    D1:5 (a verbatim entry is no managed entry: it holds nothing for credit or coverage)."""
    bank = MemoryBank()
    e1 = bank.write("event", "Alice adopted a puppy", source_turn_ids=["D1:1"]).entry_id
    bank.merge(e1, "Alice's puppy is named Rex", source_turn_ids=["D1:3"])
    e2 = bank.write("profile", "Alice is a nurse", "job", source_turn_ids=["D1:2"]).entry_id
    e3 = bank.write("event", "Bob went hiking", source_turn_ids=["D1:9"]).entry_id
    v = bank.write_verbatim("Alice: I moved to Oslo", turn_id="D1:5").entry_id
    return bank, {"e1": e1, "e2": e2, "e3": e3, "v": v}


def hand_quiz() -> Quiz:
    def item(qid, evidence, weight=1.0, kind="official"):
        return QuizItem(Question(qid, f"question {qid}?", "x", "single-hop", evidence), weight, kind)

    return Quiz((
        item("q1", ("D1:1", "D1:2")),  # correct: held by e1 and e2
        item("q2", ("D1:3",), 2.0),  # wrong (weight 2): held by e1
        item("p1", ("D1:2",), kind="probe"),  # a probe: its anchor is its evidence; correct, held by e2
        item("q3", ()),  # correct, no evidence: pays nobody
        item("q4", ("D1:9",)),  # its call failed (not in `correct`): pays nobody
        item("q5", ("D1:5",)),  # wrong; only the verbatim layer holds D1:5
    ))  # fmt: skip


CORRECT = {"q1": True, "q2": False, "p1": True, "q3": True, "q5": False}


@pytest.mark.parametrize(
    "positive, expected",
    [
        ("max", {"e1": 1.0, "e2": 1.0, "e3": 0.0, "v": 0.0}),
        # e1 holds q1 (w 1, right) and q2 (w 2, wrong): 1/3; e2 holds q1 and p1, both right
        ("mean", {"e1": 1 / 3, "e2": 1.0, "e3": 0.0, "v": 0.0}),
        # q1's weight splits between e1 and e2; p1's goes to e2 alone
        ("share", {"e1": 0.5, "e2": 1.5, "e3": 0.0, "v": 0.0}),
    ],
)
def test_gold_credit_of_a_hand_built_bank(positive, expected):
    bank, ids = hand_bank()
    got = gold_entry_credit(bank, hand_quiz(), CORRECT, positive)
    assert got == pytest.approx({ids[k]: v for k, v in expected.items()})
    assert set(got) == {e.id for e in bank}  # every entry, verbatim included, has a value


def test_gold_credit_rules():
    src = {"a": {"t1"}, "b": {"t2"}}
    with pytest.raises(CreditError, match="given twice"):
        gold_credit(src, [GoldOutcome("q", ("t1",), 1.0, True)] * 2)
    with pytest.raises(CreditError, match="positive"):
        gold_credit(src, [], "sum")
    with pytest.raises(CreditError, match="weight"):
        GoldOutcome("q", ("t1",), 0.0, True)
    # never negative: a wrong answer whose evidence an entry holds costs it nothing
    assert gold_credit(src, [GoldOutcome("q", ("t1",), 1.0, False)]) == {"a": 0.0, "b": 0.0}
    with pytest.raises(CreditError, match="variant 'gold' is computed from the bank"):
        presence_credit([], CreditConfig(variant="gold"))


def test_evidence_kept_of_a_hand_built_bank():
    bank, ids = hand_bank()
    assert entry_sources(bank) == {
        ids["e1"]: {"D1:1", "D1:3"}, ids["e2"]: {"D1:2"}, ids["e3"]: {"D1:9"}
    }  # fmt: skip
    # the quiz's distinct evidence turns: D1:1, D1:2, D1:3, D1:9, D1:5; the managed entries hold all but D1:5
    kept = bank_evidence_kept(bank, quiz_evidence(hand_quiz()))
    assert kept == EvidenceKept(4, 5) and kept.share == 0.8
    assert bank_evidence_kept(bank, []).share is None
    # the test results pool the dialogues' counts
    res = summarize_exams([("d1", ExamResult(())), ("d2", ExamResult(()))], [bank.stats()] * 2,
                          evidence=kept + EvidenceKept(0, 5))  # fmt: skip
    assert res.evidence_kept == 0.4 and res.as_metrics("test")["test/evidence_kept"] == 0.4
    assert summarize_exams([], []).evidence_kept is None


# ------------------------------------------------------------------------------ configs
def _leaves(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out |= _leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v}
    return out


def _arm(name: str) -> dict:
    return _leaves(to_dict(load_config(ROOT / "configs" / "arms" / f"{name}.yaml")))


def _changed(base: str, arm: str) -> dict:
    ours, got = _arm(base), _arm(arm)
    assert set(ours) == set(got)
    return {k: got[k] for k in got if got[k] != ours[k]}


def test_peer_arms_differ_from_ours_only_in_their_keys():
    assert _changed("ours", "gold_credit") == {"arm": "gold_credit", "credit.variant": "gold"}
    assert _changed("ours", "local_reroll") == {
        "arm": "local_reroll", "grpo.advantage_mode": "outcome", "rollout.shaping": "none", "rollout.local.p": 0.5,
    }  # fmt: skip
    assert _changed("outcome_only", "local_reroll") == {"arm": "local_reroll", "rollout.local.p": 0.5}
    assert _arm("local_reroll")["rollout.local.k"] >= 4  # Memory-R2: k >= 4
    spec = importlib.util.spec_from_file_location("run_ladder", ROOT / "experiments" / "run_ladder.py")
    ladder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ladder)
    for arm in ("ours", "local_reroll", "gold_credit"):  # one rollout budget, paid by the re-runs too
        c = ladder.merged_config(
            [ROOT / "configs" / "arms" / f"{arm}.yaml", ROOT / "configs" / "ladder.yaml"]
        )
        budget = c.rollout.group_size * c.rollout_data.groups_per_batch * c.grpo.max_batches
        assert c.rollout_data.max_rollouts == budget
    for bad, match in (({"p": 1.5}, "local.p"), ({"k": 1}, "local.k")):
        with pytest.raises(ValueError, match=match):
            LocalRerunConfig(**bad)
    with pytest.raises(ValueError, match="max_rollouts"):
        RolloutDataConfig(max_rollouts=-1)


# ------------------------------------------------------------------------------ local groups in GRPO
def _rollout(choices, task, stats=None) -> RolloutSteps:
    t = len(choices)
    samples = tuple(GateSample("p", ("noop", "write"), c, logprob=-0.7) for c in choices)
    return RolloutSteps(samples, np.zeros(t, bool), np.zeros(t), np.zeros(t), np.zeros(t), task, stats or {})


def test_local_groups_get_outcome_advantages_and_their_own_metrics():
    main = GroupBatch("d", 1, (_rollout([1, 0], 0.5, {"evidence_kept": 0.5}),
                               _rollout([0, 0], 0.25, {"evidence_kept": 1.0})), 4, 0)  # fmt: skip
    local = {"evidence_kept": 0.0}  # local rollouts stay out of bank/* and task/accuracy
    moved = GroupBatch("d", 2, (_rollout([1], 1.0, local), _rollout([0], 0.0, local)), 3, None,
                       {"local/identical_actions": 0.0}, LocalOrigin(1, 1))  # fmt: skip
    tied = GroupBatch("d", 2, (_rollout([1], 0.5, local), _rollout([1], 0.5, local)), 3, None,
                      {"local/identical_actions": 1.0}, LocalOrigin(1, 0))  # fmt: skip
    prep = prepare_batch([main, moved, tied], 0.0, GRPOConfig(advantage_mode="process"))
    assert prep.statuses[1:] == ("ok", "zero_variance") and prep.local == (False, True, True)
    assert [a.tolist() for a in prep.group_advantages[1]] == [[1.0], [-1.0]]  # (R − mean R) / std R
    assert len(prep.breakdowns) == 2 and prep.tasks.tolist() == [0.5, 0.25]
    m = prep.metrics(0.0)
    assert m["task/accuracy"] == 0.375 and m["bank/evidence_kept"] == 0.75
    assert m["local/groups"] == 2 and m["local/zero_variance_frac"] == 0.5 and m["local/task_accuracy"] == 0.5
    assert m["local/identical_actions"] == 0.5 and m["grpo/groups"] == 3
    assert "local/groups" not in prepare_batch([main], 0.0, GRPOConfig()).metrics(0.0)


# ------------------------------------------------------------------------------ rollouts (tiny models)
@pytest.fixture(scope="module")
def setup():
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=2, n_dev=1, sessions_per_dialogue=3))
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=512"]))
    return data, stack, tiny_scoring_policy()


@pytest.mark.timeout(120)
def test_gold_runner_credits_gold_evidence_without_deletion_tests(setup):
    data, stack, policy = setup
    env, d = stack.env, data["train"][0]
    runner = GroupRunner(env, CreditConfig(variant="gold"), RolloutConfig(group_size=2))
    forks: list[MemoryBank] = []
    batch, _ = runner.run_group(d, 1, MemoryBank(), MemoryBank(), policy, np.random.default_rng(0),
                                torch.Generator().manual_seed(0), forks=forks)  # fmt: skip
    assert batch.stats["audit/audit_reader_calls"] == 0
    reference = MemoryBank()
    advance_reference(reference, d, 1)
    quiz = env.prepare_quiz(d, 1, reference, ReaderCache(env.reader, env.judge)).quiz
    for bank, r in zip(forks, batch.rollouts, strict=True):
        exam = run_exam(bank, quiz, env.reader, env.judge, env.retriever)
        correct = {x.item.question.id: x.correct for x in exam.results if not x.failed}
        chains = {e.id: e.op_ids for e in bank}
        steps = [Step(o.op_id, o.kind, o.layer, o.turn_id) for o in bank.ops if o.kind != "verbatim"]
        expected = step_credit(steps, propagate_chain_credit(gold_entry_credit(bank, quiz, correct), chains))
        assert np.allclose(r.credit, expected) and r.stats["deletion_tests"] == 0
        assert r.stats["evidence_kept"] == bank_evidence_kept(bank, quiz_evidence(quiz)).share
    assert any(r.credit.any() for r in batch.rollouts)  # the check is not vacuous


@pytest.mark.timeout(120)
def test_a_local_group_reruns_the_next_window_from_the_chosen_rollout_s_bank(setup, monkeypatch):
    data, stack, policy = setup
    d = data["train"][0]
    local = LocalRerunConfig(p=1.0, k=2)
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=3, local=local))
    starts, finals, forks = [], [], []  # local groups' start banks, re-runs' final banks, groups' forks
    real_local, real_group = datamodule_module.run_local_group, runner.run_group

    def spy_local(env, dialogue, window, start, *args, **kwargs):
        starts.append(start)
        return real_local(env, dialogue, window, start, *args, **kwargs, finals=finals)

    def spy_group(*args, forks=None, **kwargs):
        out = real_group(*args, forks=forks, **kwargs)
        forks_of_groups.append(list(forks or []))
        return out

    forks_of_groups = forks
    monkeypatch.setattr(datamodule_module, "run_local_group", spy_local)
    monkeypatch.setattr(runner, "run_group", spy_group)
    dm = RolloutDataModule(runner, [d], RolloutDataConfig(seed=0), policy=policy)
    mainline = dm.mainline[d.id]
    main, rerun = dm.next_groups()
    j = rerun.origin.rollout
    assert rerun.origin == LocalOrigin(main.window, j) and rerun.window == d.sessions[1].index
    assert rerun.group_size == 2 and rerun.write_back is None and main.origin is None
    chosen = forks[0][j]
    assert starts == [chosen]  # the chosen rollout's final bank: its bank at the next window's start
    # ... not the mainline the group forked from: the chosen bank holds window 1's play on top of it
    assert chosen.ops[: len(mainline.ops)] == mainline.ops and len(chosen.ops) > len(mainline.ops)
    for bank in finals:  # every re-run continues the chosen bank (its ops first, then window 2's)
        assert bank.ops[: len(chosen.ops)] == chosen.ops and len(bank.ops) > len(chosen.ops)
        assert {t for e in bank.entries("verbatim") for t in e.latest.source_turn_ids} == {
            t.id for s in d.sessions[:2] for t in s.turns
        }
    assert {"local/identical_actions", "local/reader_calls"} <= set(rerun.stats)
    assert dm.rollouts_played == 3 + 2 and dm.state_dict()["rollouts"] == 5  # re-runs are counted
    state = dm.state_dict()
    del state["rollouts"]  # a checkpoint from before local re-runs: G per episode
    again = RolloutDataModule(runner, [d], RolloutDataConfig(seed=0), policy=policy)
    again.load_state_dict(state)
    assert again.rollouts_played == 3


@pytest.mark.timeout(120)
def test_the_rollout_budget_counts_local_reruns_and_ends_the_loader(setup):
    data, stack, policy = setup
    runner = GroupRunner(
        stack.env, CreditConfig(), RolloutConfig(group_size=2, local=LocalRerunConfig(1.0, 2))
    )
    dm = RolloutDataModule(runner, data["train"][:1], RolloutDataConfig(max_rollouts=6), policy=policy)
    batches = list(_Episodes(dm))
    # batch 1: the window-1 group (2) and its re-run of window 2 (2); batch 2: the window-2 group (2), whose
    # re-run would pass the budget; batch 3 would too
    assert [[(g.window, g.is_local) for g in b] for b in batches] == [[(1, False), (2, True)], [(2, False)]]
    assert dm.rollouts_played == 6
    dm2 = RolloutDataModule(runner, data["train"], RolloutDataConfig(max_rollouts=6), policy=policy)
    dm2.trainer = SimpleNamespace(
        global_rank=0, world_size=2, lightning_module=SimpleNamespace(policy=policy)
    )
    with pytest.raises(ValueError, match="would end the ranks at different batches"):
        dm2.setup("fit")
