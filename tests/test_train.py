"""Training: determinism, resume after an interruption, schedule, outputs."""

from __future__ import annotations

import json

import polars as pl
import pytest
import torch
from safetensors.torch import load_file

from pipeline_src.checkpoints import CheckpointError, load_model
from pipeline_src.train import learning_rate, train
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
    with pytest.raises(CheckpointError, match=resume.name):
        train(spec, train_data, tmp_path / "run", **quiet)


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


def test_sigkilled_job_resumes_to_the_uninterrupted_weights(tmp_path, train_data):
    """A real `kill -9` of `lengthgen train` after its first checkpoint, then a rerun."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from pipeline_src.canonical import canonical_json

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
    previous = torch.get_num_threads()
    try:
        train(spec, train_data, tmp_path / "straight", threads=1, **quiet)
    finally:
        torch.set_num_threads(previous)
    straight, resumed = weights(tmp_path / "straight"), weights(out)
    for name in straight:
        assert torch.equal(straight[name], resumed[name]), name
