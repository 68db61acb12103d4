"""The stage keys of one ``fit`` and the run folder's bookkeeping (config file, clearing a stage to redo).

:func:`plan_keys` derives every stage's :class:`~memprm.stages.markers.StageKey` from the config, the loaded
dialogues and stage one's markers, so that each key changes exactly when an input of that stage changes:

    calibration  <- reader/env sections, the dev calibration dialogues
    teacher:<s>  <- env sections + teacher, the split's dialogues, calibration
    critic       <- relabel/critic/validity/trainer, teacher:train, teacher:dev
    sft          <- policy/sft, teacher:train
    grpo         <- env sections + policy/credit/rollout/grpo/callbacks/trainer, calibration, the policy it
                    starts from (sft, or untrained), the critic it is shaped by (its folder's marker when
                    this run does not train it), the dialogues it plays (rollout_data.split) and the
                    dev-selection dialogues
    test         <- env sections + teacher/policy/arm/fit, calibration, sft, grpo, the test dialogues
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.configtools import to_dict
from memprm.data.records import DataSplits
from memprm.models.critic_config import MC_TARGET_FIELDS
from memprm.stages.markers import Markers, StageKey, dialogues_digest, stage_key

log = logging.getLogger("memprm.stages")

DIGESTED_SPLITS = ("train", "dev", "dev_calibration", "dev_selection", "test")


def selection_split(cfg, splits: DataSplits):
    """The dialogues dev-checkpoint selection plays (``dev_selection.split``); a missing or empty split is
    an error that names the setting to change."""
    name = cfg.dev_selection.split
    dialogues = splits.splits.get(name, ())
    if not dialogues:
        fix = "set data.synthetic.n_select > 0" if name == "select" else "check the data source's dev split"
        raise ValueError(f"dev_selection.split={name}: the {splits.source} source has no {name!r} dialogues ({fix})")
    return dialogues


def plan_keys(cfg, splits: DataSplits, stage_one_critic: str | None = None) -> dict[str, StageKey]:
    """Every stage's key for ``cfg`` (a MemprmConfig) on ``splits``. ``stage_one_critic``: the critic marker
    hash of the run folder named by ``fit.stage_one_dir`` when this run does not train its critic (stage one
    elsewhere, or no ``critic`` stage); None: this run trains it."""
    raw = to_dict(cfg)
    digest = {s: dialogues_digest(splits[s]) for s in DIGESTED_SPLITS}
    episodes = cfg.rollout_data.split
    if episodes not in digest:
        digest[episodes] = dialogues_digest(splits[episodes])
    selection = cfg.dev_selection.split
    if selection not in digest:
        digest[selection] = dialogues_digest(selection_split(cfg, splits))
    keys: dict[str, StageKey] = {}
    cal = "off"
    if cfg.reader.kind == "extractive" and cfg.reader.calibrate_abstention:
        keys["calibration"] = stage_key(
            raw, "calibration", {"data:dev_calibration": digest["dev_calibration"]}
        )
        cal = keys["calibration"].digest
    for split in ("train", "dev"):
        keys[f"teacher:{split}"] = stage_key(
            raw, f"teacher:{split}", {f"data:{split}": digest[split], "calibration": cal}
        )
    teacher = {s: keys[s].digest for s in ("teacher:train", "teacher:dev")}
    keys["critic"] = stage_key(raw, "critic", teacher)
    keys["sft"] = stage_key(raw, "sft", {"teacher:train": teacher["teacher:train"]})
    stages = set(cfg.fit.stages)
    start = keys["sft"].digest if "sft" in stages else "untrained"
    critic = "none"
    if cfg.rollout.shaping != "none":
        critic = keys["critic"].digest if stage_one_critic is None else stage_one_critic
    grpo_up = {
        "calibration": cal,
        "policy_start": start,
        "critic": critic,
        f"data:{episodes}": digest[episodes],
        "data:dev_selection": digest[selection],
    }
    if critic != "none" and cfg.critic_refresh.every_n_steps > 0:
        grpo_up["teacher:dev"] = teacher["teacher:dev"]
    keys["grpo"] = stage_key(raw, "grpo", grpo_up)
    trained = keys["grpo"].digest if "grpo" in stages else "none"
    keys["test"] = stage_key(
        raw, "test", {"calibration": cal, "sft": start, "grpo": trained, "data:test": digest["test"]}
    )
    return keys


def stage_one_folder(cfg, run_dir: Path) -> Path:
    """The folder whose stage one (teacher trajectories, critic) this run uses: ``fit.stage_one_dir``, else
    ``run_dir``. A ``fit.stage_one_dir`` whose critic was trained on other targets
    (:func:`critic_target_mismatch`) is not reused by a run with a ``critic`` stage: it trains its own (the
    log says why), so an MC-target critic never stands in for an audit-target one, nor the reverse."""
    if not cfg.fit.stage_one_dir:
        return run_dir
    other = Path(cfg.fit.stage_one_dir)
    why = critic_target_mismatch(cfg, other)
    if why and "critic" in cfg.fit.stages:
        log.warning("%s: this run trains its own stage one in %s", why, run_dir)
        return run_dir
    return other


def critic_target_mismatch(cfg, stage_one: Path) -> str | None:
    """Why the critic in the run folder ``stage_one`` (by its completion marker) was trained on other
    targets than ``cfg``'s critic would be (``critic.target`` and its ``mc_*`` settings), or None when they
    are the same or that folder has no critic marker."""
    doc = Markers(stage_one).read("critic")
    if doc is None:
        return None
    theirs = _targets(doc.get("config", {}).get("critic", {}))
    ours = _targets(stage_key(cfg, "critic").config["critic"])
    if theirs == ours:
        return None
    return f"the critic in {stage_one} was trained with {theirs}, this run's critic has {ours}"


def _targets(critic_section: dict) -> dict:
    """The target settings a critic key holds (none for ``target=audit``: :mod:`memprm.stages.markers`)."""
    return {k: critic_section[k] for k in MC_TARGET_FIELDS if k in critic_section} or {"target": "audit"}


def write_config(run_dir: Path, text: str) -> int | None:
    """Write the resolved config to ``run_dir/config.yaml``. Unchanged: nothing is written (None). A
    different earlier one is kept as ``config.<k>.yaml`` (the first free k) and said so. Returns the
    version number of the new file (0 for the first, k when it replaced ``config.<k>.yaml``'s content)."""
    path = run_dir / "config.yaml"
    if path.is_file():
        if path.read_text() == text:
            return None
        k = 1
        while (run_dir / f"config.{k}.yaml").exists():
            k += 1
        path.replace(run_dir / f"config.{k}.yaml")
        log.warning(
            "%s: this run's config differs from the folder's earlier one, kept as config.%d.yaml", path, k
        )
        atomic_write_text(path, text)
        return k
    atomic_write_text(path, text)
    return 0


def fresh_stage(run_dir: Path, stage: str, markers: Markers) -> None:
    """Before a stage is (re)done from scratch: its marker and TensorBoard folder go, so a killed or stale
    attempt leaves no events behind (GRPO's folder is handled by its own resume logic)."""
    markers.clear(stage)
    if stage != "grpo":
        shutil.rmtree(run_dir / "tb" / stage, ignore_errors=True)
