"""The pipeline's shape and what every stage shares: Run.measure seeds, counts and times a stage's work."""

from __future__ import annotations

import inspect
import json

import pytest
import torch

from memprm.config import STAGES
from memprm.fit import PIPELINE
from memprm.stages.run_context import Run, StageResult, stage_seed


def _run(tmp_path) -> Run:
    return Run(tmp_path, 7, splits=None, stack=None, keys={}, markers=None, stage_one=tmp_path)


def test_pipeline_lists_every_stage_in_order_with_one_signature():
    assert tuple(name for name, _ in PIPELINE) == STAGES
    for name, stage in PIPELINE:
        params = list(inspect.signature(stage).parameters)
        assert params == ["cfg", "run"], f"stage {name!r} takes {params}"
        assert inspect.signature(stage).return_annotation in (StageResult, "StageResult")


def test_measure_seeds_each_stage_alike_and_records_its_time_and_counters(tmp_path):
    run = _run(tmp_path)
    draws = []
    for name in ("sft", "sft", "grpo"):
        with run.measure(name) as m:
            draws.append(torch.rand(3))
        assert m.seconds == run.out.seconds[name] >= 0.0
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
    assert stage_seed(7, "sft") != stage_seed(7, "grpo") and stage_seed(7, "sft") != stage_seed(8, "sft")
    assert set(json.loads((tmp_path / "llm_counters.json").read_text())) == {"sft", "grpo"}
    assert run.own_stage_one and run.out.run_dir == tmp_path


def test_a_failed_stage_records_no_time(tmp_path):
    run = _run(tmp_path)
    with pytest.raises(RuntimeError), run.measure("critic"):
        raise RuntimeError("boom")
    assert "critic" not in run.out.seconds
