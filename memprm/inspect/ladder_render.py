"""The ladder's results files from :func:`memprm.inspect.ladder_report.tabulate`'s report: ``ladder.md``
(:func:`markdown`) and ``ladder.png`` (:func:`plot`). Reads nothing but the report; runs no model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memprm.inspect.ladder_report import mean_band


def _pm(ms: Mapping[str, Any]) -> str:
    if ms["mean"] is None:
        return "n/a"
    return f"{ms['mean']:.1f} ± " + ("–" if ms["std"] is None else f"{ms['std']:.1f}")


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "n/a" if v is None else format(v, fmt)


def markdown(report: Mapping[str, Any], seeds: Sequence[int] = ()) -> str:
    """The results file ``ladder.md`` from :func:`tabulate`'s report."""
    rows, ours = report["rows"], report["ours"]
    cats = sorted({c for r in rows.values() for c in r["by_category"]})
    n_q = rows[ours]["n_questions"] if ours in rows else None
    out = [f"# Ladder: arms {', '.join(report['arms']) or '(none finished)'}; ours = {ours}; seeds "
           f"{', '.join(map(str, seeds))}; {n_q or '?'} test questions", ""]  # fmt: skip
    missing = report["missing"]
    out += [f"Missing runs (not tabulated): {', '.join(missing)}" if missing else "Missing runs: none", ""]
    out += ["## Test accuracy (%, mean ± sample std over seeds)", "",
            "| row | kind | seeds | accuracy | " + " | ".join(cats)
            + " | context tokens | entries | versions/entry | hit rate | evidence kept (%) |",
            "|" + "---|" * (9 + len(cats))]  # fmt: skip
    for name, r in rows.items():
        cells = [name, r["kind"], ",".join(map(str, r["seeds"])) or "–", _pm(r["accuracy"])]
        cells += [_pm(r["by_category"][c]) if c in r["by_category"] else "–" for c in cats]
        cells += [
            _num(r["tokens"], ".0f"),
            _num(r["entries"]),
            _num(r["versions"], ".2f"),
            _num(r["hit_rate"], ".2f"),
            _num(None if r["evidence_kept"] is None else 100 * r["evidence_kept"]),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", f"## {ours} vs each row over test dialogues (one-sided: {ours} > row; each dialogue's accuracy "
            "averaged over the seeds both rows have)", "",
            "| vs | seeds | dialogues | mean Δ (points) | wins / untied | sign test p | block permutation p |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, c in report["comparisons"].items():
        if not c["dialogues"]:
            out.append(f"| {name} | – | 0 | {c.get('note', 'no common dialogue')} | | | |")
            continue
        out.append(f"| {name} | {','.join(map(str, c['seeds']))} | {c['dialogues']} | {c['mean_difference']:+.1f} | "
                   f"{c['wins']} / {c['untied']} | {c['sign_p']:.3f} | {c['permutation_p']:.3f} |")  # fmt: skip
    per = report["per_dialogue"]
    names = list(per)
    dialogues = sorted({d for v in per.values() for d in v})
    out += ["", "## Per test dialogue (accuracy %, mean over seeds)", "",
            "| dialogue | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]  # fmt: skip
    for d in dialogues:
        out.append(
            f"| {d} | " + " | ".join(_num(100 * per[n][d] if d in per[n] else None) for n in names) + " |"
        )
    rc = report["race"]
    targets = ", ".join(f"seed {s}: {t:.1f}" for s, t in rc["targets"].items()) or "none"
    out += ["", f"## Rollouts to reach {rc['reference']}'s final dev accuracy (same seed; targets {targets})", "",
            "| arm | rollouts per seed | mean over seeds reaching | seeds reaching | rollouts at the last dev evaluation | "
            "rollouts to 95% of own best dev |", "|---|---|---|---|---|---|"]  # fmt: skip
    for arm, a in rc["arms"].items():
        per_seed = ", ".join(f"{s}: {_num(r, '.0f')}" for s, r in a["per_seed"].items()) or "–"
        out.append(f"| {arm} | {per_seed} | {_num(a['mean'], '.0f')} | {a['reached']} / {a['runs']} | "
                   f"{_num(a['last_eval'], '.0f')} | {_num(a['plateau'], '.0f')} |")  # fmt: skip
    out += ["", "## GRPO training signal (tb/grpo, per training batch; means over seeds)", "",
            "| arm | shaping share, first quarter of batches | shaping share, last quarter | zero-variance "
            "group share | local groups with identical actions | seeds |", "|---|---|---|---|---|---|"]  # fmt: skip
    for arm, t in report["training"].items():
        out.append(f"| {arm} | {_num(t['shaping_early'], '.3f')} | {_num(t['shaping_late'], '.3f')} | "
                   f"{_num(t['zero_variance'], '.3f')} | {_num(t.get('local_identical'), '.3f')} | "
                   f"{t['seeds']} |")  # fmt: skip
    out += ["", "## Organization of the test banks (paper §4.5; hit rate: share of managed entries some test "
            "question retrieved)", "", "| manager | entries per dialogue | versions per entry | hit rate |",
            "|---|---|---|---|"]  # fmt: skip
    for name, o in report["organization"].items():
        out.append(
            f"| {name} | {_num(o['entries'])} | {_num(o['versions'], '.2f')} | {_num(o['hit_rate'], '.2f')} |"
        )
    return "\n".join(out) + "\n"


def plot(report: Mapping[str, Any], path: Path) -> None:
    """``ladder.png``: dev accuracy vs rollouts per arm (mean over seeds, min–max band), and test accuracy per
    arm (mean ± std over seeds) with the reference managers and baselines as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
    for arm, by_seed in report["curves"].items():
        xs, mean, lo, hi = mean_band([[tuple(p) for p in c] for c in by_seed.values()])
        if xs:
            (line,) = left.plot(
                xs, [100 * y for y in mean], marker="o", ms=3, label=f"{arm} ({len(by_seed)} seeds)"
            )
            left.fill_between(
                xs, [100 * y for y in lo], [100 * y for y in hi], color=line.get_color(), alpha=0.2
            )
    left.set(
        xlabel="rollouts", ylabel="dev-selection accuracy (%)", title="Dev accuracy (mean, min–max band)"
    )
    if left.lines:
        left.legend(fontsize=8)
    rows = report["rows"]
    arms = [a for a in report["arms"] if rows[a]["accuracy"]["mean"] is not None]
    right.bar(arms, [rows[a]["accuracy"]["mean"] for a in arms],
              yerr=[rows[a]["accuracy"]["std"] or 0.0 for a in arms], capsize=4, color="tab:blue")  # fmt: skip
    styles = iter(["--", ":", "-.", (0, (5, 1)), (0, (1, 3)), (0, (3, 1, 1, 1))])
    lines = [
        (n, r["accuracy"]["mean"])
        for n, r in rows.items()
        if r["kind"] != "arm" and r["accuracy"]["mean"] is not None
    ]
    for i, (name, acc) in enumerate(lines):
        right.axhline(acc, ls=next(styles, "--"), color=f"C{(i + 1) % 10}", lw=1.2, label=f"{name} {acc:.1f}")
    right.set(ylabel="test accuracy (%)", title="Test accuracy per arm (mean ± std over seeds)")
    right.tick_params(axis="x", labelrotation=20)
    if lines:
        right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
