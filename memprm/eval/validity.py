"""The critic's pre-specified validity checks (paper §4.4), as pure functions over already-computed scores.

Every check is oriented so that higher is better except the false-positive rate:

* ranking: Spearman ρ between the critic's scores and the tier targets of the same examples;
* miss AUC: the AUC that the critic ranks *correct* Noops above *missed* Noops;
* mis-attach AUC: the AUC that the teacher's merges score above forced (wrong) merges;
* adversarial false-positive rate: the share of well-formed but useless writes scored strictly above the
  median score of the real writes (lower is better);
* deletion causality: the accuracy drop, in points, after deleting the k top-scored entries vs k random vs the
  k bottom-scored ones; valid when top > random > bottom.

The paper's sixth check (cross-expert accuracy, 89%) needs a second expert and is not computed here.
Pass criteria: :class:`ValidityThresholds`; the verdict: :attr:`ValidityReport.passed`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from memprm.eval.metrics import (
    DeletionCausality,
    EvalInputError,
    Metric,
    as_scores,
    binary_auc,
    deletion_causality,
    spearman,
)

Scores = Sequence[float] | np.ndarray
__all__ = [  # deletion causality lives in metrics.py and is re-exported here with the other checks
    "PAPER_DELETION",
    "DeletionCausality",
    "ValidityReport",
    "ValidityThresholds",
    "adversarial_fp_rate",
    "compute_validity",
    "deletion_causality",
    "misattach_auc",
    "miss_auc",
    "ranking_spearman",
]


def ranking_spearman(scores: Scores, tier_targets: Scores) -> Metric:
    """Spearman ρ (average ranks) between critic scores [n] and the tier targets [n] of the same examples."""
    return spearman(scores, tier_targets)


def miss_auc(scores_missed_noops: Scores, scores_correct_noops: Scores) -> Metric:
    """AUC that correct Noops score above missed Noops (1 = perfect, 0.5 = chance, ties count ½).

    Missed Noops are the counterfactual ``miss`` Noops of load-bearing writes: a Noop's score is its utility,
    so a Noop where a write was needed must score low.
    """
    return binary_auc(scores_correct_noops, scores_missed_noops)


def misattach_auc(scores_forced_merges: Scores, scores_teacher_merges: Scores) -> Metric:
    """AUC that the teacher's merges score above forced (wrong) merges (1 = perfect, 0.5 = chance)."""
    return binary_auc(scores_teacher_merges, scores_forced_merges)


def adversarial_fp_rate(scores_adversarial_writes: Scores, scores_real_writes: Scores) -> Metric:
    """Share of adversarial writes scored strictly above the median of real writes; NaN if a group is empty."""
    adv = as_scores(scores_adversarial_writes, "adversarial_fp_rate(scores_adversarial_writes)")
    real = as_scores(scores_real_writes, "adversarial_fp_rate(scores_real_writes)")
    sizes = (adv.shape[0], real.shape[0])
    if not adv.size or not real.size:
        empty = "adversarial" if not adv.size else "real"
        return Metric(math.nan, sizes, f"false-positive rate undefined: no {empty} writes")
    return Metric(float(np.mean(adv > np.median(real))), sizes)


@dataclass(frozen=True)
class ValidityThresholds:
    """Pass criteria; defaults are "better than chance". Bounds are strict (ρ > min, fp < max).

    The defaults: ρ > 0, AUCs > 0.5, fp < 0.5 and a strict top > random > bottom order.
    """

    min_spearman: float = 0.0
    min_miss_auc: float = 0.5
    min_misattach_auc: float = 0.5
    max_adversarial_fp: float = 0.5
    #: deletion passes when top − random > gap and random − bottom > gap (points).
    min_deletion_gap_points: float = 0.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not math.isfinite(value):
                raise EvalInputError(f"ValidityThresholds.{name} must be finite, got {value!r}")


@dataclass(frozen=True)
class _Check:
    name: str
    label: str
    paper: float
    higher_better: bool
    threshold: str  # the ValidityThresholds field


_CHECKS = (
    _Check("spearman", "ranking Spearman vs tier targets", 0.639, True, "min_spearman"),
    _Check("miss_auc", "miss AUC (correct > missed Noops)", 0.951, True, "min_miss_auc"),
    _Check("misattach_auc", "mis-attach AUC (teacher > forced merges)", 0.985, True, "min_misattach_auc"),
    _Check("adversarial_fp", "adversarial false-positive rate", 0.032, False, "max_adversarial_fp"),
)
#: the paper's deletion causality on D5, in points: top, random, bottom.
PAPER_DELETION = (9.6, 2.1, 0.8)


@dataclass(frozen=True)
class ValidityReport:
    """All checks of one audit (None = not run), the thresholds they are judged against and a label.

    An undefined (NaN) check fails; a check that was not run is listed but does not enter :attr:`passed`.
    """

    spearman: Metric | None = None
    miss_auc: Metric | None = None
    misattach_auc: Metric | None = None
    adversarial_fp: Metric | None = None
    deletion: DeletionCausality | None = None
    thresholds: ValidityThresholds = field(default_factory=ValidityThresholds)
    label: str = ""

    def check_passed(self, name: str) -> bool | None:
        """Whether check ``name`` (a field name) passes; None when it was not run, False when it is NaN."""
        if name == "deletion":
            d = self.deletion
            return None if d is None else d.ordered(self.thresholds.min_deletion_gap_points)
        spec = next(c for c in _CHECKS if c.name == name)
        m: Metric | None = getattr(self, name)
        if m is None:
            return None
        bound = getattr(self.thresholds, spec.threshold)
        return m.defined and (m.value > bound if spec.higher_better else m.value < bound)

    @property
    def passed(self) -> bool:
        """True when at least one check was run and every check that was run passes."""
        results = [self.check_passed(n) for n in (*[c.name for c in _CHECKS], "deletion")]
        ran = [r for r in results if r is not None]
        return bool(ran) and all(ran)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: NaN values become None with their reason kept; checks not run have ``ran: false``."""
        checks: dict[str, object] = {}
        for c in _CHECKS:
            m: Metric | None = getattr(self, c.name)
            checks[c.name] = {
                "ran": m is not None,
                **({} if m is None else m.to_dict()),
                "paper": c.paper,
                "threshold": getattr(self.thresholds, c.threshold),
                "higher_is_better": c.higher_better,
                "passed": self.check_passed(c.name),
            }
        checks["deletion"] = {
            "ran": self.deletion is not None,
            **({} if self.deletion is None else asdict(self.deletion)),
            "paper": dict(zip(("top_drop", "random_drop", "bottom_drop"), PAPER_DELETION, strict=True)),
            "threshold": self.thresholds.min_deletion_gap_points,
            "passed": self.check_passed("deletion"),
        }
        return {"label": self.label, "passed": self.passed, "checks": checks}

    def to_markdown(self) -> str:
        """A table: check | ours | paper | threshold | pass (not-run checks say so, NaN shows its reason)."""
        mark = {True: "yes", False: "**no**", None: "not run"}
        rows = ["| check | ours | paper | threshold | pass |", "|---|---|---|---|---|"]
        for c in _CHECKS:
            m: Metric | None = getattr(self, c.name)
            ours = "—" if m is None else (f"{m.value:.3f}" if m.defined else f"NaN ({m.reason})")
            bound = f"{'>' if c.higher_better else '<'} {getattr(self.thresholds, c.threshold):g}"
            rows.append(f"| {c.label} | {ours} | {c.paper:g} | {bound} | {mark[self.check_passed(c.name)]} |")
        d, gap = self.deletion, self.thresholds.min_deletion_gap_points
        ours = "—" if d is None else f"{d.top_drop:.1f} / {d.random_drop:.1f} / {d.bottom_drop:.1f} (k={d.k})"
        paper = " / ".join(f"{v:g}" for v in PAPER_DELETION)
        rows.append(
            f"| deletion causality, points (top / random / bottom) | {ours} | {paper} | "
            f"gaps > {gap:g} | {mark[self.check_passed('deletion')]} |"
        )
        title = f"# Critic validity{f': {self.label}' if self.label else ''}"
        return "\n".join([title, "", f"Overall: {'PASS' if self.passed else 'FAIL'}", "", *rows, ""])

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``report.json`` and ``report.md`` into ``directory`` (created if needed); return both paths."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        js, md = out / "report.json", out / "report.md"
        js.write_text(json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        md.write_text(self.to_markdown(), encoding="utf-8")
        return js, md

    def worse_than(self, other: ValidityReport, tolerance: float) -> bool:
        """True when any check run in both reports is worse here by more than ``tolerance``.

        ``tolerance`` is in each check's own units ([0, 1] for ρ, AUCs and fp); deletion causality is compared
        on top_drop − random_drop converted to an accuracy fraction (points / 100), so one tolerance serves all.
        A check that is NaN here but defined in ``other`` counts as worse; NaN in ``other`` is not compared.
        """
        if not (math.isfinite(tolerance) and tolerance >= 0.0):
            raise EvalInputError(
                f"ValidityReport.worse_than(tolerance): must be finite and >= 0, got {tolerance}"
            )
        pairs: list[tuple[float, float, bool]] = []  # (ours, theirs, higher_is_better)
        for c in _CHECKS:
            a, b = getattr(self, c.name), getattr(other, c.name)
            if a is not None and b is not None:
                pairs.append((a.value, b.value, c.higher_better))
        if self.deletion is not None and other.deletion is not None:
            pairs.append((self.deletion.margin() / 100.0, other.deletion.margin() / 100.0, True))
        for ours, theirs, higher in pairs:
            if math.isnan(theirs):
                continue
            if math.isnan(ours) or (ours < theirs - tolerance if higher else ours > theirs + tolerance):
                return True
        return False


def compute_validity(
    *,
    ranking: tuple[Scores, Scores] | None = None,
    noops: tuple[Scores, Scores] | None = None,
    merges: tuple[Scores, Scores] | None = None,
    writes: tuple[Scores, Scores] | None = None,
    deletion: DeletionCausality | None = None,
    thresholds: ValidityThresholds | None = None,
    label: str = "",
) -> ValidityReport:
    """Run every check whose group is given; the pairs are in the check functions' argument order:

    ``ranking=(scores, tier_targets)``, ``noops=(missed, correct)``, ``merges=(forced, teacher)``,
    ``writes=(adversarial, real)``; ``deletion`` is computed beforehand by :func:`deletion_causality`.
    """
    return ValidityReport(
        spearman=None if ranking is None else ranking_spearman(*ranking),
        miss_auc=None if noops is None else miss_auc(*noops),
        misattach_auc=None if merges is None else misattach_auc(*merges),
        adversarial_fp=None if writes is None else adversarial_fp_rate(*writes),
        deletion=deletion,
        thresholds=ValidityThresholds() if thresholds is None else thresholds,
        label=label,
    )


@dataclass(frozen=True)
class ValidityConfig:
    thresholds: ValidityThresholds = field(default_factory=ValidityThresholds)
    #: deletion causality removes this fraction of the dev banks' managed entries (at least one).
    deletion_frac: float = 0.25

    def __post_init__(self) -> None:
        if not 0 < self.deletion_frac <= 1:
            raise ValueError(f"validity.deletion_frac must be in (0, 1], got {self.deletion_frac}")
