"""``kill -9`` during GRPO, then the same command again: it resumes from the last checkpoint and ends with
the same policy, dev history and TensorBoard stream as a run that was never interrupted (CPU, same seed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
#: the tiniest GRPO-only run: 3 one-group batches of G = 2, one optimizer step each, a checkpoint per step.
TINY_GRPO = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=6",
    "embedder.kind=hashing", "embedder.dim=64", "fit.stages=[grpo]", "reader.calibrate_abstention=false",
    "rollout.group_size=2", "grpo.ppo_epochs=1", "grpo.max_steps=3", "grpo.checkpoint_every=1",
    "dev_selection.every_n_steps=2", "dev_selection.at_start=false", "trainer.progress_bar=false",
]  # fmt: skip


def _tiny_encoder(folder: Path) -> Path:
    """A random 2-layer BERT with MiniLM's tokenizer, saved where ``policy.model`` can load it offline."""
    from helpers.tiny_models import minilm_tokenizer, tiny_bert_config
    from transformers import BertModel

    torch.manual_seed(0)
    BertModel(tiny_bert_config(minilm_tokenizer())).save_pretrained(folder)
    minilm_tokenizer().save_pretrained(folder)
    return folder


def _events(folder: Path) -> list[tuple[str, int, object]]:
    """(tag, step, value) of every scalar in every event file of ``folder``, as written (no TensorBoard
    de-duplication applied)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out = []
    for f in sorted(folder.glob("events.out.tfevents.*")):
        for e in EventFileLoader(str(f)).Load():
            for v in e.summary.value:
                value = v.simple_value if v.HasField("simple_value") else list(v.tensor.float_val)
                out.append((v.tag, int(e.step), value))
    return out


@pytest.mark.slow
def test_kill_9_during_grpo_resumes_and_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    t0 = time.monotonic()
    overrides = [*TINY_GRPO, f"policy.model={_tiny_encoder(tmp_path / 'encoder')}", f"output_dir={tmp_path}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}  # same threads: same float sums

    def command(name: str) -> list[str]:
        return [sys.executable, "-m", "memprm", "fit", *overrides, f"fit.run_name={name}"]

    quiet = {"env": env, "cwd": ROOT, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}
    reference = subprocess.Popen(command("reference"), **quiet)  # runs beside the killed one
    victim = subprocess.Popen(command("killed"), **quiet)
    run = tmp_path / "killed"
    last = run / "grpo" / "checkpoints" / "last.ckpt"
    while not last.exists() and victim.poll() is None and time.monotonic() - t0 < 600:
        time.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL, victim.stderr.read().decode()[-3000:]
    assert not (run / "stages" / "grpo.json").exists()  # killed before GRPO finished

    again = subprocess.run(command("killed"), env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert reference.wait(timeout=600) == 0, reference.stderr.read().decode()[-3000:]
    assert "resuming from" in again.stderr and "resumed at optimizer step" in again.stderr
    starts = json.loads((run / "grpo" / "starts.json").read_text())
    assert starts[0] == 0 and len(starts) == 2 and starts[1] > 0  # the rerun started past step 0

    ref = tmp_path / "reference"
    assert json.loads((run / "grpo" / "result.json").read_text())["steps"] == json.loads(
        (ref / "grpo" / "result.json").read_text())["steps"]  # fmt: skip
    # the same policy, bit for bit: model, optimizer, loops, callbacks, rollout data (banks, generators, the
    # batch fetched ahead) and the global generators all come back from the checkpoint
    mine, theirs = torch.load(run / "policy_grpo.pt"), torch.load(ref / "policy_grpo.pt")
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    history = [json.loads((r / "grpo" / "dev_selection.json").read_text())["history"] for r in (run, ref)]
    assert history[0] == history[1]
    # one event stream: every (tag, step) once, and the same points as the uninterrupted run's
    events, ref_events = _events(run / "tb" / "grpo"), _events(ref / "tb" / "grpo")
    twice = [k for k, n in Counter((tag, step) for tag, step, _ in events).items() if n > 1]
    assert twice == []
    assert sorted(events) == sorted(ref_events)
    # finished now: the ladder would skip it; another config would not
    from memprm.config import load_config
    from memprm.fit import finished

    assert finished(load_config(None, [*overrides, "fit.run_name=killed"]))
    assert not finished(load_config(None, [*overrides, "fit.run_name=killed", "grpo.lr=0.5"]))
    print(f"kill -9 test: {time.monotonic() - t0:.0f} s, resumed at step {starts[1]}")
