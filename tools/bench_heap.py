"""Resident memory over GRPO batches with and without handing freed heap back (``rollout_data.release_memory``).

    python tools/bench_heap.py [--batches 14] [--out runs/bench_heap]

Builds stage one (critic + SFT) once on a tiny synthetic config, then runs the GRPO stage twice for the same
number of batches, each in a fresh process: ``release_memory=false`` (glibc keeps the holes the audit's freed
buffers leave) and ``release_memory=true`` (``malloc_trim`` after each batch). The outcome-only arm with
``grpo.max_steps`` out of reach makes every batch an episode of rollouts + exams + audits, the memory-heavy
part, whatever the rewards. Prints one table: RSS after the first and last batch and the growth per batch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TINY = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8",
    "embedder.kind=hashing", "embedder.dim=128", "sft.steps=20", "rollout.group_size=2",
    "trainer.progress_bar=false",
]  # fmt: skip


def child(out: Path, stage_one: Path, batches: int, release: bool) -> None:
    from lightning import Callback

    from memprm.config import load_config
    from memprm.fit import fit
    from memprm.rollout.heap import resident_mib

    rss: list[float] = []

    class Resident(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            rss.append(resident_mib())

    arm = f"heap-release-{str(release).lower()}"
    cfg = load_config(None, [*TINY, f"output_dir={out}", f"fit.run_name={arm}", f"fit.stage_one_dir={stage_one}",
                             "fit.stages=[sft,grpo]", "arm=outcome_only", "grpo.advantage_mode=outcome",
                             "rollout.shaping=none", "grpo.max_steps=100000", f"grpo.max_batches={batches}",
                             "dev_selection.every_n_steps=100000", f"rollout_data.release_memory={release}"])  # fmt: skip
    fit(cfg, grpo_callbacks=[Resident()])
    (out / f"{arm}.json").write_text(json.dumps(rss))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=14)
    ap.add_argument("--out", type=Path, default=None, help="run folder (default: a temporary one)")
    ap.add_argument("--child", nargs=2, metavar=("STAGE_ONE", "RELEASE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_heap-"))
    if args.child:
        child(out, Path(args.child[0]), args.batches, args.child[1] == "true")
        return 0
    from memprm.config import load_config
    from memprm.fit import fit

    fit(load_config(None, [*TINY, f"output_dir={out}", "fit.run_name=stage1", "fit.stages=[critic,sft]"]))
    rows = []
    for release in (False, True):
        flag = str(release).lower()
        cmd = [sys.executable, __file__, "--batches", str(args.batches), "--out", str(out),
               "--child", str(out / "stage1"), flag]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        rss = json.loads((out / f"heap-release-{flag}.json").read_text())
        if not rss:
            raise RuntimeError(
                f"release_memory={flag}: the GRPO stage ran no batch ({out / f'heap-release-{flag}'})"
            )
        rows.append((flag, len(rss), rss[0], rss[-1], (rss[-1] - rss[0]) / max(len(rss) - 1, 1)))
    print(
        "\n| release_memory | batches | RSS after batch 1 (MiB) | RSS after last (MiB) | growth / batch (MiB) |"
    )
    print("|---|---:|---:|---:|---:|")
    for flag, n, first, last, per in rows:
        print(f"| {flag} | {n} | {first:.0f} | {last:.0f} | {per:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
