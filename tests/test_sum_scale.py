"""The sum arm's scale (``rollout.sum_scale=auto``): computed from stage one's train teacher trajectories and
critic before GRPO trains, recorded in ``grpo/result.json``, kept across a resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from memprm.config import load_config
from memprm.credit import noop_mask, suffix_min_shaping, sum_shaping
from memprm.data.source import load_source
from memprm.env.stack import build_stack
from memprm.env.trajectories import load_trajectories, run_trajectories, save_trajectories
from memprm.rollout.runner import RolloutConfig
from memprm.stages.sum_scale import resolve_sum_scale, teacher_sum_scale

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=6",
    "embedder.kind=hashing", "embedder.dim=64", "reader.calibrate_abstention=false",
]  # fmt: skip


class FakeCritic:
    """Known scores (writes 0.8, merges 0.6, noops 0.3, or ``zero`` for all); counts its calls."""

    def __init__(self, zero: bool = False):
        self.calls, self.zero = 0, zero

    def score(self, texts):
        self.calls += 1
        phi = [0.0 if self.zero else 0.8 if "operation: WRITE" in t else 0.6 if "operation: MERGE" in t else 0.3
               for t in texts]  # fmt: skip
        return np.array(phi, dtype=np.float32), np.zeros(len(texts), dtype=np.float32)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """Stage one's train teacher trajectories of the tiny config, saved as the critic stage saves them."""
    cfg = load_config(None, TINY)
    stack = build_stack(cfg)
    trajs = run_trajectories(stack.env, load_source(cfg.data)["train"], stack.teacher, stack.cache())
    folder = tmp_path_factory.mktemp("stage1") / "teacher" / "train"
    save_trajectories(folder, trajs, {})
    return folder, trajs


@pytest.mark.timeout(300)
def test_teacher_scale_matches_the_suffix_min_mean_magnitude_in_one_critic_call(teacher):
    _, trajs = teacher
    critic = FakeCritic()
    scale = teacher_sum_scale(lambda texts: critic.score(texts)[0], trajs)
    assert critic.calls == 1 and 0 < scale < 1  # sums of several scores in [0, 1] exceed their minimum
    windows = [(critic.score(w.critic_inputs)[0], noop_mask(w.steps)) for t in trajs for w in t.windows]
    assert sum(int((~noop).sum()) for _, noop in windows) > 1  # Write/Merge steps to rescale
    mins = np.concatenate([suffix_min_shaping(p, noop) for p, noop in windows])
    sums = np.concatenate([sum_shaping(p, noop, scale=scale) for p, noop in windows])
    assert np.abs(sums).mean() == pytest.approx(np.abs(mins).mean())  # over all steps, Noops included


@pytest.mark.timeout(300)
def test_resolve_sum_scale_computes_once_and_keeps_the_value_for_a_resume(teacher, tmp_path):
    folder, trajs = teacher
    kept = tmp_path / "sum_scale.json"
    expected = teacher_sum_scale(lambda texts: FakeCritic().score(texts)[0], trajs)
    auto = RolloutConfig(shaping="sum")
    for unchanged in (RolloutConfig(), RolloutConfig(shaping="sum", sum_scale=0.5)):
        assert resolve_sum_scale(unchanged, FakeCritic(), folder, tmp_path, resuming=False) is unchanged
    assert resolve_sum_scale(auto, None, folder, tmp_path, resuming=False) is auto  # unshaped: nothing to do
    assert not kept.exists()
    assert resolve_sum_scale(auto, FakeCritic(), folder, tmp_path, resuming=False).sum_scale == expected
    assert json.loads(kept.read_text())["sum_scale"] == expected
    kept.write_text(json.dumps({"sum_scale": 0.125}))
    critic = FakeCritic()
    assert resolve_sum_scale(auto, critic, folder, tmp_path, resuming=True).sum_scale == 0.125
    assert critic.calls == 0  # a resume reads the value its run started with
    fresh = resolve_sum_scale(auto, critic, folder, tmp_path, resuming=False)  # a new start recomputes
    assert fresh.sum_scale == expected and critic.calls == 1
    match = r"rollout.sum_scale=auto on .*zero magnitude.*rollout.sum_scale=<number>"
    with pytest.raises(ValueError, match=match):
        resolve_sum_scale(auto, FakeCritic(zero=True), folder, tmp_path, resuming=False)


@pytest.mark.timeout(600)
def test_grpo_stage_records_the_scale_and_a_resumed_stage_keeps_it(teacher, tmp_path):
    from helpers.tiny_models import minilm_tokenizer, tiny_bert_config
    from transformers import BertModel

    from memprm.fit import fit
    from memprm.models.backbone_config import BackboneConfig
    from memprm.models.critic import CriticConfig, CriticModule, save_critic
    from memprm.stages.markers import Markers, StageKey

    folder, _ = teacher
    stage_one, encoder = folder.parents[1], tmp_path / "encoder"
    torch.manual_seed(0)
    BertModel(tiny_bert_config(minilm_tokenizer())).save_pretrained(encoder)
    minilm_tokenizer().save_pretrained(encoder)
    critic_cfg = CriticConfig(backbone=BackboneConfig(model=str(encoder)), max_length=32)
    critic = CriticModule(critic_cfg).to_frozen()
    save_critic(critic, stage_one / "critic")
    (stage_one / "critic" / "relabel_counts.json").write_text("{}")
    Markers(stage_one).write(StageKey("critic", {"stands_in": True}))
    overrides = [*TINY, "fit.stages=[grpo]", "rollout.shaping=sum", f"fit.stage_one_dir={stage_one}",
                 f"policy.model={encoder}", f"output_dir={tmp_path}", "fit.run_name=sum", "rollout.group_size=2",
                 "grpo.ppo_epochs=1", "grpo.max_steps=1", "grpo.checkpoint_every=1", "dev_selection.at_start=false",
                 "trainer.progress_bar=false"]  # fmt: skip
    fit(load_config(None, overrides))
    run = tmp_path / "sum"
    expected = teacher_sum_scale(lambda t: critic.score(list(t))[0], load_trajectories(folder)[0])
    result = json.loads((run / "grpo" / "result.json").read_text())
    assert result["sum_scale"] == pytest.approx(expected, rel=1e-6)
    kept = run / "grpo" / "checkpoints" / "sum_scale.json"
    assert json.loads(kept.read_text())["sum_scale"] == result["sum_scale"]
    # the stage redone from its last.ckpt (same config): the kept value, not a recomputed one
    kept.write_text(json.dumps({"sum_scale": 0.125}))
    Markers(run).clear("grpo")
    fit(load_config(None, overrides))
    assert json.loads((run / "grpo" / "result.json").read_text())["sum_scale"] == 0.125
