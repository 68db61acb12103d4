"""Evaluation of the memory-utility critic: rank statistics and the pre-specified validity checks (§4.4).

numpy and scipy only (no torch, no Lightning); the critic enters only as scores already computed::

    dc = deletion_causality(entry_scores, accuracy_without, base_accuracy, k=10, rng_seed=0)
    report = compute_validity(ranking=(phi, targets), noops=(phi_missed, phi_correct),
                              merges=(phi_forced, phi_teacher), writes=(phi_adversarial, phi_real),
                              deletion=dc, label="LoCoMo D5")
    report.write(out_dir)  # report.json + report.md
"""

from memprm.eval.metrics import (
    BootstrapInterval,
    EvalInputError,
    Metric,
    binary_auc,
    bootstrap_spearman,
    spearman,
)
from memprm.eval.validity import (
    PAPER_DELETION,
    DeletionCausality,
    ValidityReport,
    ValidityThresholds,
    adversarial_fp_rate,
    compute_validity,
    deletion_causality,
    misattach_auc,
    miss_auc,
    ranking_spearman,
)

__all__ = [
    "BootstrapInterval",
    "PAPER_DELETION",
    "DeletionCausality",
    "EvalInputError",
    "Metric",
    "ValidityReport",
    "ValidityThresholds",
    "adversarial_fp_rate",
    "binary_auc",
    "bootstrap_spearman",
    "compute_validity",
    "deletion_causality",
    "misattach_auc",
    "miss_auc",
    "ranking_spearman",
    "spearman",
]
