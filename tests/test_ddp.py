"""Two CPU processes (ddp_spawn, gloo) run a few GRPO steps: weights stay identical, episodes differ.

Also builds every multi-device config in configs/ (without training) so they stay valid.
"""

import json
from pathlib import Path

import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy
from lightning import Callback, Trainer

from memprm.config import load_config
from memprm.credit import CreditConfig
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.stack import build_stack
from memprm.models.grpo_config import GRPOConfig
from memprm.models.grpo_module import GRPOPolicyModule
from memprm.rollout.datamodule import RolloutDataModule
from memprm.rollout.datamodule_config import RolloutDataConfig
from memprm.rollout.runner import GroupRunner, RolloutConfig

ROOT = Path(__file__).resolve().parents[1]


class Report(Callback):
    """Each rank writes the episodes it played and a fingerprint of its policy weights."""

    def __init__(self, folder: str):
        self.folder = folder

    def on_train_end(self, trainer, pl_module):
        dm = trainer.datamodule
        params = {
            k: v.detach().cpu().tolist() for k, v in pl_module.policy.named_parameters() if v.requires_grad
        }
        out = {"rank": trainer.global_rank, "seen": dm.seen, "steps": trainer.global_step, "params": params}
        out["same_policy"] = dm.policy is pl_module.policy  # the spawned rank plays with the weights it trains
        Path(self.folder, f"rank{trainer.global_rank}.json").write_text(json.dumps(out))


@pytest.mark.slow
def test_two_process_ddp_grpo(tmp_path):
    torch.set_num_threads(1)
    # spawned ranks receive the module's tensors through shared memory; file descriptors cannot be passed
    # in some sandboxes ("unable to resize file"), named files always work
    torch.multiprocessing.set_sharing_strategy("file_system")
    data = generate_synthetic(
        SyntheticConfig(
            n_dialogues=4,
            n_train=2,
            n_dev=1,
            sessions_per_dialogue=2,
            turns_per_session=8,
            events_per_session=1,
            profile_attributes=2,
        )
    )
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=256"]))
    runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=2))
    policy = tiny_scoring_policy(seed=0, head_std=0.5)
    dm = RolloutDataModule(runner, data["train"], RolloutDataConfig(seed=0), policy=policy)
    module = GRPOPolicyModule(policy, GRPOConfig(lr=1e-2, ppo_epochs=1))
    trainer = Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_steps=3, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                      callbacks=[Report(str(tmp_path))])  # fmt: skip
    trainer.fit(module, dm)
    r0, r1 = (json.loads((tmp_path / f"rank{i}.json").read_text()) for i in (0, 1))
    for r in (r0, r1):  # shown with pytest -s
        flat = [x for v in r["params"].values() for x in torch.tensor(v).flatten().tolist()]
        print(f"rank {r['rank']}: {r['steps']} optimizer steps; episodes {r['seen']}; "
              f"weights sum {sum(flat):.6f} over {len(flat)} values")  # fmt: skip
    assert r0["steps"] == r1["steps"] == 3 and r0["same_policy"] and r1["same_policy"]
    assert r0["params"] == r1["params"]  # gradients were all-reduced: identical weights on both ranks
    d0, d1 = {d for d, _ in r0["seen"]}, {d for d, _ in r1["seen"]}
    assert d0 and d1 and not d0 & d1  # each rank played its own dialogues
    fresh = {
        k: v.detach().tolist()
        for k, v in tiny_scoring_policy(seed=0, head_std=0.5).named_parameters()
        if v.requires_grad
    }
    assert r0["params"] != fresh  # and training did change them


#: each config's trainer as (accelerator, devices, strategy, precision); locomo_llm.yaml sets none (defaults).
TRAINERS = {
    "gpu8_qwen8b.yaml": ("gpu", 8, "fsdp", "bf16-mixed"),
    "gpu_ddp.yaml": ("gpu", "auto", "ddp", "bf16-mixed"),
    "cpu_ddp2.yaml": ("cpu", 2, "ddp", "32-true"),
    "locomo_llm.yaml": ("cpu", 1, "auto", "32-true"),
}


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_multi_device_and_endpoint_configs_build(name):
    cfg = load_config(ROOT / "configs" / name)
    t = cfg.trainer
    got = (t.accelerator, t.devices, t.strategy, t.precision)
    assert got == TRAINERS[name]  # an int device count stays an int: 2, not "2"
    if name == "gpu8_qwen8b.yaml":
        assert cfg.policy.kind == "causal" and cfg.critic.backbone.kind == "causal"
    if name == "locomo_llm.yaml":
        assert cfg.llm.reader.model_version and cfg.llm.judge == cfg.llm.reader


@pytest.mark.parametrize("arm", sorted(p.stem for p in (ROOT / "configs" / "arms").glob("*.yaml")))
def test_arm_configs_build(arm):
    cfg = load_config(ROOT / "configs" / "arms" / f"{arm}.yaml")
    assert cfg.arm == arm and cfg.run_name == f"{arm}-seed0"
