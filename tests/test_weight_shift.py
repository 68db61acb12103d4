"""tools/weight_shift.py: the structural weights' change between SFT and GRPO, read from a run folder."""

import json

import pytest
import torch
from helpers.tools_loader import load_tool

pytestmark = pytest.mark.timeout(120)

HIDDEN = 4


def _run(tmp_path, *, sft_row, grpo_row, history):
    run = tmp_path / "runs" / "exp"
    (run / "grpo" / "checkpoints").mkdir(parents=True)
    tail = torch.full((3 * HIDDEN,), 7.0)  # text-vector weights: never reported
    torch.save({"head.weight": torch.cat([sft_row, tail])[None, :]}, run / "policy_sft.pt")
    last = {"state_dict": {"policy.head.weight": torch.cat([grpo_row, tail + 1])[None, :]}, "epoch": 0}
    torch.save(last, run / "grpo" / "checkpoints" / "last.ckpt")
    torch.save({"head.weight": torch.cat([sft_row, tail])[None, :]}, run / "policy_grpo.pt")  # step 0 kept
    doc = {"best_step": 0, "best_accuracy": 0.63, "dialogues": [], "history": history}
    (run / "grpo" / "dev_selection.json").write_text(json.dumps(doc))
    return run


def test_shift_names_values_and_tables(tmp_path, capsys):
    ws = load_tool("weight_shift")
    names = ws.structural_names()
    assert len(names) == 16 and names[:2] == ["noop/event", "noop/profile"] and names[6] == "merge/event"
    assert names[8:] == ["merge_turn/event", "merge_turn/profile", "rank 0", "rank 1", "rank 2+", "cos(c,q)", "cos(c,t)",
                         "same key"]
    sft = torch.zeros(16)
    grpo = torch.zeros(16)
    grpo[6], grpo[0] = -1.5, 0.25  # Merge on events down, Noop on events up
    hist = [{"step": 0, "accuracy": 0.63, "rollouts": 0}, {"step": 12, "accuracy": 0.5556, "rollouts": 192}]
    run = _run(tmp_path, sft_row=sft, grpo_row=grpo, history=hist)
    out = tmp_path / "ws.json"
    assert ws.main([str(run), "--json", str(out)]) == 0
    row = json.loads(out.read_text())[0]
    assert row["shift"]["merge/event"] == -1.5 and row["shift"]["noop/event"] == 0.25
    assert row["shift"]["cos(c,t)"] == 0.0 and row["selected_step"] == 0
    assert row["dev"] == [[0, 0.63], [12, 0.5556]]
    text = capsys.readouterr().out
    assert "| exp | 0: 63.0 / 12: 55.6 | 0 |" in text and "| merge/event | -1.50 |" in text
    # the dev-selected policy (step 0 here) equals SFT: every change is zero
    sel = ws.run_shift(run, "selected")
    assert set(sel["shift"].values()) == {0.0}


def test_errors_name_the_file(tmp_path):
    ws = load_tool("weight_shift")
    run = _run(tmp_path, sft_row=torch.zeros(16), grpo_row=torch.zeros(16), history=[])
    (run / "grpo" / "checkpoints" / "last.ckpt").unlink()  # neither last_policy.pt nor the older checkpoint
    with pytest.raises(SystemExit, match=r"last_policy.pt does not exist \(did the run finish its GRPO stage"):
        ws.run_shift(run)
    torch.save({"other.weight": torch.zeros(1, 16)}, run / "policy_sft.pt")
    with pytest.raises(SystemExit, match="policy_sft.pt: expected one 'head.weight'"):
        ws.run_shift(run, "selected")
