"""``train.compile``: training through ``torch.compile`` gives the eager numbers (within float
tolerance) and resumes like an eager run; without ``compile`` a GPU compiles and the CPU does not. The
default-suite tests compile with the ``aot_eager`` backend (the graph capture, no C++ build); the
slow one with the inductor backend a run uses."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from pipeline_src.planning import jobs
from pipeline_src.storage.canonical import config_hash
from pipeline_src.training import train as training
from tests.conftest import default_config, tiny_train_spec

quiet = {"progress": lambda line: None}
STEPS = 20


def weights(out_dir):
    return load_file(out_dir / "model.safetensors")


def assert_close_runs(a, b, atol: float) -> None:
    first, second = weights(a), weights(b)
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], atol=atol, rtol=0, msg=name)


def compiled_equals_eager_and_resumes(tmp_path, train_data, scheme: str, atol: float) -> None:
    eager = tiny_train_spec(scheme, steps=STEPS, log_every=5, checkpoint_every=10)
    compiled = tiny_train_spec(scheme, steps=STEPS, log_every=5, checkpoint_every=10, compile=True)
    assert "compiled" not in training.train(eager, train_data, tmp_path / "eager", **quiet)
    assert training.train(compiled, train_data, tmp_path / "compiled", **quiet)["compiled"] is True
    assert_close_runs(tmp_path / "eager", tmp_path / "compiled", atol)
    assert training.train(compiled, train_data, tmp_path / "resumed", stop_at_step=13, **quiet) == {"stopped_at": 13}
    lines = []
    training.train(compiled, train_data, tmp_path / "resumed", progress=lines.append)
    assert any("resuming" in line and "step 10" in line for line in lines)
    assert_close_runs(tmp_path / "compiled", tmp_path / "resumed", atol)


def test_compiled_training_gives_the_eager_numbers_and_resumes(tmp_path, train_data, monkeypatch):
    monkeypatch.setattr(training, "COMPILE_BACKEND", "aot_eager")
    compiled_equals_eager_and_resumes(tmp_path, train_data, "ppc", atol=1e-5)  # with the position head


@pytest.mark.slow
def test_inductor_compiled_training_gives_the_eager_numbers_and_resumes(tmp_path, train_data):
    compiled_equals_eager_and_resumes(tmp_path, train_data, "ppc", atol=1e-4)


def test_without_compile_a_gpu_compiles_and_the_cpu_does_not():
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert training.compiles({}, cuda) and not training.compiles({}, cpu)
    assert training.compiles({"compile": True}, cpu) and not training.compiles({"compile": False}, cuda)


def test_compile_written_either_way_is_another_job_than_without_it():
    """Absent, the device decides; ``false`` (eager on a GPU too) and ``true`` are jobs of their own."""
    config = default_config()
    plain = jobs.train_spec(config, "addition", "direct", "ppc", 0)
    assert "compile" not in plain["train"]
    for value in (False, True):
        config["addition"]["train"]["compile"] = value
        written = jobs.train_spec(config, "addition", "direct", "ppc", 0)
        assert written["train"]["compile"] is value and config_hash(written) != config_hash(plain)
    jobs.check(config)



def failing_compiler(model, device):
    def forward(*args, **kwargs):
        raise RuntimeError("Failed to find C compiler\n(the rest of a long message)")
    return forward


def test_where_the_device_chose_to_compile_a_failed_compile_trains_eager(tmp_path, train_data, monkeypatch):
    """A GPU compiles without being asked; a compiler that fails there (no C compiler for Triton, say)
    leaves the eager run, said in one line. Asked for, ``compile: true`` fails instead."""
    eager = tiny_train_spec("ppc", steps=STEPS, log_every=5, checkpoint_every=10)
    training.train(eager, train_data, tmp_path / "eager", **quiet)
    monkeypatch.setattr(training, "compiles", lambda opt, device: opt.get("compile", True))  # as on a GPU
    monkeypatch.setattr(training, "compiled", failing_compiler)
    lines = []
    assert "compiled" not in training.train(eager, train_data, tmp_path / "fallback", progress=lines.append)
    warnings = [line for line in lines if line.startswith("WARNING")]
    assert warnings == ["WARNING: torch.compile failed on cpu (RuntimeError: Failed to find C compiler); "
                        "training eager instead (train.compile: false skips the attempt)"]
    assert_close_runs(tmp_path / "eager", tmp_path / "fallback", atol=0)
    asked = tiny_train_spec("ppc", steps=STEPS, compile=True)
    with pytest.raises(RuntimeError, match="C compiler"):
        training.train(asked, train_data, tmp_path / "asked", **quiet)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_training_compiles_without_being_asked_and_gives_the_eager_numbers(tmp_path, train_data):
    """The GPU's default (CUDA graphs through inductor) in the real loop, length-grouped batches of
    several shapes included, against ``compile: false`` on the same GPU."""
    default = {**tiny_train_spec("ppc", steps=STEPS, log_every=5, checkpoint_every=10), "device": "cuda"}
    eager = {**default, "train": {**default["train"], "compile": False}}
    assert training.train(default, train_data, tmp_path / "default", **quiet)["compiled"] is True
    assert "compiled" not in training.train(eager, train_data, tmp_path / "eager", **quiet)
    assert_close_runs(tmp_path / "eager", tmp_path / "default", atol=1e-4)
