"""A learned profile tagger: the rule note writer's fallback for profile facts it has no construction for.

Trained on labelled turns of *other* phrasing families (the synthetic train splits' fact annotations: each
profile fact names its key and value), it never sees the sentences it is measured on, so it cannot grade the
generator's own templates (issue 23); it does see the shared value pools, as a note writer with world
knowledge would. 1. *The attribute* (:meth:`ProfileTagger.attribute`): a linear softmax on the embedder's turn
vector over the annotated keys and ``"none"`` (down-weighted by ``none_weight``; :func:`train_softmax`).
2. *Its value* (:meth:`ProfileTagger.value`): among the turn's candidate spans (:func:`candidate_spans`), the
last one within ``margin`` of the best cosine with the key's prototype, the mean vector of its training
values (:func:`last_within_margin`: a change is told old-then-new). Deterministic: zero initialization,
full-batch Adam on the CPU. :class:`TaggedNoteWriter` adds its note where the rules wrote no profile note.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import torch

from memprm.configtools import ConfigError
from memprm.data.records import Dialogue, Turn
from memprm.data.synthetic import SyntheticConfig, generate_synthetic
from memprm.llm.notes import Note, NoteWriter, NoteWriterConfig, profile_note
from memprm.llm.relative_time import find as find_relative
from memprm.llm.rule_notes import ATTRIBUTE_NOUNS, NOT_CONTENT, WORD
from memprm.memory.embedder import Embedder

#: the label of a turn that states no profile fact.
NONE = "none"

log = logging.getLogger("memprm.llm")


@dataclass(frozen=True)
class TaggerExamples:
    """Labelled turns for :meth:`ProfileTagger.fit`."""

    texts: tuple[str, ...]
    labels: tuple[str, ...]  # per text: the attribute key of its (last) profile fact, or NONE
    values: dict[str, tuple[str, ...]]  # key -> the distinct values its facts state, sorted


def tagger_examples(dialogues: Iterable[Dialogue]) -> TaggerExamples:
    """Every turn of ``dialogues`` with its label: the key of the turn's last profile fact
    (:attr:`~memprm.data.records.Fact.is_profile`), else :data:`NONE`; and the values stated per key."""
    texts, labels, values = [], [], {}
    for d in dialogues:
        for s in d.sessions:
            for t in s.turns:
                facts = [f for f in t.facts if f.is_profile]
                texts.append(t.text)
                labels.append(facts[-1].key if facts else NONE)
                for f in facts:
                    values.setdefault(f.key, set()).add(f.value)
    return TaggerExamples(
        tuple(texts), tuple(labels), {k: tuple(sorted(v)) for k, v in sorted(values.items())}
    )


def train_softmax(
    x: torch.Tensor,  # [N, D] features
    y: torch.Tensor,  # [N] class index
    class_weight: torch.Tensor,  # [K] loss weight per class
    steps: int = 500,
    lr: float = 0.05,
    l2: float = 1e-4,
) -> tuple[torch.Tensor, torch.Tensor]:  # W [D, K], b [K]
    """A linear softmax classifier: class-weighted cross-entropy plus ``l2`` ‖W‖², full-batch Adam from zeros
    (deterministic: no random initialization, no minibatches)."""
    n_classes = class_weight.shape[0]
    w = torch.zeros(x.shape[1], n_classes, requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w + b, y, weight=class_weight) + l2 * (w**2).sum()
        loss.backward()
        opt.step()
    return w.detach(), b.detach()


_CLAUSE = re.compile(r"[,;:.!?]")


def candidate_spans(text: str, skip: frozenset[str], nouns: frozenset[str], max_words: int = 3) -> list[str]:
    """Every run of 1..``max_words`` words of ``text`` (as written) inside one clause (no ``,;:.!?`` within)
    whose first and last word are not in ``skip`` (stop and chatter words, lower case) and that holds no word
    of ``nouns`` (attribute nouns: "food" is no food), in reading order."""
    out = []
    for clause in _CLAUSE.split(text):
        words = list(WORD.finditer(clause))
        for i in range(len(words)):
            for j in range(i, min(i + max_words, len(words))):
                low = [m.group().lower() for m in words[i : j + 1]]
                if low[0] in skip or low[-1] in skip or any(w in nouns for w in low):
                    continue
                out.append(clause[words[i].start() : words[j].end()])
    return out


def last_within_margin(scores: np.ndarray, margin: float) -> int:  # scores [C], C >= 1
    """The index of the last score within ``margin`` of the best (ties: the later one)."""
    return int(np.flatnonzero(scores >= scores.max() - margin)[-1])


class ProfileTagger:
    """The trained classifier and value prototypes (module docstring); build with :meth:`fit`."""

    def __init__(
        self,
        embedder: Embedder,
        keys: Sequence[str],  # K labels, NONE among them
        weight: torch.Tensor,  # [D, K]
        bias: torch.Tensor,  # [K]
        prototypes: dict[str, np.ndarray],  # key -> [D], unit length
        skip: frozenset[str],
        nouns: frozenset[str],
    ):
        self.embedder, self.keys, self.weight, self.bias = embedder, tuple(keys), weight, bias
        self.prototypes, self.skip, self.nouns = prototypes, skip, nouns

    @classmethod
    def fit(
        cls,
        embedder: Embedder,
        examples: TaggerExamples,
        none_weight: float,
        skip: frozenset[str] = NOT_CONTENT,
        nouns: frozenset[str] = frozenset(ATTRIBUTE_NOUNS),
    ) -> ProfileTagger:
        """Trains on ``examples``; raises ``ValueError`` when they hold no profile fact (nothing to learn).
        Candidate spans neither start nor end with a word of ``skip`` and hold no word of ``nouns``."""
        keys = sorted(set(examples.labels) | {NONE})
        if keys == [NONE] or not examples.values:
            raise ValueError("the tagger's training turns hold no profile fact with a key and value")
        x = torch.from_numpy(embedder.embed(list(examples.texts)))
        y = torch.tensor([keys.index(label) for label in examples.labels])
        class_weight = torch.ones(len(keys))
        class_weight[keys.index(NONE)] = none_weight
        weight, bias = train_softmax(x, y, class_weight)
        prototypes = {}
        for key, vals in examples.values.items():
            mean = embedder.embed(list(vals)).mean(axis=0)
            prototypes[key] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        return cls(embedder, keys, weight, bias, prototypes, skip, nouns)

    def attribute(self, text: str) -> tuple[str, float]:
        """The most probable label of ``text`` and its probability."""
        logits = torch.from_numpy(self.embedder.embed([text]))[0] @ self.weight + self.bias  # [K]
        p = torch.softmax(logits, dim=-1)
        k = int(p.argmax())
        return self.keys[k], float(p[k])

    def value(self, text: str, key: str, margin: float) -> str | None:
        """The span of ``text`` closest to ``key``'s prototype (module docstring, step 2); None when ``text``
        has no candidate span or ``key`` has no prototype."""
        spans = candidate_spans(text, self.skip, self.nouns)
        if not spans or key not in self.prototypes:
            return None
        scores = self.embedder.embed(spans) @ self.prototypes[key]  # [C]
        return spans[last_within_margin(scores, margin)]


class TaggedNoteWriter:
    """The rule note writer, with the tagger's profile note for turns the rules find no profile fact in.

    A turn keeps the rules' notes. When they hold no profile note and the turn has no relative time expression
    (a dated turn tells an event), the tagger's attribute, if its probability is at least ``threshold``, and
    its value become one more profile note, keyed ``<speaker>/<attribute>`` like the rules' notes. Its keys are
    the annotations' (``language``); where the rules name an attribute otherwise (``learning`` for "I'm
    learning Dutch"), one person's attribute can get two keys, and key merging keeps them apart.
    """

    def __init__(self, rules: NoteWriter, tagger: ProfileTagger, threshold: float, margin: float):
        self.rules, self.tagger, self.threshold, self.margin = rules, tagger, threshold, margin

    def notes(self, turn: Turn, said_on: datetime | None) -> tuple[Note, ...]:
        out = tuple(self.rules.notes(turn, said_on))
        if any(n.layer == "profile" for n in out):
            return out
        if said_on is not None and find_relative(turn.text, said_on) is not None:
            return out
        key, p = self.tagger.attribute(turn.text)
        if key == NONE or p < self.threshold:
            return out
        value = self.tagger.value(turn.text, key, self.margin)
        if value is None:
            return out
        return (*out, profile_note(turn.speaker, key, value, said_on))


_TAGGERS: dict[tuple, ProfileTagger] = {}


def check_tagger_phrasings(cfg: NoteWriterConfig, synthetic: SyntheticConfig) -> None:
    """Raises :class:`~memprm.configtools.ConfigError` (one line) when ``notes.kind=tagged`` would train on
    ``synthetic.phrasing``, the family the run reads (``fit`` checks this before it writes anything)."""
    if cfg.kind == "tagged" and synthetic.phrasing in cfg.tagger_phrasings:
        raise ConfigError(
            f"notes.tagger_phrasings={list(cfg.tagger_phrasings)} includes data.synthetic.phrasing="
            f"{synthetic.phrasing!r}: the tagger would learn the templates it is measured on; train it on other "
            "families"
        )


def build_tagger(cfg: NoteWriterConfig, synthetic: SyntheticConfig, embedder: Embedder) -> ProfileTagger:
    """The tagger trained on the train splits of ``cfg.tagger_phrasings`` (``synthetic`` with the phrasing
    swapped), one per settings per process. Raises :class:`~memprm.configtools.ConfigError` (one line) when
    those families include ``synthetic.phrasing``, the family the run reads."""
    check_tagger_phrasings(cfg, synthetic)
    memo = (
        cfg.tagger_phrasings,
        cfg.tagger_none_weight,
        replace(synthetic, phrasing="standard"),
        id(embedder),
    )
    if memo not in _TAGGERS:
        dialogues = [
            d
            for p in cfg.tagger_phrasings
            for d in generate_synthetic(replace(synthetic, phrasing=p))["train"]
        ]
        examples = tagger_examples(dialogues)
        log.info(
            "profile tagger: training on %d turns (%d with a profile fact) of the %s train splits",
            len(examples.texts), sum(label != NONE for label in examples.labels), "/".join(cfg.tagger_phrasings),
        )  # fmt: skip
        _TAGGERS[memo] = ProfileTagger.fit(embedder, examples, cfg.tagger_none_weight)
    return _TAGGERS[memo]
