"""``kill -9`` during GRPO, then the same command again: it resumes from the last checkpoint and ends with
the same policy, dev history and TensorBoard stream as a run that was never interrupted (CPU, same seed)."""

from __future__ import annotations

import functools
import json
import logging
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
#: the tiniest GRPO-only run: 3 one-group batches of G = 2, one optimizer step each, a checkpoint per step
#: (no critic stage, so no critic shaping).
TINY_GRPO = [
    "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
    "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=6",
    "embedder.kind=hashing", "embedder.dim=64", "fit.stages=[grpo]", "rollout.shaping=none",
    "reader.calibrate_abstention=false", "rollout.group_size=2", "grpo.ppo_epochs=1", "grpo.max_steps=3", "grpo.checkpoint_every=1",
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


@pytest.mark.usefixtures("one_thread")
def test_sigterm_and_ctrl_c_stop_grpo_with_a_checkpoint_and_the_same_command_resumes(
    tmp_path, monkeypatch, capsys
):
    from lightning import Callback

    import memprm.fit
    from memprm.callbacks.signal_stop import FitInterrupted
    from memprm.cli import main
    from memprm.config import load_config

    class SignalAfterStep(Callback):  # the signal arrives at the end of the batch that reached ``step``
        def __init__(self, step: int, signum: int) -> None:
            self.step, self.signum = step, signum

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step == self.step:
                os.kill(os.getpid(), self.signum)

    t0 = time.monotonic()
    encoder = _tiny_encoder(tmp_path / "encoder")
    overrides = [*TINY_GRPO, f"policy.model={encoder}", f"output_dir={tmp_path}", "fit.run_name=stopped"]
    overrides.append("grpo.checkpoint_every=100")  # no periodic checkpoint: every last.ckpt is the stop's
    run = tmp_path / "stopped"
    last = run / "grpo" / "checkpoints" / "last.ckpt"
    sigterm_seen: list[int] = []

    def sentinel(signum, frame):  # stands in for the default (which would end pytest) if ours is missing
        sigterm_seen.append(signum)

    before = signal.signal(signal.SIGTERM, sentinel)
    sigint_before = signal.getsignal(signal.SIGINT)

    def handlers() -> tuple:
        return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    try:
        with pytest.raises(FitInterrupted) as stopped:
            memprm.fit.fit(load_config(None, overrides), grpo_callbacks=[SignalAfterStep(1, signal.SIGTERM)])
        assert stopped.value.exit_code == 143 and "SIGTERM: fit stopped at GRPO step 1" in str(stopped.value)
        assert torch.load(last, weights_only=False)["global_step"] == 1  # written by the stop, after step 1
        assert not (run / "stages" / "grpo.json").exists() and not (run / "policy_grpo.pt").exists()
        # the handlers in place before come back (the SIGTERM went to ours, not to the sentinel)
        assert handlers() == (sigint_before, sentinel) and sigterm_seen == []

        # the same command resumes from it; Ctrl-C after its first step, through the command line this time
        real_fit = memprm.fit.fit
        monkeypatch.setattr(
            memprm.fit, "fit", functools.partial(real_fit, grpo_callbacks=[SignalAfterStep(2, signal.SIGINT)])
        )
        capsys.readouterr()
        assert main(["fit", *overrides]) == 130
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("stopped: ")]
        assert lines == [
            f"stopped: SIGINT: fit stopped at GRPO step 2; the same command again will resume from {last}"
        ], err
        assert "Traceback" not in err
        assert json.loads((run / "grpo" / "starts.json").read_text()) == [0, 1]
        assert torch.load(last, weights_only=False)["global_step"] == 2
        monkeypatch.setattr(memprm.fit, "fit", real_fit)

        res = real_fit(load_config(None, overrides))  # and again: resumes at step 2 and finishes
        assert json.loads((run / "grpo" / "starts.json").read_text()) == [0, 1, 2]
        assert res.grpo.steps == 3 and res.grpo.start_step == 2 and (run / "stages" / "grpo.json").is_file()
        assert handlers() == (sigint_before, sentinel)
    finally:
        signal.signal(signal.SIGTERM, before)
        for h in [h for h in logging.getLogger("memprm").handlers if h.get_name() == "memprm-console"]:
            logging.getLogger("memprm").removeHandler(h)  # main's console handler wrote to capsys's stderr
    print(f"signal stop test: {time.monotonic() - t0:.0f} s")


@pytest.mark.usefixtures("one_thread")
def test_grpo_without_a_critic_stage_is_shaped_by_the_critic_of_stage_one_dir(tmp_path):
    from lightning import Callback

    from memprm.config import load_config
    from memprm.credit.reward import COMPONENTS
    from memprm.fit import fit
    from memprm.models.backbone_config import BackboneConfig
    from memprm.models.critic import CriticConfig, CriticModule, save_critic
    from memprm.stages.markers import Markers, StageKey

    class ShapingMass(Callback):  # Σ|λ s̃| of every batch, as the training step returned it
        def __init__(self) -> None:
            self.masses: list[float] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.masses.append(float(outputs["reward_masses"][COMPONENTS.index("shaping")]))

    encoder = _tiny_encoder(tmp_path / "encoder")
    stage_one = tmp_path / "stage1"  # stage one of another run: its critic (untrained, on the tiny encoder)
    torch.manual_seed(0)
    critic = CriticModule(
        CriticConfig(backbone=BackboneConfig(model=str(encoder)), max_length=32)
    ).to_frozen()
    save_critic(critic, stage_one / "critic")
    (stage_one / "critic" / "relabel_counts.json").write_text("{}")
    Markers(stage_one).write(StageKey("critic", {"stands_in": True}))
    shaping = ShapingMass()
    overrides = [*TINY_GRPO, f"policy.model={encoder}", f"output_dir={tmp_path}", "fit.run_name=shaped",
                 "rollout.shaping=suffix_min", f"fit.stage_one_dir={stage_one}", "grpo.max_steps=1"]  # fmt: skip
    fit(load_config(None, overrides), grpo_callbacks=[shaping])
    assert shaping.masses and sum(shaping.masses) > 0  # it used to train unshaped, silently
    grpo_key = Markers(tmp_path / "shaped").read("grpo")
    assert grpo_key["upstream"]["critic"] == Markers(stage_one).hash_of("critic")  # a new critic: GRPO redone
    assert not (tmp_path / "shaped" / "critic").exists()


def _signal_stop_trainer(stop, *callbacks):
    """A real Trainer (no logger, no periodic checkpoint) with ``callbacks`` and then StopOnSignal ``stop``,
    and a one-layer module that sends its ``signals`` from its own batch-end hook, after every callback's."""
    from lightning import LightningModule, Trainer

    class Linear(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.signals = torch.nn.Linear(2, 1), []

        def training_step(self, batch, batch_idx):
            return self.lin(batch).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def on_train_batch_end(self, outputs, batch, batch_idx):
            signals, self.signals = self.signals, []
            for signum in signals:
                os.kill(os.getpid(), signum)

    trainer = Trainer(max_steps=5, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[*callbacks, stop])  # fmt: skip
    return trainer, Linear()


def test_stop_on_signal_late_signals_and_a_second_signal(tmp_path):
    from lightning import Callback
    from torch.utils.data import DataLoader

    from memprm.callbacks.signal_stop import FitInterrupted, StopOnSignal

    class SendAtFirstBatchEnd(Callback):  # before StopOnSignal's batch-end check
        def __init__(self, *signals: int) -> None:
            self.signals = list(signals)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            signals, self.signals = self.signals, []
            for signum in signals:
                os.kill(os.getpid(), signum)

    loader = DataLoader(torch.randn(8, 2), batch_size=1)
    seen: list[int] = []

    def sentinel(signum, frame):  # the handler in place before (the default would end pytest)
        seen.append(signum)

    before = signal.signal(signal.SIGTERM, sentinel)
    try:
        # a SIGTERM after our batch-end check: Lightning's own handler stops the loop first (its
        # SIGTERMException), which becomes FitInterrupted all the same, without a new checkpoint
        stop = StopOnSignal(tmp_path / "last.ckpt")
        trainer, module = _signal_stop_trainer(stop)
        module.signals = [signal.SIGTERM]
        with pytest.raises(FitInterrupted) as late, stop.armed():
            trainer.fit(module, loader)
        assert (
            str(late.value)
            == "SIGTERM: fit stopped at GRPO step 1; the same command again will start GRPO over"
        )
        assert late.value.exit_code == 143 and not (tmp_path / "last.ckpt").exists()
        assert signal.getsignal(signal.SIGTERM) is sentinel and seen == []

        # two signals in one batch: the first stops after the batch (checkpoint written), the second goes to the
        # handler in place before
        stop = StopOnSignal(tmp_path / "last.ckpt")
        trainer, module = _signal_stop_trainer(stop, SendAtFirstBatchEnd(signal.SIGTERM, signal.SIGTERM))
        with (
            pytest.raises(FitInterrupted, match="at GRPO step 1; the same command again will resume"),
            stop.armed(),
        ):
            trainer.fit(module, loader)
        assert seen == [signal.SIGTERM] and trainer.global_step == 1 and trainer.should_stop
        assert torch.load(tmp_path / "last.ckpt", weights_only=False)["global_step"] == 1
        assert signal.getsignal(signal.SIGTERM) is sentinel
    finally:
        signal.signal(signal.SIGTERM, before)
