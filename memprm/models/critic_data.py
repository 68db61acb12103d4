"""Labeled operations for the memory-utility critic, and the DataModule that feeds them.

A :class:`CriticExample` is one operation (a teacher operation or a counterfactual one) as the critic sees it:
``text`` is its decision-time rendering (made upstream by the renderer the online stage also uses; the critic
never sees hindsight information), ``u`` the relabeled utility target in [0, 1], ``u_rr`` whether the entry it
wrote was ever retrieved.

:class:`CriticDataModule` splits by dialogue (no dialogue's operations on both sides), tokenizes once, can
repeat the rare ``miss`` examples, and shuffles deterministically (:class:`EpochShuffleSampler`): same seed →
same batches, epoch by epoch.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset, Sampler
from transformers import PreTrainedTokenizerBase

from memprm.models.backbone import encode_texts, pad_right


@dataclass(frozen=True)
class CriticExample:
    #: decision-time rendering of the operation (the critic's whole input).
    text: str
    #: relabeled utility target in [0, 1] (ordinal tier value, or 0 for a counterfactual miss).
    u: float
    #: 1 if the entry the operation produced was ever retrieved (u^RR), else 0.
    u_rr: int
    #: dialogue the operation belongs to (the unit of the train/val split).
    dialogue_id: str
    #: where the example comes from: ``teacher``, ``cf_noop_miss``, ``cf_uninformative_write``, ...
    kind: str
    #: id of the operation (teacher op id; counterfactuals name the op they were derived from).
    op_id: str
    #: the relabeling tier (:class:`memprm.credit.tiers.Tier` value: ``miss`` / ``skip`` for Noops); empty
    #: when the example has none (online replay labels).
    tier: str = ""

    def __post_init__(self) -> None:
        where = f"critic example op_id={self.op_id!r} (dialogue {self.dialogue_id!r}, kind {self.kind!r})"
        if not isinstance(self.tier, str):
            raise ValueError(f"{where}: field 'tier' must be a string, got {self.tier!r}")
        for name in ("text", "dialogue_id", "kind", "op_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
        if isinstance(self.u, bool) or not isinstance(self.u, numbers.Real) or not math.isfinite(self.u):
            raise ValueError(f"{where}: field 'u' must be a finite number, got {self.u!r}")
        if not 0.0 <= self.u <= 1.0:
            raise ValueError(f"{where}: field 'u' must be in [0, 1], got {self.u!r}")
        if self.u_rr not in (0, 1) or isinstance(self.u_rr, float):
            raise ValueError(f"{where}: field 'u_rr' must be 0 or 1, got {self.u_rr!r}")


def split_by_dialogue(
    examples: Sequence[CriticExample], val_dialogues: Sequence[str]
) -> tuple[list[CriticExample], list[CriticExample]]:
    """(train, val): examples of ``val_dialogues`` go to val, the rest to train; order is kept.

    A named validation dialogue with no example is an error (a typo would otherwise empty the val set).
    """
    wanted = set(val_dialogues)
    present = {e.dialogue_id for e in examples}
    missing = sorted(wanted - present)
    if missing:
        raise ValueError(f"split_by_dialogue: validation dialogue(s) {missing} have no critic examples")
    train = [e for e in examples if e.dialogue_id not in wanted]
    val = [e for e in examples if e.dialogue_id in wanted]
    return train, val


@dataclass
class CriticBatch:
    """One padded batch. Not frozen: Lightning moves batches to the device by rebuilding dataclasses field by
    field, which it refuses for frozen ones."""

    input_ids: torch.Tensor  # [B, L] int64, right-padded
    attention_mask: torch.Tensor  # [B, L] int64, 1 = token
    u: torch.Tensor  # [B] float32
    u_rr: torch.Tensor  # [B] float32 in {0, 1}
    index: torch.Tensor  # [B] int64, positions in the split's example list


@dataclass(frozen=True)
class TokenizedSplit:
    """A split's examples with their token ids (tokenized once) and targets as tensors."""

    examples: tuple[CriticExample, ...]
    input_ids: tuple[torch.Tensor, ...]  # N tensors [L_i] int64
    u: torch.Tensor  # [N] float32
    u_rr: torch.Tensor  # [N] float32

    def __len__(self) -> int:
        return len(self.examples)


class PadCollate:
    """Indices → :class:`CriticBatch` by padding the stored ids. Never calls the tokenizer."""

    def __init__(self, split: TokenizedSplit, pad_id: int):
        self.split = split
        self.pad_id = pad_id

    def __call__(self, indices: list[int]) -> CriticBatch:
        idx = torch.tensor(indices, dtype=torch.long)  # [B]
        input_ids, mask = pad_right([self.split.input_ids[i] for i in indices], self.pad_id)
        return CriticBatch(
            input_ids=input_ids,
            attention_mask=mask,
            u=self.split.u[idx],
            u_rr=self.split.u_rr[idx],
            index=idx,
        )


class EpochShuffleSampler(Sampler[int]):
    """A permutation of ``range(n)`` fixed by ``(seed, epoch)``. With ``repeats`` ([n] ints >= 1), index i
    appears ``repeats[i]`` times in each epoch's order.

    The order of epoch ``e`` is the permutation drawn by ``numpy.random.default_rng([seed, e])`` of the
    example indices (each as often as it is repeated). Lightning calls ``set_epoch`` before each epoch; when
    nothing calls it (a plain loop, or a distributed wrapper around the sampler), each new pass over the
    sampler advances the epoch by one. Same seed → same batches, epoch by epoch.
    """

    def __init__(self, n: int, seed: int, repeats: Sequence[int] | None = None):
        if repeats is not None and (len(repeats) != n or min(repeats, default=1) < 1):
            raise ValueError(f"EpochShuffleSampler: repeats must be {n} ints >= 1, got {list(repeats)[:8]}...")
        self.n = n
        self.seed = seed
        self.epoch = 0
        self.pool = np.arange(n) if repeats is None else np.repeat(np.arange(n), repeats)  # [Σ repeats]

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.pool)
        self.epoch += 1
        return iter(order.tolist())

    def __len__(self) -> int:
        return len(self.pool)


class _Indices(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


class CriticDataModule(LightningDataModule):
    """Train/val critic examples → padded batches. ``val`` may be empty (then no validation loader).

    - **Split by dialogue.** :func:`split_by_dialogue` sends whole dialogues to validation, so no dialogue's
      operations sit on both sides; this module refuses a train/val pair that shares a dialogue.
    - **Tokenize once.** ``setup`` tokenizes every train and val text in a single tokenizer call and keeps the
      ids as tensors; the collate only pads (right padding, dynamic width per batch). Over-long texts are cut
      to ``max_length`` (from the left by default, keeping the operation at the end of the rendering) and
      counted in ``n_truncated``, with a warning.
    - **Rare misses repeated.** With ``miss_repeats = r > 1`` every training example of tier ``miss`` (the
      Noops that missed a needed write: the teacher's own and the counterfactual Noop of each load-bearing
      write) is drawn r times per epoch; every other example once. Validation is never repeated.
    - **Deterministic shuffling** of the training order (:class:`EpochShuffleSampler`). Validation is in the
      given order.
    """

    def __init__(
        self,
        train: Sequence[CriticExample],
        val: Sequence[CriticExample],
        tokenizer: PreTrainedTokenizerBase,
        max_length: int,
        batch_size: int,
        seed: int,
        truncation_side: str = "left",
        num_workers: int = 0,
        miss_repeats: int = 1,
    ):
        super().__init__()
        if miss_repeats < 1:
            raise ValueError(f"CriticDataModule: miss_repeats must be >= 1, got {miss_repeats}")
        if not train:
            raise ValueError("CriticDataModule: no training examples")
        if batch_size < 1:
            raise ValueError(f"CriticDataModule: batch_size must be >= 1, got {batch_size}")
        if tokenizer.pad_token_id is None:
            raise ValueError(
                "CriticDataModule: the tokenizer has no pad token (build it with build_backbone)"
            )
        shared = sorted({e.dialogue_id for e in train} & {e.dialogue_id for e in val})
        if shared:
            raise ValueError(f"CriticDataModule: dialogue(s) {shared} appear in both train and val")
        self.train_examples = tuple(train)
        self.val_examples = tuple(val)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self.seed = seed
        self.truncation_side = truncation_side
        self.num_workers = num_workers
        self.miss_repeats = miss_repeats
        self.train_split: TokenizedSplit | None = None
        self.val_split: TokenizedSplit | None = None
        self.n_truncated = 0

    def setup(self, stage: str | None = None) -> None:
        if self.train_split is not None:
            return
        everything = self.train_examples + self.val_examples
        enc = encode_texts(
            self.tokenizer, [e.text for e in everything], self.max_length, self.truncation_side
        )
        self.n_truncated = enc.n_truncated
        if enc.n_truncated:
            warnings.warn(
                f"CriticDataModule: {enc.n_truncated} of {len(everything)} texts were longer than "
                f"max_length={self.max_length} and cut from the {self.truncation_side}",
                stacklevel=2,
            )
        n_train = len(self.train_examples)
        self.train_split = _split(self.train_examples, enc.ids[:n_train])
        self.val_split = _split(self.val_examples, enc.ids[n_train:])

    def train_dataloader(self) -> DataLoader:
        split = self._ready(self.train_split)
        return DataLoader(
            _Indices(len(split)),
            batch_size=self.batch_size,
            sampler=EpochShuffleSampler(len(split), self.seed, self.train_repeats()),
            collate_fn=PadCollate(split, self.tokenizer.pad_token_id),
            num_workers=self.num_workers,
        )

    def train_repeats(self) -> list[int]:
        """How often each training example is drawn per epoch (``miss_repeats`` for tier ``miss``, else 1)."""
        return [self.miss_repeats if e.tier == "miss" else 1 for e in self.train_examples]

    def val_dataloader(self) -> DataLoader | list:
        split = self._ready(self.val_split)
        if len(split) == 0:
            return []
        return DataLoader(
            _Indices(len(split)),
            batch_size=self.batch_size,
            shuffle=False,
            collate_fn=PadCollate(split, self.tokenizer.pad_token_id),
            num_workers=self.num_workers,
        )

    @staticmethod
    def _ready(split: TokenizedSplit | None) -> TokenizedSplit:
        if split is None:
            raise RuntimeError("CriticDataModule: call setup() before asking for a dataloader")
        return split


def _split(examples: tuple[CriticExample, ...], ids: tuple[torch.Tensor, ...]) -> TokenizedSplit:
    return TokenizedSplit(
        examples=examples,
        input_ids=ids,
        u=torch.tensor([e.u for e in examples], dtype=torch.float32),
        u_rr=torch.tensor([float(e.u_rr) for e in examples], dtype=torch.float32),
    )
