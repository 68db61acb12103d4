"""Replay of a window with one operation taken back (issue 26's replay validation): the id map, orphaned
Merges, an exact reproduction without a drop, and the validation's pieces on a tiny dialogue."""

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from memprm.config import load_config
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.exam import run_exam
from memprm.env.gates import Action
from memprm.env.managers import as_gate_policy
from memprm.env.replay import replay_window
from memprm.env.stack import build_stack
from memprm.eval.metrics import bootstrap_spearman
from memprm.inspect.replay_validation import ReplayedOp, play_windows, replay_ops, sample_ops, summarize
from memprm.memory.bank import MemoryBank

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "replay_validation", ROOT / "experiments" / "replay_validation.py"
)
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def world():
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=2))
    cfg = load_config(None, ["embedder.kind=hashing", "embedder.dim=256"])
    return data["train"][0], build_stack(cfg), cfg


class Scripted:
    """On the event gates: Write A, Write B, Merge into A, Merge into B, Merge into the entry from before the
    window, then Noops; other layers Noop."""

    def __init__(self, bank: MemoryBank):
        self.bank, self.n, self.ids = bank, 0, {}

    def __call__(self, obs):
        if obs.layer != "event":
            return Action.noop()
        self.n += 1
        last = [e.id for e in self.bank.entries("event")]
        if self.n == 1:
            return Action("write", "alpha fact one", "a")
        if self.n == 2:
            self.ids["A"] = last[-1]
            return Action("write", "beta fact two", "b")
        if self.n == 3:
            self.ids["B"] = last[-1]
            return Action("merge", "alpha fact three", entry_id=self.ids["A"])
        if self.n == 4:
            return Action("merge", "beta fact four", entry_id=self.ids["B"])
        if self.n == 5:
            return Action("merge", "older event again", entry_id=self.bank.entries("event")[0].id)
        return Action.noop()


def scripted_window(world):
    d, stack, _ = world
    start = MemoryBank()
    start.write("event", "older event kept", key="old", turn_id="t-old")  # an entry from an earlier window
    bank = start.fork()
    manager = Scripted(bank)
    play = stack.env.play_window(d, d.sessions[0].index, bank, manager)
    return d, stack, start, bank, play, manager.ids


def _contents(bank: MemoryBank, layer: str = "event") -> list[tuple[str, ...]]:
    return [tuple(v.content for v in e.versions) for e in bank.entries(layer)]


def test_a_replay_without_a_drop_reproduces_the_window(world):
    d, stack, start, bank, play, _ = scripted_window(world)
    rep = replay_window(stack.env, d, d.sessions[0].index, start, play.decisions, None)
    assert [(o.op_id, o.kind, o.entry_id, o.content) for o in rep.bank.ops] == [
        (o.op_id, o.kind, o.entry_id, o.content) for o in bank.ops
    ]
    assert rep.orphaned_merges == 0 and rep.play.invalid_actions == 0
    assert len(start.ops) == 1  # the starting bank is never touched


def test_dropping_a_write_orphans_its_merges_and_remaps_later_ids(world):
    d, stack, start, bank, play, ids = scripted_window(world)
    assert _contents(bank) == [
        ("older event kept", "older event again"),
        ("alpha fact one", "alpha fact three"),
        ("beta fact two", "beta fact four"),
    ]
    gate_a = next(
        i for i, x in enumerate(play.decisions) if x.kind == "write" and x.content == "alpha fact one"
    )
    rep = replay_window(stack.env, d, d.sessions[0].index, start, play.decisions, gate_a)
    # A is gone with its Merge (an orphan, made a Noop); B, its Merge and the old entry's Merge remain
    assert _contents(rep.bank) == [
        ("older event kept", "older event again"),
        ("beta fact two", "beta fact four"),
    ]
    assert rep.orphaned_merges == 1 and rep.play.invalid_actions == 0
    # the dropped Write used up its id: B and every later entry (verbatim too) keep their recorded ids
    assert ids["A"] not in rep.bank and rep.bank.entries("event")[1].id == ids["B"]
    assert {e.id for e in rep.bank} == {e.id for e in bank} - {ids["A"]}
    assert [s.kind for s in rep.play.steps].count("noop") == [s.kind for s in play.steps].count("noop") + 2


def test_dropping_a_merge_shortens_its_chain_only(world):
    d, stack, start, bank, play, _ = scripted_window(world)
    gate = next(
        i for i, x in enumerate(play.decisions) if x.kind == "merge" and x.content == "alpha fact three"
    )
    rep = replay_window(stack.env, d, d.sessions[0].index, start, play.decisions, gate)
    assert _contents(rep.bank) == [
        ("older event kept", "older event again"),
        ("alpha fact one",),
        ("beta fact two", "beta fact four"),
    ]
    assert rep.orphaned_merges == 0
    # the verbatim layer is the same turn by turn
    assert _contents(rep.bank, "verbatim") == _contents(bank, "verbatim")


def test_a_record_that_does_not_match_the_window_is_an_error(world):
    d, stack, start, _, play, _ = scripted_window(world)
    with pytest.raises(RuntimeError, match="the record has 2 gates"):
        replay_window(stack.env, d, d.sessions[0].index, start, play.decisions[:2], None)
    with pytest.raises(RuntimeError, match="the record has .* there"):
        replay_window(stack.env, d, d.sessions[1].index, start, play.decisions, None)
    noop = next(i for i, x in enumerate(play.decisions) if x.kind == "noop")
    for bad in (noop, len(play.decisions), -1):  # only a Write or a Merge of the record can be taken back
        with pytest.raises(ValueError, match="not a Write or Merge"):
            replay_window(stack.env, d, d.sessions[0].index, start, play.decisions, bad)


def test_the_validation_pieces_on_the_teacher(world, tmp_path):
    d, stack, cfg = world
    teacher = as_gate_policy(stack.teacher)
    cases = play_windows(stack.env, [d], teacher, cfg.credit, cumulative=True)
    assert [c.window for c in cases] == [s.index for s in d.sessions]
    ops = sample_ops(cases, 1000, seed=0)  # more than there are: every Write / Merge gate
    assert ops and all(cases[i].decisions[g].kind in ("write", "merge") for i, g in ops)
    assert len(sample_ops(cases, 3, seed=0)) == 3 and sample_ops(cases, 3, 0) == sample_ops(cases, 3, 0)
    out, cost = replay_ops(stack.env, cases, ops)
    assert cost.replays == len(ops) == len(out) and cost.failed_exams == 0
    for c in cases:  # a replay without a drop sits the exam exactly as the window did (the cache is shared)
        again = replay_window(stack.env, c.dialogue, c.window, c.start, c.decisions, None)
        exam = run_exam(again.bank, c.quiz, stack.env.reader, stack.env.judge, stack.env.retriever, c.cache)
        assert [r.correct for r in exam.results] == [r.correct for r in c.exam.results]
    for o in out:
        c = next(c for c in cases if c.window == o.window)
        rep = replay_window(stack.env, c.dialogue, c.window, c.start, c.decisions, o.gate)
        exam = run_exam(rep.bank, c.quiz, stack.env.reader, stack.env.judge, stack.env.retriever, c.cache)
        assert o.delta == pytest.approx(c.exam.accuracy - exam.accuracy)  # no failures offline
        # normalized credit: the same sign, never larger in size (a chain of length >= 1)
        u, n = o.credit["unnormalized"], o.credit["normalized"]
        assert abs(n) <= abs(u) + 1e-12 and np.sign(n) == np.sign(u)
    assert any(o.delta != 0 for o in out)  # taking an operation back changes some answer
    s = summarize(out, n_boot=50)
    assert s["all"]["n"] == len(out) == s["write"]["n"] + s["merge"]["n"]
    res = {"run": "r", "policy": "teacher", "split": "train", "quiz": "cumulative", "seed": 0,
           "windows_played": len(cases), "cost": asdict(cost), "orphaned_merges": 0, "summary": s}  # fmt: skip
    md = script.format_md(res)
    assert f"{len(out)} operations replayed" in md and "| all |" in md
    script.plot([{"kind": o.kind, "delta": o.delta, "credit": o.credit} for o in out], tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_summarize_by_hand():
    def op(kind, delta, u):
        return ReplayedOp("d", 1, 0, kind, "event", delta, {"unnormalized": u, "normalized": u / 2,
                                                             "cited_version": 0.0}, 0)  # fmt: skip

    s = summarize([op("write", 0.0, 0.1), op("write", 0.2, 0.5), op("merge", 0.1, 0.3)], n_boot=20)
    assert s["all"]["n"] == 3 and s["all"]["delta_nonzero"] == 2
    assert s["all"]["spearman"]["unnormalized"]["value"] == pytest.approx(1.0)
    assert s["all"]["spearman"]["cited_version"]["value"] is None  # constant credit: undefined, with a reason
    assert "constant" in s["all"]["spearman"]["cited_version"]["reason"]
    assert s["merge"]["spearman"]["unnormalized"]["value"] is None  # one pair
    assert s["all"]["credit_nonzero"] == {"unnormalized": 3, "normalized": 3, "cited_version": 0}
    assert s["all"]["mean_delta"] == pytest.approx(0.1)
    json.dumps(s)  # JSON-ready


def test_bootstrap_spearman_interval():
    x, y = np.arange(20.0), np.arange(20.0) + np.random.default_rng(0).normal(0, 3, 20)
    ci = bootstrap_spearman(x, y, n_boot=200, seed=1)
    assert ci.low <= ci.estimate.value <= ci.high and ci.defined == 200
    assert ci.to_dict() == bootstrap_spearman(x, y, n_boot=200, seed=1).to_dict()  # seeded
    const = bootstrap_spearman([1.0, 2.0, 3.0], [4.0, 4.0, 4.0], n_boot=10)
    assert const.defined == 0 and np.isnan(const.low) and const.to_dict()["low"] is None
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_spearman(x, y, n_boot=0)


def test_the_script_names_a_missing_run_folder(tmp_path):
    with pytest.raises(SystemExit, match="config.yaml does not exist"):
        script.main(["--run", str(tmp_path)])


def test_paired_accuracy_drops_an_item_that_failed_in_either_exam():
    from types import SimpleNamespace as NS

    from memprm.inspect.replay_validation import paired_accuracy

    def exam(*items):  # (weight, correct, failed) per item
        return NS(results=[NS(item=NS(weight=w), correct=c and not f, failed=f) for w, c, f in items])

    a = exam((1.0, True, False), (2.0, True, False), (1.0, False, False), (1.0, True, False))
    b = exam((1.0, True, False), (2.0, False, True), (1.0, False, False), (1.0, False, False))
    # item 2 failed in b: both scored on items 1, 3, 4 (weights 1, 1, 1): a 2/3, b 1/3 (not 4/5 vs 1/3)
    assert paired_accuracy(a, b) == pytest.approx((2 / 3, 1 / 3))
    assert paired_accuracy(exam((1.0, True, True)), exam((1.0, True, False))) is None
    with pytest.raises(ValueError, match="1 and 2 items"):
        paired_accuracy(exam((1.0, True, False)), b.__class__(results=b.results[:2]))
