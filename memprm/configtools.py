"""Generic config machinery: nested dicts → typed frozen dataclasses, with errors naming the dotted key.

Kept free of section imports so any module (e.g. one that saves its own config) can use it. A YAML file may
start from another with a top-level ``extends: other.yaml`` (:func:`load_yaml`).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from omegaconf import DictConfig, OmegaConf

T = TypeVar("T")


class ConfigError(ValueError):
    """A config value is unknown, of the wrong type, or invalid. The message names the dotted key."""


def load_yaml(path: str | Path, _seen: tuple[Path, ...] = ()) -> DictConfig:
    """A YAML config file, with its ``extends`` resolved: ``extends: base.yaml`` (a path relative to the file)
    loads that file first (itself resolved the same way) and merges this one over it; the key is dropped. An
    arm that is another arm with a few settings changed says so once instead of copying its settings.

    A missing file, an ``extends`` that is not one string, or a cycle is a :class:`ConfigError` naming the
    files."""
    p = Path(path)
    chain = " -> ".join(map(str, (*_seen, p)))
    if p.resolve() in {q.resolve() for q in _seen}:
        raise ConfigError(f"config files extend each other in a cycle: {chain}")
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist" + (f" (extended by {chain})" if _seen else ""))
    cfg = OmegaConf.load(p)
    if not isinstance(cfg, DictConfig):
        raise ConfigError(f"{p}: a config file must hold a mapping, got {type(cfg).__name__}")
    base = cfg.pop("extends", None)
    if base is None:
        return cfg
    if not isinstance(base, str) or not base:
        raise ConfigError(f"{p}: extends must be one file name (a path relative to {p.parent}), got {base!r}")
    return OmegaConf.merge(load_yaml(p.parent / base, (*_seen, p)), cfg)


def build(cls: type[T], raw: Any, where: str = "", prefix: str = "") -> T:
    """Convert a nested dict into dataclass ``cls``; missing keys take the dataclass defaults."""
    if isinstance(raw, cls):
        return raw
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{_loc(where, prefix.rstrip('.') or cls.__name__)}: expected a mapping for {cls.__name__}, got {raw!r}"
        )
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ConfigError(
            f"{_loc(where, prefix.rstrip('.') or cls.__name__)}: unknown key(s) {unknown}; valid keys: {sorted(names)}"
        )
    kwargs = {k: _convert(hints[k], v, where, f"{prefix}{k}") for k, v in raw.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{_loc(where, prefix.rstrip('.') or cls.__name__)}: {exc}") from exc


def to_dict(cfg: Any) -> Any:
    """The inverse of :func:`build` (tuples become lists, enums their values), for logging and saving the
    resolved config: ``build(type(cfg), to_dict(cfg)) == cfg``."""
    if isinstance(cfg, enum.Enum):
        return cfg.value
    if dataclasses.is_dataclass(cfg):
        return {f.name: to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, (list, tuple)):
        return [to_dict(x) for x in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v) for k, v in cfg.items()}
    return cfg


def _convert(tp: Any, value: Any, where: str, key: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value, where, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{_loc(where, key)}: bad value {value!r}")
    if dataclasses.is_dataclass(tp):
        return build(tp, value, where, key + ".")
    if origin in (tuple, list, Sequence):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{_loc(where, key)}: expected a list, got {value!r}")
        args = get_args(tp)
        elem = args[0] if args else Any
        items = [_convert(elem, v, where, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{_loc(where, key)}: expected a mapping, got {value!r}")
        _, vt = get_args(tp) or (Any, Any)
        return {k: _convert(vt, v, where, f"{key}.{k}") for k, v in value.items()}
    if origin is typing.Literal:
        if value not in get_args(tp):
            raise ConfigError(f"{_loc(where, key)}: must be one of {get_args(tp)}, got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in (int, float, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise ConfigError(f"{_loc(where, key)}: expected {tp.__name__}, got {value!r}")
        return value
    return value


def _loc(where: str, key: str) -> str:
    return f"{where}: {key}" if where else key
