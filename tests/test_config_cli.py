"""Typed configs (YAML + dotted overrides) and the command line."""

from pathlib import Path

import pytest

from memprm.cli import main
from memprm.config import ConfigError, MemprmConfig, config_yaml, load_config, to_dict

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_yaml_and_overrides(tmp_path):
    assert load_config() == MemprmConfig()
    f = tmp_path / "c.yaml"
    f.write_text("data:\n  source: locomo\n  categories: [1, 2]\nretriever:\n  paths: [verbatim]\n")
    cfg = load_config(f, ["retriever.widths.verbatim=10", "seed=3", "data.synthetic.n_dialogues=6"])
    assert cfg.data.source == "locomo" and cfg.data.categories == (1, 2)
    assert cfg.retriever.paths == ("verbatim",) and cfg.retriever.widths["verbatim"] == 10
    assert cfg.seed == 3 and cfg.data.synthetic.n_dialogues == 6
    assert to_dict(cfg)["retriever"]["paths"] == ["verbatim"]
    assert load_config(None, ["data.categories=null"]).data.categories is None


@pytest.mark.parametrize(
    "override, match",
    [
        ("data.sourse=locomo", r"data: unknown key\(s\) \['sourse'\]"),
        ("seed=abc", "seed: expected int"),
        ("data.source=imdb", "data.source must be one of"),
        ("retriever.paths=[semantic]", "unknown layer"),
        ("data.categories=[1,9]", "within 1..5"),
        ("embedder.kind=tfidf", "embedder.kind"),
        ("data.synthetic.overturn_prob=1.5", "overturn_prob"),
    ],
)
def test_bad_config_values_name_the_key(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, [override])


def test_config_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    f = tmp_path / "c.yaml"
    f.write_text("retriever:\n  max_segments: [1]\n")
    with pytest.raises(ConfigError, match=r"c.yaml: retriever.max_segments: expected int"):
        load_config(f)
    with pytest.raises(ConfigError, match="key.sub=value"):
        load_config(None, ["seed"])


def test_cli_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "data" in capsys.readouterr().out


def test_cli_data_synthetic_prints_report_and_sizes(capsys):
    assert main(["data", "synthetic", "data.synthetic.n_dialogues=6"]) == 0
    out = capsys.readouterr().out
    assert "load report: synthetic" in out
    assert "train" in out and "dev_selection" in out and "test" in out


def test_cli_data_locomo_uses_the_data_root(data_root, capsys):
    assert main(["data", "locomo"]) == 0
    out = capsys.readouterr().out
    assert "duplicate_question: 11" in out and "test" in out


def test_cli_reports_a_missing_root(monkeypatch, capsys):
    monkeypatch.delenv("MEMPRM_DATA", raising=False)
    assert main(["data", "locomo"]) == 2
    assert "needs a data root" in capsys.readouterr().err


@pytest.mark.parametrize("arm", [None, *sorted(p.name for p in (ROOT / "configs" / "arms").glob("*.yaml"))])
def test_a_run_folders_config_yaml_loads_back_to_the_same_config(arm, tmp_path):
    # fit writes config_yaml(cfg) to RUN/config.yaml; `fit --config RUN/config.yaml` must rebuild the same run
    cfg = load_config(None if arm is None else ROOT / "configs" / "arms" / arm)
    path = tmp_path / "config.yaml"
    path.write_text(config_yaml(cfg))
    assert load_config(path) == cfg
