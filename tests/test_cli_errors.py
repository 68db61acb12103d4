"""Bad input or setup ends ``python -m memprm data|fit`` with one line on stderr and exit status 2, before
anything is loaded or a run folder is written."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memprm.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_console_handler():
    """``main`` attaches a console handler to the stderr of its first call; capsys swaps stderr per test."""
    yield
    logger = logging.getLogger("memprm")
    for h in [h for h in logger.handlers if h.get_name() == "memprm-console"]:
        logger.removeHandler(h)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_data_format_error_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "longmemeval").mkdir()
    (tmp_path / "longmemeval" / "longmemeval_oracle.json").write_text("[]")
    (tmp_path / "longmemeval" / "splits").mkdir()
    (tmp_path / "longmemeval" / "splits" / "membuilder_longmemeval_splits.json").write_text(
        json.dumps({"sft": [], "rl": [], "test": []})
    )
    monkeypatch.setenv("MEMPRM_DATA", str(tmp_path))
    assert main(["data", "longmemeval"]) == 2
    err = _one_line_error(capsys)
    assert "longmemeval_oracle.json" in err and "no questions" in err


def test_missing_api_key_fails_before_the_run_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    args = ["fit", "--config", str(ROOT / "configs" / "locomo_llm.yaml"), f"output_dir={tmp_path}"]
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert "DEEPSEEK_API_KEY" in err and "api_key_env" in err
    assert list(tmp_path.iterdir()) == []


def test_uncached_embedder_offline_fails_fast_naming_the_setting(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    args = ["fit", "embedder.model=BAAI/bge-base-en-v1.5", f"output_dir={tmp_path / 'runs'}"]
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert "'BAAI/bge-base-en-v1.5'" in err and "embedder.model" in err and "HF_HUB_OFFLINE" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("missing", ["llm.reader"])
def test_llm_role_without_endpoint(tmp_path: Path, capsys, missing: str) -> None:
    assert main(["fit", "reader.kind=llm", f"output_dir={tmp_path}"]) == 2
    assert missing in _one_line_error(capsys)


@pytest.mark.parametrize("stage_one", [None, "empty"])
def test_shaped_grpo_without_a_trained_critic_fails_before_the_run_folder(
    tmp_path: Path, capsys, stage_one: str | None
) -> None:
    # no critic stage, critic shaping on (the default suffix_min): GRPO must not silently train unshaped
    args = ["fit", "fit.stages=[sft,grpo]", f"output_dir={tmp_path / 'runs'}"]
    if stage_one is not None:
        (tmp_path / stage_one / "teacher").mkdir(parents=True)  # a folder without critic/critic.json
        args.append(f"fit.stage_one_dir={tmp_path / stage_one}")
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert "fit.stages has no 'critic' and rollout.shaping=suffix_min needs a trained critic" in err
    assert ("holds no trained critic" if stage_one else "fit.stage_one_dir is not set") in err
    assert "rollout.shaping=none" in err
    assert not (tmp_path / "runs").exists()


def test_oracle_notes_are_refused_by_fit_before_the_run_folder(tmp_path: Path, capsys) -> None:
    # the oracle note writer reads the data's fact annotations: analysis (tools/policy_gap.py) only
    assert main(["fit", "notes.kind=oracle", "embedder.kind=hashing", f"output_dir={tmp_path / 'runs'}"]) == 2
    err = _one_line_error(capsys)
    assert "notes.kind=oracle" in err and "only for tools/policy_gap.py" in err
    assert not (tmp_path / "runs").exists()


def test_fit_refuses_oracle_notes_when_called_directly(tmp_path: Path) -> None:
    from memprm.config import load_config
    from memprm.configtools import ConfigError
    from memprm.fit import fit

    cfg = load_config(None, ["notes.kind=oracle", "embedder.kind=hashing", f"output_dir={tmp_path / 'runs'}"])
    with pytest.raises(ConfigError, match="notes.kind=oracle"):
        fit(cfg)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("stage", ["grpo", "sft"])
def test_structural_training_with_a_pair_scorer_fails_before_the_run_folder(stage, tmp_path: Path, capsys) -> None:
    # {grpo,sft}.trainable=structural trains the two-tower head's text-free weights: a pair scorer has none
    args = ["fit", f"{stage}.trainable=structural", "policy.scorer=pair", f"output_dir={tmp_path / 'runs'}"]
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert f"{stage}.trainable=structural (or kinds, match) needs policy.kind=scoring with policy.scorer=two_tower" in err
    assert "policy.scorer=pair" in err
    assert not (tmp_path / "runs").exists()
