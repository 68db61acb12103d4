"""Run the ladder's arms × seeds (sequentially), then write its results files.

    python experiments/run_ladder.py --config configs/ladder.yaml --seeds 0 1 2 [key=value ...]
    python experiments/run_ladder.py --config configs/ladder.yaml --tabulate-only   # no run; cached baselines

A run's config: ``configs/arms/<arm>.yaml``, then ``--config`` (the ladder's budget: it wins over the arm
file), then the overrides; its folder ``<output_dir>/<arm>-seed<seed>``. A seed's first arm tests the
reference managers (teacher, untrained, SFT), its first arm with a critic stage computes stage one for the
others (or ``--stage-one`` gives it); ``--ablations`` run on the first seed only. Rerun after a kill, it skips finished
runs (:func:`memprm.fit.finished`) and resumes the interrupted one. Retrieval-only (configs/retrieval_only.yaml)
and the Mem0-style manager (top-10, top-200) need no training: evaluated once on the test split, cached in
``<results>/baselines.json``. Writes ``<results>/ladder.md``, ``.json``, ``.png`` (default
``experiments/results``; tables: :mod:`memprm.inspect.ladder_report`, rendered by :mod:`memprm.inspect.ladder_render`), the .md / .png also into
``<output_dir>/ladder/`` for ``memprm inspect``. Runs without results are listed, never silently dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memprm.config import ConfigError, MemprmConfig, build, to_dict  # noqa: E402
from memprm.configtools import load_yaml  # noqa: E402
from memprm.data.source import load_source  # noqa: E402
from memprm.env.evaluate import evaluate_manager  # noqa: E402
from memprm.env.managers import noop_manager  # noqa: E402
from memprm.env.mem0 import Mem0Config, evaluate_mem0  # noqa: E402
from memprm.env.stack import build_stack  # noqa: E402
from memprm.fit import finished, fit  # noqa: E402
from memprm.inspect import ladder_render as render  # noqa: E402
from memprm.inspect import ladder_report as report  # noqa: E402
from memprm.stages.reader_calibration import calibrate_reader  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARMS = ROOT / "configs" / "arms"
RETRIEVAL_ONLY = ROOT / "configs" / "retrieval_only.yaml"
#: keys an overlay must leave to the arm files (they name and shape each arm's run).
ARM_KEYS = ("arm", "fit.stages", "fit.run_name")


def merged_config(files: Sequence[Path], overrides: Sequence[str] = ()) -> MemprmConfig:
    """Defaults ← each YAML file in order ← dotted overrides, as a validated config."""
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise ConfigError(f"overrides must look like key.sub=value, got {bad}")
    parts = [load_yaml(f) for f in files] + [OmegaConf.from_dotlist(list(overrides))]
    raw = OmegaConf.to_container(OmegaConf.merge(OmegaConf.create({}), *parts), resolve=True)
    return build(MemprmConfig, raw or {}, where=" + ".join(map(str, files)))


def check_overlay(path: Path) -> None:
    overlay = load_yaml(path)
    bad = [k for k in ARM_KEYS if OmegaConf.select(overlay, k) is not None]
    if bad:
        raise ConfigError(f"{path}: a ladder overlay must not set {bad} (each arm's file does)")


#: the config sections a baseline's evaluation depends on (its cache key; the GRPO recipe is not among them).
BASELINE_KEYS = ("seed", "data", "embedder", "retriever", "reader", "judge", "notes", "llm", "env", "teacher")


def baselines(
    cfg: MemprmConfig, retrieval: MemprmConfig, cache: Path, compute: bool
) -> dict[str, dict] | None:
    """Retrieval-only (``retrieval``'s retriever) and Mem0 (top-10, top-200; ``cfg``) on the test split, as
    ``EvalResult`` dicts; from ``cache`` when written under the same settings, else evaluated (when
    ``compute``) and cached."""
    mem0 = Mem0Config()
    text = json.dumps([[to_dict(c)[k] for k in BASELINE_KEYS] for c in (cfg, retrieval)] + [repr(mem0)])
    key = hashlib.sha256(text.encode()).hexdigest()
    if cache.is_file() and json.loads(cache.read_text()).get("key") == key:
        return json.loads(cache.read_text())["rows"]
    if not compute:
        return None
    splits = load_source(cfg.data)
    test = list(splits["test"])
    stack = build_stack(retrieval)
    calibrate_reader(retrieval, stack, splits)  # verbatim-only reads: calibrated on what it reads
    rows = {"retrieval-only": asdict(evaluate_manager(stack.env, test, noop_manager, "test: retrieval-only"))}
    stack = build_stack(cfg)
    calibrate_reader(cfg, stack, splits)
    rows |= {f"Mem0 (top-{k})": asdict(r) for k, r in evaluate_mem0(stack.env, test, mem0).items()}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "mem0": repr(mem0), "rows": rows}, indent=1) + "\n")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="the ladder overlay, e.g. configs/ladder.yaml")
    ap.add_argument("--arms", nargs="+", default=["outcome_only", "observational", "ours"])
    ap.add_argument("--ablations", nargs="*", default=[], help="arms run on the first seed only")
    ap.add_argument(
        "--ours", default=None, help="the arm compared with every other row (default: last of --arms)"
    )
    ap.add_argument("--reference", default="outcome_only",
                    help="the arm whose final dev accuracy the others race to")  # fmt: skip
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--output-dir", default=None, help="run folders (default: the config's output_dir)")
    ap.add_argument("--results", default=str(ROOT / "experiments" / "results"))
    ap.add_argument("--stage-one", default="",
                    help="reuse existing stage-one run folders, e.g. 'runs/stage1-seed{seed}' (default: the "
                         "first arm of each seed computes it)")  # fmt: skip
    ap.add_argument(
        "--tabulate-only",
        action="store_true",
        help="run nothing: tabulate the run folders (and cached baselines) already there",
    )
    ap.add_argument("--no-baselines", action="store_true", help="leave out retrieval-only and Mem0")
    ap.add_argument("overrides", nargs="*",
                    help="dotted overrides of every run (before --arms / --seeds, which take every value after them)")  # fmt: skip
    args = ap.parse_args(argv)
    overlay = [Path(args.config)] if args.config else []
    for path in overlay:
        check_overlay(path)
    unknown = [a for a in [*args.arms, *args.ablations] if not (ARMS / f"{a}.yaml").is_file()]
    if unknown:
        ap.error(f"no arm config for {unknown} in {ARMS}")
    base = merged_config(overlay, [f"seed={args.seeds[0]}", *args.overrides])
    retrieval = merged_config([*overlay, RETRIEVAL_ONLY], [f"seed={args.seeds[0]}", *args.overrides])
    out, results = Path(args.output_dir or base.output_dir), Path(args.results)
    arms = list(dict.fromkeys([*args.arms, *args.ablations]))
    ladder = report.Ladder(
        arms, args.ours or args.arms[-1], args.reference if args.reference in arms else None
    )
    if not args.no_baselines:
        rows = baselines(base, retrieval, results / "baselines.json", not args.tabulate_only)
        if rows is None:
            ladder.missing.append(
                f"baselines (retrieval-only, Mem0): no {results / 'baselines.json'} for this config"
            )
        ladder.baselines = {k: report.summary(v) for k, v in (rows or {}).items()}
    for k, seed in enumerate(args.seeds):
        stage_one = args.stage_one.format(seed=seed)
        for i, arm in enumerate([*args.arms, *(args.ablations if k == 0 else [])]):
            ov = [f"seed={seed}", f"output_dir={out}", f"rollout_data.seed={seed}", *args.overrides]
            if stage_one:
                ov.append(f"fit.stage_one_dir={stage_one}")
            if i > 0:  # teacher, untrained and SFT are the same for every arm of a seed
                ov.append("fit.test_baselines=false")
            cfg = merged_config([ARMS / f"{arm}.yaml", *overlay], ov)
            run_dir = out / cfg.run_name
            if args.tabulate_only:
                if not (run_dir / "test_results.json").is_file():
                    ladder.missing.append(str(run_dir))
                    continue
            elif finished(cfg):  # every stage's marker holds this config's hash: nothing to redo
                print(f"run_ladder: {run_dir} finished earlier with this config; skipped")
            else:  # a killed run resumes: finished stages are skipped, GRPO continues from its checkpoint
                run_dir = fit(cfg).run_dir
            if not stage_one and "critic" in cfg.fit.stages:
                stage_one = str(run_dir)
            per_step = report.rollouts_per_step(cfg) if "grpo" in cfg.fit.stages else 0.0
            final = report.final_manager(cfg.arm, cfg.fit.stages, cfg.sft.steps)
            report.collect(ladder, run_dir, arm, seed, final, per_step)
    write(ladder, args.seeds, results, out / "ladder")
    return 0


def write(ladder: report.Ladder, seeds: Sequence[int], results: Path, mirror: Path) -> None:
    """``ladder.md`` / ``.json`` / ``.png`` into ``results``; the .md and .png also into ``mirror``."""
    tables = report.tabulate(ladder)
    results.mkdir(parents=True, exist_ok=True)
    (results / "ladder.json").write_text(json.dumps({"seeds": list(seeds), **tables}, indent=1) + "\n")
    (results / "ladder.md").write_text(render.markdown(tables, seeds))
    render.plot(tables, results / "ladder.png")
    mirror.mkdir(parents=True, exist_ok=True)
    for name in ("ladder.md", "ladder.png"):
        shutil.copyfile(results / name, mirror / name)
    if ladder.missing:
        print(f"run_ladder: {len(ladder.missing)} missing (listed in ladder.md): {', '.join(ladder.missing)}")
    print((results / "ladder.md").read_text())
    print(f"results: {results}/ladder.{{md,json,png}}")


if __name__ == "__main__":
    sys.exit(main())
