"""``fit(cfg)`` end to end on a tiny synthetic config: every stage, its files, and reusing stage one."""

import json

import pytest
import torch
from lightning import Callback
from safetensors.torch import load_file

from memprm.config import load_config
from memprm.fit import fit

TINY = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8",
    "embedder.kind=hashing", "embedder.dim=128", "sft.steps=20", "grpo.max_steps=2",
    "rollout.group_size=2", "dev_selection.every_n_steps=1", "grpo.temperature=4",
]  # fmt: skip


class _CountBatches(Callback):
    """GRPO batches, and those that trained: the module returns a ``loss`` only when some group had contrast
    (a batch whose groups all tied takes no optimizer step)."""

    def __init__(self):
        self.batches = self.trained = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1
        self.trained += "loss" in outputs


@pytest.mark.slow
def test_fit_runs_every_stage_then_reuses_stage_one(tmp_path):
    counter = _CountBatches()
    full = [*TINY, f"output_dir={tmp_path}", "fit.run_name=full",
            "critic_refresh.every_n_steps=2", "critic_refresh.min_replay=1"]  # fmt: skip
    res = fit(load_config(None, full), grpo_callbacks=[counter])
    run = tmp_path / "full"
    assert res.grpo.batches == 1 and res.grpo.steps == 2  # one batch, two PPO epochs
    assert counter.trained == 1
    assert res.run_dir == run and set(res.seconds) == {"critic", "sft", "grpo", "test"}
    for f in (
        "config.yaml",
        "timings.json",
        "policy_sft.pt",
        "critic",
        "teacher/train",
        "grpo/dev_selection.json",
    ):
        assert (run / f).exists(), f
    ended = {"GRPO (ours) last step 2"} if res.grpo.best_step != 2 else set()  # dev kept step 0: both tested
    assert set(res.test) == {"heuristic teacher", "untrained", "SFT", "GRPO (ours)"} | ended
    assert all(0.0 <= r.accuracy <= 1.0 for r in res.test.values())
    assert "| GRPO (ours) |" in res.table and len(res.sft_losses) == 20
    history = json.loads((run / "grpo" / "dev_selection.json").read_text())["history"]
    # rollouts produced so far (G = 2, skipped groups included; the first batch is fetched before step 0)
    rollouts = [h["rollouts"] for h in history]
    assert rollouts == sorted(rollouts) and rollouts[-1] >= 2 and all(r % 2 == 0 for r in rollouts)
    assert [h["step"] for h in history] == [0, 2]  # at start, then after the batch (2 PPO epochs = 2 steps)
    # the critic refresh ran at step 2 on the online-labeled replay, audited against stage one's dev
    (refresh,) = json.loads((run / "grpo" / "critic_refresh.json").read_text())["history"]
    assert refresh["step"] == 2 and refresh["replay_size"] >= 1
    # kept exactly when no check both audits ran got worse by more than the tolerance (deletion in points)
    before, after, tol = refresh["before"], refresh["after"], load_config(None, full).critic_refresh.tolerance
    lower_better = {"adversarial_fp"}
    assert set(before) == set(after) and "spearman" in before
    worse = [c for c in before if c != "passed" and before[c] == before[c] and (  # NaN before: not compared
        after[c] != after[c] or (after[c] - before[c]) * (-1 if c in lower_better else 1)
        < -tol * (100 if c == "deletion_margin" else 1))]  # fmt: skip
    assert refresh["status"] == ("rolled_back" if worse else "kept"), (worse, before, after)
    assert counter.batches == 1  # extra GRPO callbacks reach the stage's Trainer
    assert list((run / "tb").glob("*/events.out.tfevents.*")) or list(
        (run / "tb").rglob("events.out.tfevents.*")
    )

    # a second arm of the same seed: stage one reused, the baselines not re-tested
    arm = load_config(None, [*TINY, f"output_dir={tmp_path}", "fit.run_name=outcome", "arm=outcome_only",
                             "grpo.advantage_mode=outcome", "rollout.shaping=none", "grpo.max_steps=6",
                             "grpo.max_batches=2", f"fit.stage_one_dir={run}", "fit.test_baselines=false",
                             "dev_selection.every_n_steps=100", "dev_selection.at_end=false"])  # fmt: skip
    # 2 batches x 2 PPO epochs can make at most 4 of the 6 steps: the batch budget ends the stage (and says so)
    # instead of rolling out forever when groups tie
    counter2 = _CountBatches()
    with pytest.warns(UserWarning, match="batch budget"):
        res2 = fit(arm, grpo_callbacks=[counter2])
    # every batch with contrast makes ppo_epochs optimizer steps (one mini-batch each), a tied one none
    assert res2.grpo.batches == counter2.batches == 2 and arm.grpo.minibatch_size == 0
    assert res2.grpo.steps == arm.grpo.ppo_epochs * counter2.trained == 2 * counter2.trained
    # dev selection saw step 0 only, so it keeps it; where training ended is tested beside it
    steps = res2.grpo.steps
    assert res2.grpo.best_step == 0 and steps > 0, "no batch had contrast: nothing to test"
    assert set(res2.test) == {"GRPO (outcome_only)", f"GRPO (outcome_only) last step {steps}"}
    outcome = tmp_path / "outcome"
    kept, ended = (
        torch.load(outcome / f, weights_only=True) for f in ("policy_grpo.pt", "grpo/last_policy.pt")
    )
    assert kept.keys() == ended.keys() and any(not torch.equal(kept[k], ended[k]) for k in kept)
    assert not (tmp_path / "outcome" / "critic").exists() and not (tmp_path / "outcome" / "teacher").exists()
    assert res2.seconds["critic"] < res.seconds["critic"]

    # stage one alone, same seed: the same critic as the full run's (every stage starts from its own seed,
    # so the policy built before the full run's critic does not shift the critic's LoRA init or dropout)
    alone = fit(
        load_config(None, [*TINY, f"output_dir={tmp_path}", "fit.run_name=alone", "fit.stages=[critic]"])
    )
    for f in ("heads.safetensors", "adapter/adapter_model.safetensors"):
        full_t, alone_t = load_file(run / "critic" / f), load_file(alone.run_dir / "critic" / f)
        assert full_t.keys() == alone_t.keys() and full_t, f
        assert all(torch.equal(full_t[k], alone_t[k]) for k in full_t), f
