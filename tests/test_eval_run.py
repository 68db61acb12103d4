"""tools/eval_run.py: fresh dialogues no split of a run holds, policy files read, paired differences to SFT."""

import pytest
import torch
from helpers.tools_loader import load_tool

from memprm.config import load_config
from memprm.data.source import load_source
from memprm.env.evaluate import EvalResult

pytestmark = pytest.mark.timeout(120)

TINY = ["data.synthetic.n_dialogues=4", "data.synthetic.n_train=1", "data.synthetic.n_dev=2",
        "data.synthetic.sessions_per_dialogue=2", "data.synthetic.n_rl=2"]  # fmt: skip


def test_fresh_dialogues_are_new_and_the_runs_splits_unchanged():
    ev = load_tool("eval_run")
    cfg = load_config(None, TINY)
    before = load_source(cfg.data)
    after = load_source(load_config(None, [*TINY, *ev.fresh_overrides(cfg, 3)]).data)
    fresh = list(after["rl"])[cfg.data.synthetic.n_rl :]
    assert len(fresh) == 3
    used = {d.id for name in before.splits for d in before[name]}
    assert used.isdisjoint(d.id for d in fresh)
    for name in before.splits:  # every split of the run holds the same dialogues (rl grows by the fresh ones)
        n = len(before[name])
        assert [(d.id, d.sessions[0].turns[0].text) for d in before[name]] == [
            (d.id, d.sessions[0].turns[0].text) for d in list(after[name])[:n]
        ], name
        assert len(after[name]) == n + 3 * (name == "rl"), name
    with pytest.raises(SystemExit, match="need data.source=synthetic"):
        ev.fresh_overrides(load_config(None, ["data.source=locomo"]), 1)


def test_policy_state_reads_each_file_and_names_a_missing_one(tmp_path):
    ev = load_tool("eval_run")
    (tmp_path / "grpo" / "checkpoints").mkdir(parents=True)
    torch.save({"head.weight": torch.ones(1, 3)}, tmp_path / "policy_sft.pt")
    ckpt = {"state_dict": {"policy.head.weight": torch.full((1, 3), 2.0), "other.x": torch.zeros(1)}}
    torch.save(ckpt, tmp_path / "grpo" / "checkpoints" / "last.ckpt")
    assert torch.equal(ev.policy_state(tmp_path, "sft")["head.weight"], torch.ones(1, 3))
    last = ev.policy_state(tmp_path, "last")
    assert list(last) == ["head.weight"] and float(last["head.weight"][0, 0]) == 2.0
    with pytest.raises(SystemExit, match="policy_grpo.pt does not exist"):
        ev.policy_state(tmp_path, "selected")
    torch.save({"state_dict": {"other.x": torch.zeros(1)}}, tmp_path / "grpo" / "checkpoints" / "last.ckpt")
    with pytest.raises(SystemExit, match="no 'policy.' weights"):
        ev.policy_state(tmp_path, "last")
    torch.save({"head.weight": torch.full((1, 3), 3.0)}, tmp_path / "grpo" / "last_policy.pt")
    assert float(ev.policy_state(tmp_path, "last")["head.weight"][0, 0]) == 3.0  # the final step's file first


def test_paired_difference_and_table():
    ev = load_tool("eval_run")

    def result(per):
        return EvalResult(sum(per.values()) / len(per), 10 * len(per), 0.0, per_dialogue=per)

    sft = result({"a": 0.5, "b": 0.6, "c": 0.7, "d": 0.4})
    grpo = result({"a": 0.6, "b": 0.7, "c": 0.7, "d": 0.5})  # better on 3 dialogues, tied on one
    v = ev.paired(grpo, sft)
    assert v["wins"] == 3 and v["untied"] == 3 and v["diff"] == pytest.approx(0.075)
    assert v["p_sign"] == pytest.approx(0.125) and 0 < v["p_perm"] <= 0.25
    rows = [
        {"run": "runs/x", "policy": "sft", "accuracy": 0.55, "ci95": [0.5, 0.6], "by_category": {"t": 1.0},
         "entries": 3.0, "versions_per_entry": 1.5},
        {"run": "runs/x", "policy": "last", "accuracy": 0.625, "ci95": [0.55, 0.7], "by_category": {},
         "entries": 4.0, "versions_per_entry": 1.25, "vs_sft": v},
    ]  # fmt: skip
    table = ev.markdown(rows)
    assert "| x | sft | 55.0 | 50.0–60.0 | 100.0 | 3.0 | 1.50 | – |" in table
    assert "| x | last | 62.5 | 55.0–70.0 | – | 4.0 | 1.25 | +7.5 (3/3, 0.12, " in table
    with pytest.raises(SystemExit, match="--policies takes"):
        ev.main(["runs/x", "--policies", "best"])


def test_shift_moves_only_the_named_head_weights_and_rejects_bad_specs():
    ev = load_tool("eval_run")
    assert ev.parse_shift("merge/event=-4, rank 0=1.5") == {"merge/event": -4.0, "rank 0": 1.5}
    assert ev.parse_shift("cos(c,t)=2,cos(c,q)=-1") == {"cos(c,t)": 2.0, "cos(c,q)": -1.0}
    state = {"head.weight": torch.zeros(1, 20), "other": torch.ones(2)}
    out = ev.shifted(state, {"merge/event": -4.0, "noop/event": 0.5})
    moved = {i: float(v) for i, v in enumerate(out["head.weight"][0]) if v != 0}
    assert moved == {6: -4.0, 0: 0.5} and float(state["head.weight"].abs().sum()) == 0.0  # a copy
    assert out["other"] is state["other"]
    for bad, match in (("merge=-4", "is not NAME=AMOUNT"), ("merge/event=x", "is not a number"), (",", "names no")):
        with pytest.raises(SystemExit, match=match):
            ev.parse_shift(bad)
    with pytest.raises(SystemExit, match="add sft to --policies"):
        ev.main(["runs/none", "--policies", "last", "--shift", "merge/event=-1"])


def _tiny_run(folder):
    """A run folder holding only the config.yaml of a tiny hashing-embedder config: (overrides, config)."""
    from memprm.config import config_yaml

    tiny = [*TINY, "embedder.kind=hashing", "embedder.dim=256", "reader.calibrate_abstention=false"]
    cfg = load_config(None, tiny)
    (folder / "config.yaml").write_text(config_yaml(cfg))
    return tiny, cfg


def test_teacher_row_is_the_test_protocol_on_the_fresh_dialogues(tmp_path):
    """--teacher: the heuristic teacher played on the same fresh dialogues, as evaluate_manager plays it."""
    from memprm.env.evaluate import evaluate_manager, greedy_manager
    from memprm.env.managers import as_gate_policy
    from memprm.env.stack import build_stack

    ev = load_tool("eval_run")
    tiny, cfg = _tiny_run(tmp_path)
    rows = ev.evaluate_run(tmp_path, 2, [], [], teacher=True)
    assert [r["policy"] for r in rows] == ["heuristic teacher"] and rows[0]["dialogues"] == 2
    fresh = list(load_source(load_config(None, [*tiny, *ev.fresh_overrides(cfg, 2)]).data)["rl"])[2:]
    stack = build_stack(cfg)
    want = evaluate_manager(stack.env, fresh, greedy_manager(as_gate_policy(stack.teacher)), progress=False)
    assert rows[0]["accuracy"] == pytest.approx(want.accuracy) and rows[0]["n_questions"] == want.n_questions


def test_oracle_notes_rows_swap_the_note_writer_only_for_their_rows(tmp_path):
    """--oracle-notes: the teacher and key merging played over the annotation notes; the rows before them
    (here the teacher with the run's notes) keep the run's note writer."""
    from memprm.env.evaluate import evaluate_manager, greedy_manager
    from memprm.env.managers import GoldDecisionManager, as_gate_policy
    from memprm.env.stack import build_stack
    from memprm.llm.notes import CachedNotes, OracleNoteWriter

    ev = load_tool("eval_run")
    tiny, cfg = _tiny_run(tmp_path)
    rows = ev.evaluate_run(tmp_path, 2, [], [], teacher=True, oracle_notes=True)
    assert [r["policy"] for r in rows] == [
        "heuristic teacher", "annotation notes: teacher", "annotation notes: store=notes, merge=key"
    ]
    fresh = list(load_source(load_config(None, [*tiny, *ev.fresh_overrides(cfg, 2)]).data)["rl"])[2:]
    stack = build_stack(cfg)
    rules = evaluate_manager(stack.env, fresh, greedy_manager(as_gate_policy(stack.teacher)), progress=False)
    stack.env.notes = CachedNotes(OracleNoteWriter())
    key = GoldDecisionManager([], cfg.policy.merge_candidates, store="notes", merge="key")
    want = [evaluate_manager(stack.env, fresh, greedy_manager(as_gate_policy(m)), progress=False)
            for m in (stack.teacher, key)]  # fmt: skip
    got = [(r["accuracy"], r["entries"]) for r in rows]
    assert got == [(x.accuracy, x.entries) for x in (rules, *want)]
    assert got[0] != got[1]  # the annotation notes change the teacher's bank
