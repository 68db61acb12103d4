"""Stage one: the teachers, teacher trajectories on disk, relabeling, and the critic stage end to end."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.fakes import FakeClient
from transformers import AutoTokenizer, BertConfig

from memprm.config import load_config
from memprm.credit.tiers import Neighbour, RelabelConfig
from memprm.data.records import Turn
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.env.gates import Action, EnvConfig, Observation
from memprm.env.stack import build_stack
from memprm.env.teacher import HeuristicTeacher, LLMTeacher
from memprm.env.trajectories import load_trajectories, run_trajectory, save_trajectories
from memprm.eval.validity import ValidityConfig
from memprm.llm.notes import notes_for
from memprm.llm.rule_notes import RuleNoteWriter
from memprm.memory import HashingEmbedder
from memprm.memory.embedder import EmbedderConfig, resolve_model_path
from memprm.models.backbone_config import BackboneConfig
from memprm.models.critic_config import CriticConfig
from memprm.stages.critic_stage import run_critic_stage, teacher_trajectories
from memprm.stages.relabel_stage import relabel_trajectory
from memprm.stages.trainer import TrainerConfig


def obs(text, layer="event", neighbours=()):
    return Observation(
        "d", 1, Turn("D1:1", "Ana", text, 1), "2023-05-08T00:00:00", layer, (), tuple(neighbours)
    )


# ------------------------------------------------------------------------------------------------ teachers
def noted(text, layer="event", neighbours=()):
    """The observation with the notes the offline rule writer gives the turn (as MemoryEnv.observe does)."""
    o = obs(text, layer, neighbours)
    return replace(o, notes=notes_for(RuleNoteWriter(), o.turn, o.timestamp, layer))


def test_heuristic_teacher_writes_notes_merges_and_skips():
    t = HeuristicTeacher(HashingEmbedder(dim=512))
    assert t(noted("Haha that is so great, good for you!")) == Action.noop()
    event = t(noted("I ran a half marathon in Porto yesterday!"))
    assert event == Action("write", "On 7 May 2023, Ana ran a half marathon in Porto.", "")
    assert t(noted("I ran a half marathon in Porto yesterday!", layer="profile")) == Action.noop()
    job = t(noted("I work as a nurse in Lisbon now", layer="profile"))
    assert job == Action("write", "Ana's job: nurse (as of 8 May 2023)", "Ana/job")
    near = Neighbour("p00001", "profile", "(2023-05-01) Ana's job: nurse (as of 1 May 2023)")
    merged = t(noted("I quit being a nurse, and now I work as a teacher!", layer="profile", neighbours=[near]))
    assert merged == Action("merge", "Ana's job: teacher (as of 8 May 2023)", entry_id="p00001")
    assert t(obs("I work as a nurse in Lisbon now", layer="profile")) == Action.noop()  # no notes on offer


def test_llm_teacher_validates_and_counts_invalid_output():
    n = Neighbour("e00001", "event", "(2023-05-01) Ana ran")
    t = LLMTeacher(
        FakeClient(
            [
                {"op": "merge", "entry_id": "e00001", "content": "Ana ran again"},
                {"op": "merge", "entry_id": "e99999", "content": "x"},
                {"op": "delete"},
            ]
        )
    )
    assert t(obs("I ran again", neighbours=[n])) == Action("merge", "Ana ran again", entry_id="e00001")
    assert t(obs("I ran again", neighbours=[n])) == Action.noop()
    assert t(obs("I ran again")) == Action.noop()
    assert t.invalid == 2


# ------------------------------------------------------------------------------------------------ trajectories
@pytest.fixture(scope="module")
def small():
    data = generate_synthetic(SyntheticConfig(n_dialogues=3, n_train=1, n_dev=1, sessions_per_dialogue=3))
    cfg = load_config(None, ["embedder.kind=hashing", "embedder.dim=512"])
    return data, build_stack(cfg)


def test_trajectory_round_trip_and_reuse(small, tmp_path):
    data, stack = small
    d = data["train"][0]
    traj = run_trajectory(stack.env, d, stack.teacher, stack.cache())
    assert [w.window for w in traj.windows] == [1, 2, 3]
    assert all(len(w.steps) == len(w.decisions) == len(w.critic_inputs) for w in traj.windows)
    save_trajectories(tmp_path / "t", [traj], {"note": "x"})
    back, meta = load_trajectories(tmp_path / "t")
    assert meta == {"note": "x"} and back[0].windows == traj.windows
    assert back[0].final_bank.to_dict() == traj.final_bank.to_dict()

    calls = []

    class CountingStack:
        env, cache = stack.env, stack.cache

        def teacher(self, o):
            calls.append(o)
            return stack.teacher(o)

    cs = CountingStack()
    cs.teacher = cs.teacher  # bound method as the policy
    first = teacher_trajectories(cs, (d,), tmp_path / "r", "t")
    n = len(calls)
    again = teacher_trajectories(cs, (d,), tmp_path / "r", "t")
    assert n > 0 and len(calls) == n  # the second call reloads, it does not recompute
    assert again[0].windows == first[0].windows


def test_trajectory_format_errors(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"format": "memprm.trajectories", "version": 99, "dialogues": []}'
    )
    with pytest.raises(ValueError, match="version 99"):
        load_trajectories(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a trajectory folder"):
        load_trajectories(tmp_path / "nope")


def test_offline_rendering_equals_online_rendering(small):
    data, stack = small
    traj = run_trajectory(stack.env, data["train"][0], stack.teacher, stack.cache())
    online = {s.op_id: x for w in traj.windows for s, x in zip(w.steps, w.critic_inputs, strict=True)}
    rel = relabel_trajectory(traj, stack.embedder, RelabelConfig())
    teacher_examples = [
        (lab, ex) for lab, ex in zip(rel.labeled, rel.examples, strict=True) if lab.source == "teacher"
    ]
    assert len(teacher_examples) == len(online)
    for lab, ex in teacher_examples:
        assert ex.text == online[lab.op_id]
    assert {lab.source for lab in rel.labeled} >= {"teacher", "cf_uninformative_write"}


# ------------------------------------------------------------------------------------------------ critic stage
def test_critic_stage_end_to_end_with_a_tiny_critic(small, tmp_path):
    data, stack = small
    tok = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    bert = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=512,
    )
    cfg = CriticConfig(backbone=BackboneConfig(), max_epochs=1, max_length=64, batch_size=16, lr=1e-3)
    res = run_critic_stage(
        stack,
        data["train"],
        data["dev"],
        tmp_path,
        cfg,
        RelabelConfig(),
        TrainerConfig(progress_bar=False),
        ValidityConfig(),
        seed=0,
        model=bert,
        tokenizer=tok,
    )
    assert res.n_train > 0 and res.n_val > 0
    assert (tmp_path / "critic" / "critic.json").is_file()
    assert (tmp_path / "critic" / "validity" / "report.md").is_file()
    assert (tmp_path / "teacher" / "train" / "manifest.json").is_file()
    assert res.report.spearman is not None and np.isfinite(float(res.report.spearman))
    phi, p = res.critic.score(["operation: WRITE layer: event\ncontent: Ana ran a marathon"])
    assert 0.0 <= phi[0] <= 1.0 and 0.0 <= p[0] <= 1.0
    assert list((tmp_path / "tb" / "critic").glob("events.out.tfevents.*"))
    assert res.relabel_counts["teacher"] > 0


def test_offline_stack_defaults_build():
    cfg = load_config(None, ["embedder.kind=hashing"])
    stack = build_stack(cfg)
    assert isinstance(stack.teacher, HeuristicTeacher) and stack.env.cfg == EnvConfig()
    assert cfg.embedder == EmbedderConfig(kind="hashing")
    with pytest.raises(ValueError, match="llm.reader"):
        build_stack(load_config(None, ["embedder.kind=hashing", "reader.kind=llm"]))
