"""The external memory: three layers of entries with version chains, and an operation log.

Design (DESIGN.md, "Bank"):

- ``Write(layer, content, key)`` starts an :class:`Entry`; ``Merge(entry_id, content)`` appends a
  :class:`Version` (old versions stay); ``Noop`` changes nothing but is logged, so every gate decision has an
  operation id. Every turn is also written to the verbatim layer (``write_verbatim``), one entry per turn.
- There is no destructive delete. Deletion exists only as a counterfactual *view* (``bank.without(ids)``) that
  mutates nothing; the retriever serves it by masking.
- ``fork()`` is cheap: entries and versions are immutable, so a fork shares every entry object with its
  parent (:meth:`MemoryBank.fork`). Nothing is ever deep-copied.
- Invalid operations raise :class:`BankError` before anything is changed.

The bank knows nothing about embeddings. A retriever attaches a per-bank index in ``bank.index_state``; the bank
forks it along (``state.fork()``) without knowing what it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

LAYERS: tuple[str, ...] = ("event", "profile", "verbatim")
MANAGED_LAYERS: tuple[str, ...] = ("event", "profile")
OpKind = Literal["write", "merge", "noop", "verbatim"]
FORMAT_VERSION = 1


class BankError(ValueError):
    """An invalid memory operation (unknown layer or entry, empty content, …). The bank is unchanged."""


@dataclass(frozen=True)
class Version:
    """One version of an entry: content, a timestamp, the source turn ids and the id of the operation that
    wrote it."""

    content: str
    timestamp: str | None  # ISO-8601 (the session's date), or None when the source has no date
    source_turn_ids: tuple[str, ...]
    op_id: str


@dataclass(frozen=True)
class Entry:
    """An entry: an id, a layer (``event``, ``profile``, ``verbatim``), a key and a version chain."""

    id: str
    layer: str
    key: str
    versions: tuple[Version, ...]
    seq: int  # creation order inside the bank lineage; breaks retrieval ties deterministically

    @property
    def latest(self) -> Version:
        return self.versions[-1]

    @property
    def op_ids(self) -> tuple[str, ...]:
        """Operation ids on the version chain, oldest first (the write, then each merge)."""
        return tuple(v.op_id for v in self.versions)


@dataclass(frozen=True)
class OpRecord:
    """One logged operation. ``entry_id``/``version_index`` say what it produced (None for a Noop)."""

    op_id: str
    kind: OpKind
    layer: str
    entry_id: str | None
    version_index: int | None
    turn_id: str | None
    content: str | None = None


class IndexState(Protocol):
    """What a retriever may attach to a bank: something that forks cheaply."""

    def fork(self) -> IndexState: ...


@dataclass
class MemoryBank:
    """A memory bank. Construct empty with ``MemoryBank()``; never share one between rollouts — fork it."""

    _entries: dict[str, Entry] = field(default_factory=dict)
    _ops: list[OpRecord] = field(default_factory=list)
    #: (layer, entry_id, version_index) for every version in the order they were added; retrievers index
    #: incrementally from it (position i of this log is row i of their per-bank index).
    _version_log: list[tuple[str, str, int]] = field(default_factory=list)
    _next_entry: int = 0
    index_state: IndexState | None = None

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def entry(self, entry_id: str) -> Entry:
        try:
            return self._entries[entry_id]
        except KeyError:
            raise BankError(f"no entry {entry_id!r} in the bank ({len(self._entries)} entries)") from None

    def entries(self, layer: str | None = None) -> list[Entry]:
        if layer is not None:
            _check_layer(layer)
            return [e for e in self._entries.values() if e.layer == layer]
        return list(self._entries.values())

    @property
    def ops(self) -> tuple[OpRecord, ...]:
        return tuple(self._ops)

    @property
    def version_log(self) -> list[tuple[str, str, int]]:
        return self._version_log

    @property
    def n_versions(self) -> int:
        return len(self._version_log)

    def stats(self, layers: Iterable[str] = MANAGED_LAYERS) -> dict[str, float]:
        """Entries and versions per entry over the given layers (the paper's organization metrics)."""
        es = [e for e in self._entries.values() if e.layer in set(layers)]
        n_versions = sum(len(e.versions) for e in es)
        return {
            "entries": len(es),
            "versions": n_versions,
            "versions_per_entry": n_versions / max(len(es), 1),
        }

    # ------------------------------------------------------------------ operations
    def write(
        self,
        layer: str,
        content: str,
        key: str = "",
        *,
        timestamp: str | None = None,
        source_turn_ids: Iterable[str] = (),
        turn_id: str | None = None,
    ) -> OpRecord:
        """Start a new entry in ``layer`` (``event`` or ``profile``). Returns the logged operation."""
        _check_layer(layer)
        if layer == "verbatim":
            raise BankError("the verbatim layer is written automatically (write_verbatim), not by Write")
        return self._start_entry("write", layer, content, key, timestamp, source_turn_ids, turn_id)

    def write_verbatim(self, content: str, *, turn_id: str, timestamp: str | None = None) -> OpRecord:
        """The automatic verbatim write of one turn (key = the turn id)."""
        return self._start_entry("verbatim", "verbatim", content, turn_id, timestamp, (turn_id,), turn_id)

    def merge(
        self,
        entry_id: str,
        content: str,
        *,
        timestamp: str | None = None,
        source_turn_ids: Iterable[str] = (),
        turn_id: str | None = None,
    ) -> OpRecord:
        """Append a version to ``entry_id``'s chain; earlier versions stay."""
        _check_content(content)
        old = self.entry(entry_id)
        if old.layer == "verbatim":
            raise BankError(
                f"cannot merge into verbatim entry {entry_id!r}: the verbatim layer is append-only"
            )
        op_id = self._op_id()
        version = Version(content, timestamp, _turns(source_turn_ids, turn_id), op_id)
        self._entries[entry_id] = Entry(old.id, old.layer, old.key, old.versions + (version,), old.seq)
        self._version_log.append((old.layer, entry_id, len(old.versions)))
        rec = OpRecord(op_id, "merge", old.layer, entry_id, len(old.versions), turn_id, content)
        self._ops.append(rec)
        return rec

    def noop(self, layer: str, *, turn_id: str | None = None) -> OpRecord:
        """Log a Noop gate decision (nothing changes in the bank)."""
        _check_layer(layer)
        rec = OpRecord(self._op_id(), "noop", layer, None, None, turn_id)
        self._ops.append(rec)
        return rec

    def _start_entry(self, kind, layer, content, key, timestamp, source_turn_ids, turn_id) -> OpRecord:
        _check_content(content)
        op_id = self._op_id()
        entry_id = f"{layer[0]}{self._next_entry:05d}"
        self._next_entry += 1
        version = Version(content, timestamp, _turns(source_turn_ids, turn_id), op_id)
        self._entries[entry_id] = Entry(entry_id, layer, key, (version,), self._next_entry - 1)
        self._version_log.append((layer, entry_id, 0))
        rec = OpRecord(op_id, kind, layer, entry_id, 0, turn_id, content)
        self._ops.append(rec)
        return rec

    def skip_entry_id(self) -> None:
        """Use up the next entry id without creating an entry, as a Write would: a replay that takes back a
        Write keeps every later entry's recorded id (:mod:`memprm.env.replay`)."""
        self._next_entry += 1

    def _op_id(self) -> str:
        return f"op{len(self._ops):06d}"

    # ------------------------------------------------------------------ forks and views
    def fork(self) -> MemoryBank:
        """An independent bank sharing every immutable entry with this one (cost: O(#entries) pointers).

        Entries and versions are immutable, so the fork shares every entry object with its parent and
        copies only the id → entry table (a shallow dict copy, pointer-sized per entry) and the op log list.
        Writes in a fork replace table slots in that fork alone. Nothing is ever deep-copied. The retriever's
        index state is forked along (``index_state.fork()``).
        """
        return MemoryBank(
            _entries=dict(self._entries),
            _ops=list(self._ops),
            _version_log=list(self._version_log),
            _next_entry=self._next_entry,
            index_state=None if self.index_state is None else self.index_state.fork(),
        )

    def without(self, entry_ids: Iterable[str]) -> BankView:
        """The counterfactual bank without ``entry_ids``: a read-only view; this bank is not touched."""
        hidden = frozenset(entry_ids)
        unknown = hidden - self._entries.keys()
        if unknown:
            raise BankError(f"cannot hide unknown entries {sorted(unknown)[:5]}")
        return BankView(self, hidden)

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "next_entry": self._next_entry,
            "entries": [
                {
                    "id": e.id,
                    "layer": e.layer,
                    "key": e.key,
                    "seq": e.seq,
                    "versions": [
                        {
                            "content": v.content,
                            "timestamp": v.timestamp,
                            "source_turn_ids": list(v.source_turn_ids),
                            "op_id": v.op_id,
                        }
                        for v in e.versions
                    ],
                }
                for e in self._entries.values()
            ],
            "ops": [
                {
                    "op_id": o.op_id,
                    "kind": o.kind,
                    "layer": o.layer,
                    "entry_id": o.entry_id,
                    "version_index": o.version_index,
                    "turn_id": o.turn_id,
                    "content": o.content,
                }
                for o in self._ops
            ],
            "version_log": [list(v) for v in self._version_log],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "<dict>") -> MemoryBank:
        if d.get("format_version") != FORMAT_VERSION:
            raise BankError(
                f"{source}: bank format_version {d.get('format_version')!r}, expected {FORMAT_VERSION}"
            )
        try:
            entries = {}
            for e in d["entries"]:
                versions = tuple(
                    Version(v["content"], v["timestamp"], tuple(v["source_turn_ids"]), v["op_id"])
                    for v in e["versions"]
                )
                entries[e["id"]] = Entry(e["id"], e["layer"], e["key"], versions, e["seq"])
            ops = [OpRecord(**o) for o in d["ops"]]
            vlog = [(a, b, int(c)) for a, b, c in d["version_log"]]
            return cls(_entries=entries, _ops=ops, _version_log=vlog, _next_entry=int(d["next_entry"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise BankError(f"{source}: malformed bank: {exc!r}") from exc

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> MemoryBank:
        try:
            d = json.loads(Path(path).read_text())
        except json.JSONDecodeError as exc:
            raise BankError(f"{path}: not JSON: {exc}") from exc
        return cls.from_dict(d, source=str(path))


@dataclass(frozen=True)
class BankView:
    """A bank with some entries hidden. Read-only; shares everything with ``base``."""

    base: MemoryBank
    hidden: frozenset[str]

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.base and entry_id not in self.hidden

    def __len__(self) -> int:
        return len(self.base) - len(self.hidden)

    def __iter__(self) -> Iterator[Entry]:
        return (e for e in self.base if e.id not in self.hidden)

    def entry(self, entry_id: str) -> Entry:
        if entry_id in self.hidden:
            raise BankError(f"entry {entry_id!r} is hidden in this counterfactual view")
        return self.base.entry(entry_id)

    def entries(self, layer: str | None = None) -> list[Entry]:
        return [e for e in self.base.entries(layer) if e.id not in self.hidden]

    def without(self, entry_ids: Iterable[str]) -> BankView:
        return BankView(self.base, self.hidden | self.base.without(entry_ids).hidden)


def _check_layer(layer: str) -> None:
    if layer not in LAYERS:
        raise BankError(f"unknown layer {layer!r}; layers are {LAYERS}")


def _check_content(content: str) -> None:
    if not isinstance(content, str) or not content.strip():
        raise BankError(f"memory content must be a non-empty string, got {content!r}")


def _turns(source_turn_ids: Iterable[str], turn_id: str | None) -> tuple[str, ...]:
    ids = tuple(source_turn_ids)
    if not ids and turn_id is not None:
        ids = (turn_id,)
    return ids
