"""Grouped rollouts (fork / write-back, per-step measurements) and the rollout DataModule's state."""

import numpy as np
import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy

from memprm.config import load_config
from memprm.credit import CreditConfig, suffix_min_shaping, sum_shaping
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.evaluate import evaluate_manager, greedy_manager
from memprm.env.stack import build_stack
from memprm.memory.bank import MemoryBank
from memprm.rollout.datamodule import RolloutDataModule
from memprm.rollout.datamodule_config import RolloutDataConfig
from memprm.rollout.forks import play_forks
from memprm.rollout.runner import GroupRunner, RolloutConfig
from memprm.timing import Stopwatch

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def setup():
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=2, n_dev=1, sessions_per_dialogue=3))
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=512"]))
    return data, stack, tiny_scoring_policy()


def critic(texts):
    """A fake critic with known scores: writes 0.8, merges 0.6, noops 0.3."""
    return np.array(
        [0.8 if "operation: WRITE" in t else 0.6 if "operation: MERGE" in t else 0.3 for t in texts]
    )


def test_run_group_forks_measures_and_writes_back(setup):
    data, stack, policy = setup
    d = data["train"][0]
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=3), critic)
    mainline, reference = MemoryBank(), MemoryBank()
    reader, answered = stack.env.reader, []

    class CountingReader:
        def answer(self, question, retrieval):
            answered.append(question.id)
            return reader.answer(question, retrieval)

    stack.env.reader = CountingReader()
    try:
        batch, new = runner.run_group(
            d, 1, mainline, reference, policy, np.random.default_rng(0), torch.Generator().manual_seed(0)
        )
    finally:
        stack.env.reader = reader
    calls = {k: batch.stats[f"audit/{k}_reader_calls"] for k in ("gate", "quiz", "audit")}
    assert sum(calls.values()) == len(answered) and calls["quiz"] <= 3 * batch.quiz_size
    assert calls["audit"] <= sum(r.stats["deletion_tests"] for r in batch.rollouts)
    assert len(mainline) == 0 and len(mainline.ops) == 0  # the mainline itself is never touched
    assert len(reference.entries("verbatim")) == len(d.sessions[0].turns)
    assert batch.group_size == 3 and 0 <= batch.write_back < 3
    assert len(new.entries("verbatim")) == len(d.sessions[0].turns)
    gates = 2 * sum(1 for t in d.sessions[0].turns if len(t.text.split()) >= stack.env.cfg.gate_min_words)
    for r in batch.rollouts:
        assert r.n_steps == gates and all(np.isfinite(r.credit)) and set(np.unique(r.miss)) <= {0.0, 1.0}
        assert 0.0 <= r.task <= 1.0 and r.stats["context_tokens"] >= 0
        assert list(r.noop) == [s.choice == 0 for s in r.samples]  # candidate 0 is the Noop
    assert 0.0 <= batch.stats["time/outside_models_share"] <= 1.0
    assert {"probe/gate1_pass", "time/policy", "time/total"} <= set(batch.stats)


def test_greedy_write_back_is_a_greedy_play_of_the_window(setup):
    data, stack, policy = setup
    d = data["train"][0]
    with pytest.raises(ValueError, match="rollout.write_back must be random or greedy"):
        RolloutConfig(write_back="best")
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=2, write_back="greedy"), critic)
    mainline, forks = MemoryBank(), []
    batch, new = runner.run_group(
        d, 1, mainline, MemoryBank(), policy, np.random.default_rng(0), torch.Generator().manual_seed(0),
        forks=forks,
    )  # fmt: skip
    assert batch.write_back is None and all(new is not f for f in forks) and len(mainline.ops) == 0
    greedy = [mainline.fork()]
    play_forks(stack.env, d, 1, greedy, policy, Stopwatch(), greedy=True)

    def trace(bank):
        return [(o.kind, o.layer, o.turn_id, o.content) for o in bank.ops]

    assert trace(new) == trace(greedy[0]) and len({o.kind for o in new.ops}) > 1  # not all Noops


def test_suffix_min_shaping_reaches_the_steps(setup):
    data, stack, policy = setup
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=1), critic)
    batch, _ = runner.run_group(
        data["train"][0],
        1,
        MemoryBank(),
        MemoryBank(),
        policy,
        np.random.default_rng(1),
        torch.Generator().manual_seed(1),
    )
    r = batch.rollouts[0]
    # scoring-policy candidates: 0 Noop, 1 Write, 2+ Merge; the fake critic scores 0.3 / 0.8 / 0.6
    scores = np.array([0.3 if s.choice == 0 else 0.8 if s.choice == 1 else 0.6 for s in r.samples])
    assert np.allclose(r.shaping, suffix_min_shaping(scores, r.noop))
    none = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=1, shaping="none"), critic)
    b2, _ = none.run_group(
        data["train"][0],
        1,
        MemoryBank(),
        MemoryBank(),
        policy,
        np.random.default_rng(1),
        torch.Generator().manual_seed(1),
    )
    assert not b2.rollouts[0].shaping.any()


@pytest.mark.timeout(300)
def test_sum_shaping_is_scaled_by_rollout_sum_scale(setup):
    data, stack, policy = setup

    def shaping(sum_scale):
        cfg = RolloutConfig(group_size=1, shaping="sum", sum_scale=sum_scale)
        batch, _ = GroupRunner(stack.env, CreditConfig(), cfg, critic).run_group(
            data["train"][0], 1, MemoryBank(), MemoryBank(), policy, np.random.default_rng(1),
            torch.Generator().manual_seed(1),
        )  # fmt: skip
        return batch.rollouts[0]

    plain, scaled = shaping(1.0), shaping(0.25)
    assert [s.choice for s in plain.samples] == [s.choice for s in scaled.samples]  # the same play
    scores = np.array([0.3 if s.choice == 0 else 0.8 if s.choice == 1 else 0.6 for s in plain.samples])
    assert (~plain.noop).any() and np.allclose(plain.shaping, sum_shaping(scores, plain.noop))
    expected = np.where(plain.noop, plain.shaping, 0.25 * plain.shaping)  # Noops keep their direct payout
    assert np.allclose(scaled.shaping, expected)
    with pytest.raises(ValueError, match="rollout.sum_scale=auto is resolved by the GRPO stage"):
        GroupRunner(stack.env, CreditConfig(), RolloutConfig(shaping="sum"), critic)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="rollout.sum_scale must be auto or a finite number > 0"):
            RolloutConfig(sum_scale=bad)


def test_datamodule_round_robin_and_state_round_trip(setup):
    data, stack, policy = setup
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=2), critic)
    dm = RolloutDataModule(runner, data["train"], RolloutDataConfig(seed=3), policy=policy)
    first = [dm.next_group() for _ in range(3)]
    assert [(b.dialogue_id, b.window) for b in first] == [
        (data["train"][0].id, 1),
        (data["train"][1].id, 1),
        (data["train"][0].id, 2),
    ]
    state = dm.state_dict()
    cont = dm.next_group()
    dm2 = RolloutDataModule(runner, data["train"], RolloutDataConfig(seed=99), policy=policy)
    dm2.load_state_dict(state)
    again = dm2.next_group()
    assert (again.dialogue_id, again.window, again.write_back) == (
        cont.dialogue_id,
        cont.window,
        cont.write_back,
    )
    for a, b in zip(again.rollouts, cont.rollouts, strict=True):
        assert [s.choice for s in a.samples] == [s.choice for s in b.samples]
        assert np.allclose(a.credit, b.credit) and a.task == b.task
    # a rank's state does not load into another rank
    other = RolloutDataModule(runner, data["train"], RolloutDataConfig(), policy=policy)
    other.rank, other.world_size = 1, 2
    other._reset_state()
    with pytest.raises(ValueError, match="rank"):
        other.load_state_dict(state)
    assert [d.id for d in other.dialogues] == [data["train"][1].id]


def test_dialogue_restarts_after_its_last_window(setup):
    data, stack, policy = setup
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=1))
    dm = RolloutDataModule(runner, data["train"][:1], policy=policy)
    windows = [dm.next_group().window for _ in range(4)]
    assert windows == [1, 2, 3, 1]
    assert len(dm.mainline[data["train"][0].id].entries("verbatim")) == len(
        data["train"][0].sessions[0].turns
    )


def test_datamodule_refuses_a_policy_other_than_the_module_s(setup):
    from types import SimpleNamespace

    data, stack, policy = setup
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=1))
    dm = RolloutDataModule(runner, data["train"][:1], policy=policy)
    same = SimpleNamespace(global_rank=0, world_size=1, lightning_module=SimpleNamespace(policy=policy))
    dm.trainer = same
    dm.setup("fit")  # the module trains the policy that plays: fine
    dm.trainer = SimpleNamespace(global_rank=0, world_size=1, lightning_module=SimpleNamespace(policy=object()))
    with pytest.raises(ValueError, match="not the LightningModule's policy"):
        dm.setup("fit")


def test_evaluate_manager_on_final_banks(setup):
    data, stack, policy = setup
    res = evaluate_manager(stack.env, data["dev"], greedy_manager(policy), progress=False)
    assert res.n_questions == sum(len(d.questions) for d in data["dev"])
    assert 0.0 <= res.accuracy <= 1.0 and set(res.by_category) <= {
        "single-hop",
        "multi-hop",
        "temporal",
        "knowledge-update",
        "previous-value",
        "unanswerable",
    }
    teacher = evaluate_manager(stack.env, data["dev"], stack.teacher, progress=False)
    assert teacher.entries > 0
    # the clusters of the interval: every dialogue's counts, adding up to the pooled accuracy
    for r in (res, teacher):
        assert list(r.per_dialogue_questions) == [d.id for d in data["dev"]]
        assert sum(r.per_dialogue_questions.values()) == r.n_questions
        assert sum(r.per_dialogue_correct.values()) == round(r.accuracy * r.n_questions)
        assert all(r.per_dialogue[i] == r.per_dialogue_correct[i] / r.per_dialogue_questions[i]
                   for i in r.per_dialogue)  # fmt: skip
        ci = r.interval()
        assert ci.clusters == len(data["dev"]) and ci.estimate == pytest.approx(r.accuracy)
    assert res.as_metrics("test")["test/accuracy"] == res.accuracy


def test_cumulative_quiz_reasks_every_question_unlocked_so_far(setup):
    """rollout.quiz=cumulative: window w's quiz holds every official question unlocked through w (the last
    window: the whole dialogue, as the test protocol asks); the window scope only those w unlocks."""
    from memprm.env.exam import ReaderCache, unlocked_questions
    from memprm.env.memory_env import advance_reference

    data, stack, _ = setup
    d = data["train"][0]
    reference = MemoryBank()
    seen: list[str] = []
    per_window = {}
    for s in d.sessions:
        advance_reference(reference, d, s.index)
        cache = ReaderCache(stack.env.reader, stack.env.judge)
        window = stack.env.prepare_quiz(d, s.index, reference, cache)
        cumul = stack.env.prepare_quiz(d, s.index, reference, cache, cumulative=True)
        official = lambda q: {i.question.id for i in q.quiz.items if i.kind == "official"}  # noqa: E731
        now = [t.id for t in s.turns]
        assert official(window) == {q.id for q in unlocked_questions(d, seen, now)}
        seen += now
        assert official(cumul) == {q.id for q in unlocked_questions(d, [], seen)}
        assert official(window) <= official(cumul)
        per_window[s.index] = official(cumul)
    assert per_window[d.sessions[-1].index] == {q.id for q in d.questions}  # the last window asks them all
    assert len(per_window[d.sessions[0].index]) < len(d.questions)


def test_run_group_hands_out_every_fork_when_asked(setup):
    data, stack, policy = setup
    d = data["train"][0]
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=3, quiz="cumulative"), critic)
    forks: list[MemoryBank] = []
    batch, new = runner.run_group(
        d, 1, MemoryBank(), MemoryBank(), policy, np.random.default_rng(0), torch.Generator().manual_seed(0),
        forks=forks,
    )  # fmt: skip
    assert len(forks) == 3 and forks[batch.write_back] is new
    with pytest.raises(ValueError, match="rollout.quiz"):
        RolloutConfig(quiz="dialogue")


def test_cited_version_credit_goes_to_the_op_that_wrote_the_version_read():
    """``credit.chain=cited_version``: a hand-played window writes a job, then merges two new values into it
    (a 3-version chain); the quiz asks the value *before* the newest, which the reader reads from the middle
    version. Only the Merge that wrote that version gets the entry's credit, not the Write or the newest
    Merge (the chain's newest version is only the default when the reader does not say what it read)."""
    from datetime import datetime

    from memprm.data.records import Dialogue, Question, Session, Turn
    from memprm.env.gates import Action, EnvConfig
    from memprm.env.memory_env import MemoryEnv
    from memprm.env.policy import GateSample
    from memprm.llm.judge import F1Judge
    from memprm.llm.reader import ExtractiveReader, ReaderConfig
    from memprm.memory import HashingEmbedder, Retriever

    said = ["I teach kids at the local school every weekday morning.",
            "I changed careers and spend long shifts on the hospital wards.",
            "Big news, I fly planes for an airline since last month."]  # fmt: skip
    values = ["Ana works as a teacher", "Ana now works as a nurse", "Ana now works as a pilot"]
    turns = tuple(Turn(f"D1:{i + 1}", "Ana", text, 1) for i, text in enumerate(said))
    question = Question("q1", "What did Ana work as before pilot?", "nurse", "single-hop",
                        evidence=tuple(t.id for t in turns))  # fmt: skip
    d = Dialogue("d", ("Ana", "Bo"), (Session(1, datetime(2023, 5, 8), turns),), (question,))

    class NoProbes:
        def generate(self, dialogue, turns):
            return []

    class Scripted:
        """Profile gates: Write the first value, then Merge each next one into it; event gates: Noop."""

        def act(self, obs, *, greedy=False, generator=None):
            i = [t.id for t in turns].index(obs.turn.id)
            if obs.layer != "profile":
                return Action.noop(), GateSample("")
            if i == 0:
                return Action("write", values[0], key="job"), GateSample("")
            return Action("merge", values[i], entry_id=obs.neighbours[0].entry_id), GateSample("")

    emb = HashingEmbedder(dim=512)
    reader = ExtractiveReader(emb, ReaderConfig(abstain_threshold=0.05))
    env = MemoryEnv(EnvConfig(), Retriever(emb), reader, F1Judge(), NoProbes())

    def credit(chain: str):
        runner = GroupRunner(env, CreditConfig(chain=chain), RolloutConfig(group_size=1, shaping="none"))
        batch, bank = runner.run_group(d, 1, MemoryBank(), MemoryBank(), Scripted(), np.random.default_rng(0))
        (job,) = bank.entries("profile")
        assert [v.content for v in job.versions] == values and batch.rollouts[0].task == 1.0
        return batch.rollouts[0].credit[~batch.rollouts[0].noop]  # the Write, Merge, Merge steps

    every = credit("unnormalized")
    assert every[0] > 0 and list(every) == [every[0]] * 3  # every op on the chain
    assert list(credit("cited_version")) == [0.0, every[0], 0.0]  # only the op that wrote "nurse"


def test_reward_alignment_tool_reports_signal_beside_test_accuracy(tmp_path, capsys):
    """The tool's per-manager columns compose into the return (no critic: return = R + Σu − Σmiss at unit
    weights), its accuracy is the test protocol's on the same dialogues, and every Spearman is a correlation."""
    import json

    from helpers.tools_loader import load_tool

    from memprm.configtools import ConfigError

    tool = load_tool("reward_alignment")
    out = tmp_path / "align.json"
    tiny = ["data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
            "data.synthetic.sessions_per_dialogue=2", "embedder.kind=hashing", "embedder.dim=256",
            "rollout.quiz=cumulative"]  # fmt: skip
    assert tool.main(["--json", str(out), "--group", "3", *tiny]) == 0
    got = json.loads(out.read_text())
    assert got["quiz"] == "cumulative" and got["shaping"] == "none"
    names = {"Noop-only", "Write-all (raw turns)", "heuristic teacher", "oracle (annotations)",
             "gold decisions (real notes)", "teacher, merge by key"}
    assert names | {f"random (seed {s})" for s in range(3)} == set(got["managers"])
    for name, row in got["managers"].items():
        assert row["return"] == pytest.approx(row["R"] + row["credit"] - row["miss"]), name
        assert row["shaping"] == 0.0 and 0.0 <= row["accuracy"] <= 1.0 and row["episodes"] == 2
    assert got["managers"]["Noop-only"]["credit"] == 0.0  # a Noop touches no entry
    for col in ("R", "credit", "return"):
        rho = got["spearman_vs_accuracy"][col]["value"]
        assert rho is None or -1.0 <= rho <= 1.0
    assert got["within_group"]["R"]["groups"] == 2  # one G = 3 group per window of the train dialogue
    assert "| heuristic teacher |" in capsys.readouterr().out
    # --target end: forks ranked by the whole dialogue's exam after the teacher plays the rest
    assert tool.main(["--json", str(out), "--group", "3", "--within-only", "--target", "end", *tiny]) == 0
    end = json.loads(out.read_text())["within_group"]
    assert end["target"] == "end" and end["R"]["groups"] == 2 and not got["managers"] == {}
    # --manager keeps those rows (the same numbers as in the full table); --no-within skips the groups
    picked = ["--manager", "teacher, merge by key", "--manager", "heuristic teacher", "--no-within"]
    assert tool.main(["--json", str(out), *picked, *tiny]) == 0
    few = json.loads(out.read_text())
    assert list(few["managers"]) == ["heuristic teacher", "teacher, merge by key"]  # the line-up's order
    assert few["managers"]["heuristic teacher"] == got["managers"]["heuristic teacher"]
    assert few["within_group"]["R"]["mean_spearman"] is None
    with pytest.raises(SystemExit, match="no manager named"):
        tool.main(["--manager", "teacher", "--no-within", *tiny])
    cfg = load_config(None, tiny)
    stack = build_stack(cfg)
    d = generate_synthetic(cfg.data.synthetic)["train"][0]
    cache = tool.ReaderCache(stack.env.reader, stack.env.judge)
    from_empty = tool.end_accuracy(stack.env, d, d.sessions[0].index - 1, MemoryBank(), stack.teacher, cache)
    test_protocol = evaluate_manager(stack.env, [d], greedy_manager(tool.as_gate_policy(stack.teacher)))
    assert from_empty == pytest.approx(test_protocol.accuracy)  # from an empty bank: the test protocol
    with pytest.raises(ConfigError, match="notes.kind=oracle"):  # annotation notes would leak gold facts
        tool.main(["--json", str(tmp_path / "o.json"), "notes.kind=oracle", *tiny])
    assert not (tmp_path / "o.json").exists()


def test_horizon_quizzes_later_questions_and_writes_back_the_window_end(setup):
    """rollout.horizon: the forks play later sessions greedily before the quiz, which then asks what those
    sessions unlock; samples, the shared reference and the written-back bank stay at the window's end."""
    from memprm.env.exam import ReaderCache
    from memprm.env.memory_env import advance_reference
    from memprm.models.grpo_batch import prepare_batch
    from memprm.models.grpo_config import GRPOConfig

    with pytest.raises(ValueError, match="needs rollout.quiz=cumulative"):
        RolloutConfig(horizon=1)
    with pytest.raises(ValueError, match="integer >= -1"):
        RolloutConfig(horizon=-2, quiz="cumulative")
    data, stack, policy = setup
    d = data["train"][0]
    first, second = d.sessions[0].index, d.sessions[1].index
    sizes = {}
    for horizon in (0, 1, -1):
        runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(2, quiz="cumulative", horizon=horizon), critic)
        reference, forks = MemoryBank(), []
        batch, new = runner.run_group(
            d, first, MemoryBank(), reference, policy, np.random.default_rng(0), torch.Generator().manual_seed(0),
            forks=forks,
        )  # fmt: skip
        n_first = len(d.sessions[0].turns)
        assert len(reference.entries("verbatim")) == n_first  # the dialogue's reference: this window only
        assert all(len(b.entries("verbatim")) == n_first for b in (new, *forks)) and new is forks[batch.write_back]
        gates = 2 * sum(1 for t in d.sessions[0].turns if len(t.text.split()) >= stack.env.cfg.gate_min_words)
        assert all(r.n_steps == gates for r in batch.rollouts)
        continued = {0: 0, 1: 1, -1: len(d.sessions) - 1}[horizon]
        assert batch.stats["rollout/continued_sessions"] == continued
        logged = prepare_batch([batch], 0.2, GRPOConfig()).metrics(0.2)  # what TensorBoard gets
        assert logged["rollout/continued_sessions"] == continued
        sizes[horizon] = batch.quiz_size
    ref = MemoryBank()
    advance_reference(ref, d, first)
    advance_reference(ref, d, second)
    cache = ReaderCache(stack.env.reader, stack.env.judge)
    through = stack.env.prepare_quiz(d, first, ref, cache, True, second)
    assert sizes[1] == len(through.quiz) and sizes[0] < sizes[1] < sizes[-1]
    with pytest.raises(ValueError, match="needs cumulative=True"):
        stack.env.prepare_quiz(d, first, ref, cache, False, second)
