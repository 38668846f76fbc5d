"""Training: determinism, resume after an interruption, schedule, outputs; corrupt or foreign
resume files and diverging runs are named errors that keep the last good checkpoint."""

from __future__ import annotations

import errno
import itertools
import json
import os
import re

import polars as pl
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from pipeline_src.storage.atomic import WriteError
from pipeline_src.storage.canonical import config_hash
from pipeline_src.training.checkpoints import CheckpointError, load_model, load_state, save_state
from pipeline_src.training.train import TrainingDiverged, learning_rate, train
from tests.conftest import tiny_train_spec

quiet = {"progress": lambda line: None}


def weights(out_dir):
    return load_file(out_dir / "model.safetensors")


def log_without_time(out_dir):
    return pl.read_parquet(out_dir / "train_log.parquet").drop("seconds")


def test_same_seed_same_weights_and_metrics(tmp_path, train_data):
    spec = tiny_train_spec()
    train(spec, train_data, tmp_path / "a", **quiet)
    train(spec, train_data, tmp_path / "b", **quiet)
    for name, tensor in weights(tmp_path / "a").items():
        assert torch.equal(tensor, weights(tmp_path / "b")[name]), name
    assert log_without_time(tmp_path / "a").equals(log_without_time(tmp_path / "b"))


def test_different_seed_differs(tmp_path, train_data):
    train(tiny_train_spec(), train_data, tmp_path / "a", **quiet)
    other = tiny_train_spec()
    other["seed"] = 4
    train(other, train_data, tmp_path / "b", **quiet)
    a, b = weights(tmp_path / "a"), weights(tmp_path / "b")
    assert any(not torch.equal(a[n], b[n]) for n in a)


@pytest.mark.parametrize("scheme", ["rope_pose", "abs_shift", "nope"])
def test_resume_after_interruption_equals_uninterrupted(tmp_path, train_data, scheme):
    spec = tiny_train_spec(scheme)
    train(spec, train_data, tmp_path / "straight", **quiet)
    # Interrupt at step 8: the last checkpoint is at step 5, so steps 6-8 are redone on resume.
    stopped = train(spec, train_data, tmp_path / "resumed", stop_at_step=8, **quiet)
    assert stopped == {"stopped_at": 8}
    assert not (tmp_path / "resumed" / "model.safetensors").exists()
    assert len(list((tmp_path / "resumed").glob("resume-*.pt"))) == 1
    lines = []
    train(spec, train_data, tmp_path / "resumed", progress=lines.append)
    assert any("resuming" in line and "step 5" in line for line in lines)
    straight, resumed = weights(tmp_path / "straight"), weights(tmp_path / "resumed")
    for name in straight:
        assert torch.equal(straight[name], resumed[name]), name
    assert log_without_time(tmp_path / "straight").equals(log_without_time(tmp_path / "resumed"))
    assert not list((tmp_path / "resumed").glob("resume-*.pt")), "resume file removed after success"


def test_corrupt_resume_checkpoint_is_a_named_error(tmp_path, train_data):
    spec = tiny_train_spec()
    train(spec, train_data, tmp_path / "run", stop_at_step=6, **quiet)
    resume = next((tmp_path / "run").glob("resume-*.pt"))
    resume.write_bytes(resume.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=f"{resume.name}: unreadable resume checkpoint"):
        train(spec, train_data, tmp_path / "run", **quiet)
    assert len(resume.read_bytes()) == 100, "the corrupt file is left for the user, not retrained over"
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.parametrize("byte", [0, 1000, -70, -1])
def test_a_resume_checkpoint_with_one_bit_flipped_is_refused(tmp_path, train_data, byte):
    """Anywhere in the file: the state (first bytes, middle), the digest mark, the digest itself."""
    spec = tiny_train_spec()
    train(spec, train_data, tmp_path / "run", stop_at_step=6, **quiet)
    resume = next((tmp_path / "run").glob("resume-*.pt"))
    data = bytearray(resume.read_bytes())
    data[byte] ^= 0x10
    resume.write_bytes(bytes(data))
    refused = "changed since it was written" if byte != -70 else "no SHA-256 at its end"
    with pytest.raises(CheckpointError, match=f"{resume.name}: .*{refused}"):
        train(spec, train_data, tmp_path / "run", **quiet)
    assert resume.read_bytes() == bytes(data), "the changed file is left for the user"
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_a_resume_checkpoint_that_cannot_be_written_names_the_file_and_the_cause(tmp_path, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(type(tmp_path), "write_bytes", full)
    resume = tmp_path / "resume-0123456789abcdef.pt"
    with pytest.raises(WriteError, match=rf"{resume}: cannot write \(No space left on device \(ENOSPC\)\)"):
        save_state(resume, {"step": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_resume_on_another_kind_of_device_is_a_choice_not_an_accident(tmp_path, train_data, monkeypatch):
    spec = tiny_train_spec()
    train(spec, train_data, tmp_path / "straight", **quiet)
    train(spec, train_data, tmp_path / "run", stop_at_step=8, **quiet)
    resume = next((tmp_path / "run").glob("resume-*.pt"))
    state = load_state(resume, config_hash(spec))
    assert state["device_type"] == "cpu"
    save_state(resume, {**state, "device_type": "cuda"})  # as if begun on a GPU
    with pytest.raises(CheckpointError, match=f"{resume.name}: resume checkpoint written on cuda, but this run is on "
                                              "cpu; set LENGTHGEN_RESUME_ON_ANOTHER_DEVICE=1 to resume there anyway"):
        train(spec, train_data, tmp_path / "run", **quiet)
    monkeypatch.setenv("LENGTHGEN_RESUME_ON_ANOTHER_DEVICE", "1")
    train(spec, train_data, tmp_path / "run", **quiet)
    straight, resumed = weights(tmp_path / "straight"), weights(tmp_path / "run")
    assert all(torch.equal(straight[name], resumed[name]) for name in straight)


def test_resume_checkpoint_of_another_config_is_a_named_error(tmp_path, train_data):
    """A resume file under this config's name but made for another config (copied, renamed)."""
    other = tiny_train_spec()
    train(other, train_data, tmp_path / "other", stop_at_step=6, **quiet)
    spec = tiny_train_spec(lr=2e-3)
    resume = tmp_path / "run" / f"resume-{config_hash(spec)[:16]}.pt"
    resume.parent.mkdir()
    foreign = next((tmp_path / "other").glob("resume-*.pt")).read_bytes()
    resume.write_bytes(foreign)
    with pytest.raises(CheckpointError, match=f"{resume.name}: resume checkpoint of another config"):
        train(spec, train_data, tmp_path / "run", **quiet)
    assert resume.read_bytes() == foreign
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.parametrize("content", [[1, 2, 3], {"config_hash": "x", "step": 5}])
def test_resume_file_that_is_no_training_state_is_a_named_error(tmp_path, train_data, content):
    spec = tiny_train_spec()
    resume = tmp_path / "run" / f"resume-{config_hash(spec)[:16]}.pt"
    resume.parent.mkdir()
    save_state(resume, content)
    with pytest.raises(CheckpointError, match=f"{resume.name}: not a resume checkpoint of this trainer"):
        train(spec, train_data, tmp_path / "run", **quiet)
    assert resume.exists()


def test_resume_checkpoint_of_another_model_is_a_named_error(tmp_path, train_data):
    """Same config hash, different weights (e.g. a checkpoint written by older model code)."""
    spec = tiny_train_spec()
    train(spec, train_data, tmp_path / "run", stop_at_step=6, **quiet)
    resume = next((tmp_path / "run").glob("resume-*.pt"))
    state = load_state(resume, config_hash(spec))
    state["model"] = {f"old.{name}": tensor for name, tensor in state["model"].items()}
    save_state(resume, state)
    with pytest.raises(CheckpointError, match=f"{resume.name}: resume checkpoint does not fit this model"):
        train(spec, train_data, tmp_path / "run", **quiet)


def test_resume_files_of_other_configs_are_left_alone(tmp_path, train_data):
    train(tiny_train_spec(), train_data, tmp_path / "run", stop_at_step=6, **quiet)
    stale = next((tmp_path / "run").glob("resume-*.pt"))
    lines = []
    train(tiny_train_spec(lr=2e-3), train_data, tmp_path / "run", progress=lines.append)
    assert any(line.startswith(f"ignoring {stale}") for line in lines)
    assert stale.exists() and (tmp_path / "run" / "model.safetensors").exists()


def nan_loss_from_call(monkeypatch, call: int) -> None:
    """Make the ``call``-th cross entropy of training (one per step without a position head) NaN."""
    calls = itertools.count(1)
    real = F.cross_entropy

    def poisoned(*args, **kwargs):
        loss = real(*args, **kwargs)
        return loss * float("nan") if next(calls) >= call else loss

    monkeypatch.setattr(F, "cross_entropy", poisoned)


def assert_good_checkpoint_kept(out_dir, spec, step: int) -> None:
    resume = out_dir / f"resume-{config_hash(spec)[:16]}.pt"
    state = load_state(resume, config_hash(spec))
    assert state["step"] == step
    assert all(torch.isfinite(t).all() for t in state["model"].values())


def diverged_run(spec, train_data, out_dir) -> tuple[dict, str]:
    """Train ``spec`` expecting a divergence: its summary and the warning it printed."""
    lines = []
    summary = train(spec, train_data, out_dir, progress=lines.append)
    warnings = [line for line in lines if line.startswith("WARNING: ")]
    assert len(warnings) == 1, lines
    return summary, warnings[0]


def assert_divergence_recorded(out_dir, step: int, reason: str) -> None:
    """The run's outputs all exist and say it diverged at ``step``; its weights file has no tensors
    and loading the model is a named error, never a model."""
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["diverged"] == {"step": step, "reason": reason}
    assert json.loads((out_dir / "model.json").read_text())["diverged"] == summary["diverged"]
    assert load_file(out_dir / "model.safetensors") == {}
    assert pl.read_parquet(out_dir / "train_log.parquet")["step"].to_list() == list(range(1, step))
    with pytest.raises(CheckpointError, match=f"training diverged at step {step}"):
        load_model(out_dir)


def test_nan_loss_stops_naming_the_cell_and_step_and_keeps_the_last_checkpoint(tmp_path, train_data,
                                                                                monkeypatch):
    spec = tiny_train_spec()  # checkpoints at steps 5 and 10
    nan_loss_from_call(monkeypatch, 8)
    summary, message = diverged_run(spec, train_data, tmp_path / "run")
    assert "sparse_parity/rope_pose/k2/seed3" in message and str(tmp_path / "run") in message
    assert "diverged at step 8: the loss is nan" in message and "(step 5) is kept" in message
    assert summary["diverged"]["step"] == 8 and summary["steps"] == 7
    assert_good_checkpoint_kept(tmp_path / "run", spec, 5)
    assert_divergence_recorded(tmp_path / "run", 8, "the loss is nan")


def test_a_divergence_at_the_first_step_records_an_empty_log(tmp_path, train_data, monkeypatch):
    nan_loss_from_call(monkeypatch, 1)
    summary, message = diverged_run(tiny_train_spec(), train_data, tmp_path / "run")
    assert "no checkpoint had been written yet" in message
    assert summary["steps"] == 0 and summary["final_loss"] is None and summary["train_seconds"] == 0.0
    assert_divergence_recorded(tmp_path / "run", 1, "the loss is nan")


def test_a_source_that_keeps_no_failed_model_raises_the_divergence(tmp_path, train_data, monkeypatch):
    """Only a synthetic cell records its divergence as a result; a source that does not (the
    language models') makes the run fail."""
    import pipeline_src.training.train as trainer

    class Raising(trainer.TaskSource):
        records_divergence = False

    spec = tiny_train_spec()
    nan_loss_from_call(monkeypatch, 3)
    with pytest.raises(TrainingDiverged, match="diverged at step 3"):
        trainer.run(spec, lambda: Raising(spec, train_data), tmp_path / "run", **quiet)
    assert not (tmp_path / "run" / "summary.json").exists()


def test_non_finite_weights_are_never_checkpointed(tmp_path, train_data, monkeypatch):
    """An update that makes a weight infinite right before a checkpoint (step 10) stops the run
    before it is saved: the checkpoint of step 5 stays."""
    import pipeline_src.training.train as trainer

    real = trainer.make_optimizer

    def poisoning_optimizer(model, opt):
        optimizer = real(model, opt)
        update, steps = optimizer.step, itertools.count(1)

        def step(*args, **kwargs):
            update(*args, **kwargs)
            if next(steps) == 10:
                with torch.no_grad():
                    next(model.parameters()).fill_(float("inf"))

        optimizer.step = step
        return optimizer

    monkeypatch.setattr(trainer, "make_optimizer", poisoning_optimizer)
    spec = tiny_train_spec()
    _, message = diverged_run(spec, train_data, tmp_path / "run")
    assert "diverged at step 10: the weights are not finite" in message
    assert_good_checkpoint_kept(tmp_path / "run", spec, 5)


def test_huge_learning_rate_diverges_with_a_named_error(tmp_path, train_data):
    spec = tiny_train_spec(lr=1e3, checkpoint_every=2)
    summary, message = diverged_run(spec, train_data, tmp_path / "run")
    assert re.search(r"sparse_parity/rope_pose/k2/seed3 .* diverged at step", message)
    step = int(re.search(r"diverged at step (\d+)", message)[1])
    kept = int(re.search(r"\(step (\d+)\) is kept", message)[1])
    assert kept < step == summary["diverged"]["step"]
    assert_good_checkpoint_kept(tmp_path / "run", spec, kept)


def test_outputs_load_and_describe_the_cell(tmp_path, train_data):
    spec = tiny_train_spec()
    summary = train(spec, train_data, tmp_path / "m", **quiet)
    model, description = load_model(tmp_path / "m")
    assert description["scheme"] == "rope_pose" and description["k_train"] == 2
    assert model.cfg.position_encoding == "rope"
    assert summary["steps"] == spec["train"]["steps"]
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["steps"] == 12
    log = pl.read_parquet(tmp_path / "m" / "train_log.parquet")
    assert log["step"].to_list() == list(range(1, 13))


def test_learning_rate_schedule():
    peak, warm, total = 1e-3, 10, 110
    assert learning_rate(0, peak, warm, total, 0.0) == pytest.approx(peak / warm)
    assert learning_rate(9, peak, warm, total, 0.0) == pytest.approx(peak)
    assert learning_rate(60, peak, warm, total, 0.0) == pytest.approx(peak / 2)
    assert learning_rate(110, peak, warm, total, 0.1) == pytest.approx(peak * 0.1)


def test_absolute_table_too_small_is_a_named_error(tmp_path, train_data):
    spec = tiny_train_spec("abs_shift")
    spec["model"]["max_positions"] = 64
    with pytest.raises(ValueError, match="max_positions"):
        train(spec, train_data, tmp_path / "m", **quiet)


def assert_as_uninterrupted(spec: dict, train_data, resumed_dir, straight_dir) -> None:
    """The weights in ``resumed_dir`` are those of ``spec`` trained without a break (one thread, as the job)."""
    previous = torch.get_num_threads()
    try:
        train(spec, train_data, straight_dir, threads=1, **quiet)
    finally:
        torch.set_num_threads(previous)
    straight, resumed = weights(straight_dir), weights(resumed_dir)
    for name in straight:
        assert torch.equal(straight[name], resumed[name]), name


@pytest.mark.e2e
def test_sigkilled_job_resumes_to_the_uninterrupted_weights(tmp_path, train_data):
    """A real `kill -9` of `lengthgen train` after its first checkpoint, then a rerun."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from pipeline_src.storage.canonical import canonical_json

    spec = tiny_train_spec(steps=400, checkpoint_every=25, log_every=500)
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "pipeline_src.cli", "train", "--spec", canonical_json(spec),
               "--threads", "1", "--train-data", str(train_data), "--out-dir", str(out)]
    job = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(out.glob("resume-*.pt")) and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.005)
    time.sleep(0.05)  # let it run on past the checkpoint, possibly into the next one
    os.kill(job.pid, signal.SIGKILL)
    assert job.wait() == -signal.SIGKILL, "the job finished before it could be killed"
    assert not (out / "model.safetensors").exists()

    rerun = subprocess.run(command, check=True, stderr=subprocess.PIPE, text=True)
    assert "resuming" in rerun.stderr
    assert_as_uninterrupted(spec, train_data, out, tmp_path / "straight")


def test_scored_targets_are_the_masked_ones_and_full_windows_select_without_a_copy():
    from pipeline_src.language.lm import WindowSource
    from pipeline_src.training.batches import SequenceTable, training_batch

    generator = torch.Generator().manual_seed(0)
    window = WindowSource(torch.arange(100), context=8, batch_size=3).next_batch(generator)
    assert window.scored_rows is None and bool(window.loss_mask.all())
    logits = torch.randn(3, 8, 5)
    assert torch.equal(window.scored(logits), logits[window.loss_mask])
    assert window.scored(logits).data_ptr() == logits.data_ptr()  # a view: nothing copied
    table = SequenceTable(tokens=torch.arange(15).view(3, 5), positions=torch.zeros(3, 5, dtype=torch.long),
                          lengths=torch.tensor([5, 3, 4]), prompt_lengths=torch.tensor([2, 2, 3]))
    batch = training_batch(table, torch.arange(3), pad_multiple=1)
    assert batch.loss_mask.tolist() == [[False, True, True, True], [False, True, False, False],
                                        [False, False, True, False]]
    values = torch.randn(3, 4, 7)
    assert torch.equal(batch.scored(values), values[batch.loss_mask])
    assert batch.scored(batch.targets).tolist() == [2, 3, 4, 7, 13]
    assert torch.equal(batch.to(torch.device("cpu")).scored(values), values[batch.loss_mask])


@pytest.mark.e2e
def test_a_sigtermed_job_saves_its_state_and_resumes_to_the_uninterrupted_weights(tmp_path, train_data):
    """SIGTERM (a cluster's time limit, a preemption) to `lengthgen train` between checkpoints: it saves its
    state at the step it reached, exits with 143 and one line saying so; the job run again resumes from that
    step and ends with the weights and log of an uninterrupted run."""
    import signal
    import subprocess
    import sys

    from pipeline_src.storage.canonical import canonical_json

    spec = tiny_train_spec(steps=400, checkpoint_every=1000, log_every=10)  # no checkpoint falls due before the end
    out = tmp_path / "terminated"
    command = [sys.executable, "-m", "pipeline_src.cli", "train", "--spec", canonical_json(spec),
               "--threads", "1", "--train-data", str(train_data), "--out-dir", str(out)]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    for line in job.stderr:  # the first logged step: the loop is running
        if line.startswith("step "):
            break
    job.send_signal(signal.SIGTERM)
    said = job.stderr.read()
    assert job.wait(timeout=120) == 143, said
    saved = load_state(next(out.glob("resume-*.pt")), config_hash(spec))["step"]
    assert 0 < saved < 400 and not (out / "model.safetensors").exists()
    assert f"Stopped: SIGTERM at step {saved} of 400: the state is saved in " in said, said

    rerun = subprocess.run(command, check=True, stderr=subprocess.PIPE, text=True)
    assert f"resuming {out} from step {saved}" in rerun.stderr
    assert_as_uninterrupted(spec, train_data, out, tmp_path / "straight")
    assert log_without_time(out).equals(log_without_time(tmp_path / "straight"))
