"""Completion markers: what makes a rerun of the same command skip the stages it already finished.

A stage that finishes writes ``<run>/stages/<stage>.json`` last (atomically), holding the hash of exactly the
config that produced its outputs: the config sections the stage depends on (:data:`STAGE_SECTIONS`, minus the
settings that cannot change a result, :data:`IGNORED`) plus the hashes of the upstream stages it consumed and
a digest of the dialogues it read. On a rerun a stage whose marker holds the same hash is skipped (its outputs
are loaded); one whose hash differs is redone, and the log names the settings that changed; one without a
marker (never run, or killed before it finished) is run. Everything here is pure except :class:`Markers`'s
file access.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memprm.atomic import atomic_write_text
from memprm.configtools import to_dict
from memprm.models.critic_config import MC_TARGET_FIELDS

log = logging.getLogger("memprm.stages")

#: sections every stage that plays the memory environment depends on (data, roles, retrieval, env, seed).
ENV_SECTIONS = ("data", "embedder", "retriever", "reader", "judge", "probes", "notes", "llm", "env", "seed")
#: stage -> the config sections (top-level names or dotted paths) its outputs depend on; upstream stages'
#: hashes are added by the caller.
STAGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "calibration": (*ENV_SECTIONS, "teacher"),
    "teacher": (*ENV_SECTIONS, "teacher"),
    "critic": ("relabel", "critic", "validity", "trainer", "seed"),
    "sft": ("policy", "sft", "notes", "seed"),
    "grpo": (
        *ENV_SECTIONS,
        "policy",
        "credit",
        "rollout",
        "rollout_data",
        "grpo",
        "dev_selection",
        "critic_refresh",
        "shaping_monitor",
        "trainer",
    ),
    "test": (*ENV_SECTIONS, "teacher", "policy", "arm", "fit.stages", "fit.test_baselines"),
}
#: settings that never change a stage's outputs (display, logging, checkpoint cadence): not hashed, so
#: changing them on a rerun does not redo finished work.
IGNORED = (
    "trainer.progress_bar",
    "trainer.log_every_n_steps",
    "grpo.checkpoint_every",
    "llm.max_failure_share",
    # the rl split's size changes only the rl dialogues, whose digest enters GRPO's key when it plays them
    "data.synthetic.n_rl",
    # likewise the select split's size, and which split dev selection plays: its dialogues' digest is hashed
    "data.synthetic.n_select",
    "dev_selection.split",
)
#: the fields of an LLM endpoint that decide its answers (those of the response cache key); timeouts,
#: retries, concurrency and the URL do not.
LLM_ANSWER_FIELDS = ("model", "model_version", "temperature", "max_tokens")


@dataclass(frozen=True)
class StageKey:
    """What a stage's outputs are a function of: ``config`` (the hashed sections, nested) and ``upstream``
    (name -> hash of every input that is not config: upstream stages, dialogue digests)."""

    stage: str
    config: dict[str, Any]
    upstream: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return config_hash(self.config, self.upstream)

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "hash": self.digest, "config": self.config, "upstream": self.upstream}


def config_hash(config: Mapping[str, Any], upstream: Mapping[str, str] = ()) -> str:
    """sha256 of the canonical JSON of ``config`` and ``upstream`` (sorted keys, tuples as lists)."""
    doc = json.dumps({"config": config, "upstream": dict(upstream)}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()


def select_sections(cfg: Mapping[str, Any], paths: Iterable[str], ignored: Iterable[str] = IGNORED) -> dict:
    """The sub-dict of ``cfg`` (a nested dict, e.g. ``to_dict(MemprmConfig)``) at ``paths`` (``"grpo"`` or
    ``"fit.stages"``), without the dotted ``ignored`` keys; ``llm`` endpoints keep their answer fields only."""
    out: dict[str, Any] = {}
    for path in paths:
        *parents, last = path.split(".")
        node, dst = cfg, out
        for k in parents:
            node, dst = node[k], dst.setdefault(k, {})
        dst[last] = copy.deepcopy(node[last])
    if isinstance(out.get("llm"), dict):
        out["llm"] = {
            role: e if not isinstance(e, dict) else {k: e[k] for k in LLM_ANSWER_FIELDS if k in e}
            for role, e in out["llm"].items()
        }
    for dotted in ignored:
        *parents, last = dotted.split(".")
        node = out
        for k in parents:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    _drop_unused_mc_settings(out)
    return out


def _drop_unused_mc_settings(sections: dict[str, Any]) -> None:
    """A critic trained on audit targets (``critic.target=audit``) reads none of the MC-target settings
    (:data:`~memprm.models.critic_config.MC_TARGET_FIELDS`, ``target`` included): they leave its key, so
    they cannot redo its work and its key is the one it had before they existed; with ``target=mc`` they are
    all hashed."""
    critic = sections.get("critic")
    if isinstance(critic, dict) and critic.get("target", "audit") == "audit":
        for name in MC_TARGET_FIELDS:
            critic.pop(name, None)


def stage_key(cfg, stage: str, upstream: Mapping[str, str] = ()) -> StageKey:
    """The key of ``stage`` for a :class:`~memprm.config.MemprmConfig` (or its ``to_dict``)."""
    raw = cfg if isinstance(cfg, Mapping) else to_dict(cfg)
    return StageKey(stage, select_sections(raw, STAGE_SECTIONS[stage.split(":")[0]]), dict(upstream))


def dialogues_digest(dialogues: Sequence[Any]) -> str:
    """A digest of loaded dialogues (frozen dataclasses: their repr is their content), so a changed data file
    or loader makes every stage that read it stale."""
    return hashlib.sha256(repr(tuple(dialogues)).encode()).hexdigest()


def changed_keys(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts (present in one only counts)."""
    out = []
    for k in sorted(set(old) | set(new), key=str):
        a, b = old.get(k, _MISSING), new.get(k, _MISSING)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(changed_keys(a, b, f"{prefix}{k}."))
        elif a != b:
            out.append(f"{prefix}{k}")
    return out


_MISSING = object()


class Markers:
    """The completion markers of one run folder (``<run>/stages/<stage>.json``)."""

    def __init__(self, run_dir: Path):
        self.folder = Path(run_dir) / "stages"

    def path(self, stage: str) -> Path:
        return self.folder / f"{stage.replace(':', '_')}.json"

    def read(self, stage: str) -> dict[str, Any] | None:
        p = self.path(stage)
        if not p.is_file():
            return None
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:  # not written by this code (markers are written atomically)
            return None

    def hash_of(self, stage: str) -> str | None:
        doc = self.read(stage)
        return None if doc is None else doc.get("hash")

    def done(self, key: StageKey, what: str = "") -> bool:
        """True when ``key``'s stage finished with this key; logs the decision either way (skip, redo because
        settings changed, or run)."""
        what = what or key.stage
        doc = self.read(key.stage)
        if doc is None:
            return False
        if doc.get("hash") == key.digest:
            log.info("%s: finished earlier with this config (hash %s); skipping", what, key.digest[:12])
            return True
        changed = changed_keys(doc.get("config", {}), key.config)
        changed += [f"upstream {u}" for u in changed_keys(doc.get("upstream", {}), key.upstream)]
        log.warning(
            "%s: its config changed since it ran (%s); redoing it",
            what,
            ", ".join(changed) or "unknown difference",
        )
        return False

    def write(self, key: StageKey) -> None:
        atomic_write_text(self.path(key.stage), json.dumps(key.as_dict(), indent=1, default=str) + "\n")

    def clear(self, stage: str) -> None:
        self.path(stage).unlink(missing_ok=True)
