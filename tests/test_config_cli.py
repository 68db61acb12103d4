"""Typed configs (YAML + dotted overrides) and the command line."""

from pathlib import Path

import pytest

from memprm.cli import main, parse_args
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
        ("rollout_data.split=test", "rollout_data.split must be 'train' or 'rl'"),
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


def test_extends_loads_the_base_first_and_names_missing_files_and_cycles(tmp_path):
    (tmp_path / "base.yaml").write_text("seed: 3\nretriever:\n  widths: {event: 6, profile: 3, verbatim: 3}\n")
    (tmp_path / "sub").mkdir()
    mid = tmp_path / "sub" / "mid.yaml"
    mid.write_text("extends: ../base.yaml\nseed: 4\n")  # relative to the extending file
    top = tmp_path / "top.yaml"
    top.write_text("extends: sub/mid.yaml\nretriever:\n  widths: {event: 2}\n")
    cfg = load_config(top, ["retriever.widths.profile=5"])
    assert cfg.seed == 4 and dict(cfg.retriever.widths) == {"event": 2, "profile": 5, "verbatim": 3}
    (tmp_path / "orphan.yaml").write_text("extends: gone.yaml\n")
    with pytest.raises(ConfigError, match=r"gone.yaml does not exist \(extended by .*orphan.yaml"):
        load_config(tmp_path / "orphan.yaml")
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match=r"cycle: .*a.yaml -> .*b.yaml -> .*a.yaml"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "list.yaml").write_text("extends: [a.yaml]\n")
    with pytest.raises(ConfigError, match="extends must be one file name"):
        load_config(tmp_path / "list.yaml")


@pytest.mark.parametrize("stages", ["[grpo,sft]", "[critic,test,grpo]", "[sft,sft]", "[critic,grpo,grpo]"])
def test_fit_stages_out_of_order_or_twice_name_the_pipeline_order(stages):
    with pytest.raises(ConfigError, match=r"fit: fit.stages must list each stage once, in the pipeline order "
                                          r"critic, sft, grpo, test; got \["):  # fmt: skip
        load_config(None, [f"fit.stages={stages}", "rollout.shaping=none"])


def test_fit_stages_in_pipeline_order_load():
    for stages, expected in [("[critic,grpo]", ("critic", "grpo")), ("[test]", ("test",)),
                             ("[sft,grpo,test]", ("sft", "grpo", "test"))]:  # fmt: skip
        assert load_config(None, [f"fit.stages={stages}"]).fit.stages == expected


def test_cli_overrides_before_and_after_config_later_ones_win(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("seed: 5\narm: file_arm\noutput_dir: from_file\n")
    later = ["seed=2", "data.synthetic.n_dialogues=6"]
    args = parse_args(["fit", "seed=1", "arm=early", "--config", str(f), *later])
    assert args.config == str(f) and args.overrides == ["seed=1", "arm=early", *later]
    cfg = load_config(args.config, args.overrides)
    assert cfg.seed == 2  # the later override wins
    assert cfg.arm == "early" and cfg.output_dir == "from_file"  # overrides before --config beat the file too
    assert cfg.data.synthetic.n_dialogues == 6
    data = parse_args(["data", "synthetic", "seed=1", "--config", str(f), "seed=3"])
    assert data.source == "synthetic" and data.overrides == ["seed=1", "seed=3"]
    usual = parse_args(["fit", "--config", str(f), "seed=4"])  # the usual order still works
    assert usual.overrides == ["seed=4"]
    assert parse_args(["fit", "seed=4"]).config is None


@pytest.mark.parametrize(
    "argv", [["fit", "seed=1", "--config", "c.yaml", "--bogus"], ["inspect", "run", "seed=1"]]
)
def test_cli_rejects_unknown_options_and_overrides_where_none_are_taken(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


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


def _leaves(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out |= _leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v}
    return out


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "arm, key, value",
    [
        ("sum_shaping", "rollout.shaping", "sum"),
        ("normalized_chain", "credit.chain", "normalized"),
        ("cited_version", "credit.chain", "cited_version"),
        ("flip_only", "credit.variant", "flip_only"),
        ("refreshed_critic", "critic_refresh.every_n_steps", 4),
    ],
)
def test_ablation_arms_are_ours_with_one_change(arm, key, value):
    ours = _leaves(to_dict(load_config(ROOT / "configs" / "arms" / "ours.yaml")))
    got = _leaves(to_dict(load_config(ROOT / "configs" / "arms" / f"{arm}.yaml")))
    changed = {k: got[k] for k in got if got[k] != ours[k]}
    assert changed == {"arm": arm, key: value}
    if arm == "sum_shaping":
        assert got["rollout.sum_scale"] == "auto"  # rescaled to the suffix-min magnitude (Remark 4)


def test_candidate_arms_are_the_settings_their_runs_used():
    """configs/arms/ours_head_horizon.yaml = ours_flips_kl.yaml plus the overrides of the runs it reports."""
    base = _leaves(to_dict(load_config(ROOT / "configs" / "arms" / "ours_flips_kl.yaml")))
    got = _leaves(to_dict(load_config(ROOT / "configs" / "arms" / "ours_head_horizon.yaml")))
    changed = {k: got[k] for k in got if got[k] != base[k]}
    assert changed == {"arm": "ours_head_horizon", "rollout.horizon": -1, "grpo.trainable": "all", "grpo.lr": 0.003}


def test_match_arms_are_outcome_horizon_with_the_changes_their_headers_name():
    """outcome_match = outcome_horizon with GRPO on the 3 match weights at lr 0.2; ours_match = outcome_match plus
    necessity-only credit on normalized chains and the coverage penalty (experiments/README.md)."""
    arms = ROOT / "configs" / "arms"
    horizon = _leaves(to_dict(load_config(arms / "outcome_horizon.yaml")))
    match = _leaves(to_dict(load_config(arms / "outcome_match.yaml")))
    ours = _leaves(to_dict(load_config(arms / "ours_match.yaml")))
    assert {k: match[k] for k in match if match[k] != horizon[k]} == {
        "arm": "outcome_match", "grpo.trainable": "match", "grpo.lr": 0.2}  # fmt: skip
    assert {k: ours[k] for k in ours if ours[k] != match[k]} == {
        "arm": "ours_match", "credit.chain": "normalized", "credit.weights.retrieved": 0.0,
        "credit.weights.cited": 0.0, "credit.weights.flips": 1.0, "grpo.weights.credit": 0.3, "grpo.weights.miss": 0.3}  # fmt: skip


def test_grpo_episodes_come_from_the_named_split_or_a_one_line_error():
    from memprm.data.source import load_source
    from memprm.stages.grpo_stage import episode_dialogues

    tiny = ["data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
            "data.synthetic.sessions_per_dialogue=1", "data.synthetic.turns_per_session=6"]  # fmt: skip
    cfg = load_config(None, [*tiny, "data.synthetic.n_rl=2", "rollout_data.split=rl"])
    splits = load_source(cfg.data)
    assert [d.id for d in episode_dialogues(cfg, splits)] == ["syn-003", "syn-004"]
    assert episode_dialogues(load_config(None, tiny), splits) == splits["train"]
    no_rl = load_config(None, [*tiny, "rollout_data.split=rl"])
    with pytest.raises(ValueError, match=r"rollout_data.split=rl: the synthetic data has no 'rl' dialogues "
                                         r"\(set data.synthetic.n_rl > 0\)"):  # fmt: skip
        episode_dialogues(no_rl, load_source(no_rl.data))
