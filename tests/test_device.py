"""The ``device`` setting: resolution (auto -> CPU without CUDA, cuda without CUDA a named error),
the schema, the job specs it enters, and the code paths that move models and batches (exercised on
the CPU, where every move is a no-op and the results must be bit-identical). The GPU path is
checked by the test at the end, on a machine with CUDA."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path

import jsonschema
import polars as pl
import pytest
import torch
import yaml
from click.testing import CliRunner
from safetensors.torch import load_file

from pipeline_src.cli import main
from pipeline_src.config.schema import config_schema
from pipeline_src.devices import placement as devices
from pipeline_src.devices.placement import DeviceError, autocast, describe_device, inference_autocast, resolve_device
from pipeline_src.evaluation.decoding import greedy_decode
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.model import Decoder, ModelConfig
from pipeline_src.planning import jobs
from pipeline_src.planning import language_jobs as lang
from pipeline_src.planning.load_config import load_config
from pipeline_src.provenance.sidecars import read_record
from pipeline_src.storage.canonical import canonical_json
from pipeline_src.training.batches import SequenceTable, training_batch
from pipeline_src.training.train import train
from tests.conftest import default_config, tiny_train_spec

REPO = Path(__file__).resolve().parents[1]
SCHEMA = config_schema()
DEFAULT = default_config()
PAPER = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
quiet = {"progress": lambda line: None}


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as one without CUDA, whatever it has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# --- resolution -----------------------------------------------------------------------------------


def test_auto_and_cpu_resolve_to_the_cpu_without_cuda(no_cuda):
    assert resolve_device("auto") == resolve_device(None) == resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert describe_device(torch.device("cpu")) == "cpu"


@pytest.mark.parametrize("value", ["cuda", torch.device("cuda")])
def test_cuda_without_cuda_is_an_error_naming_the_field(no_cuda, value):
    with pytest.raises(DeviceError, match=r"device: 'cuda.*CUDA is not available.*set device: auto or cpu"):
        resolve_device(value)


def test_a_gpu_slot_beyond_the_gpus_this_machine_shows_is_an_error_naming_the_setting(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(devices, "_held", [])
    monkeypatch.setenv("LENGTHGEN_GPU_SLOTS", f"2,1,{tmp_path}")
    (tmp_path / "gpu0.slot0.lock").touch()
    import fcntl
    with open(tmp_path / "gpu0.slot0.lock") as taken:  # GPU 0 held by another job: this one gets GPU 1
        fcntl.flock(taken, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(DeviceError, match=r"LENGTHGEN_GPU_SLOTS: GPU slot 1 of 2 GPUs, but this machine shows 1; "
                                              r"set LENGTHGEN_GPUS .* to at most 1"):
            resolve_device("auto")
    for handle, _ in devices._held:
        handle.close()


def test_unknown_value_is_an_error_naming_the_field():
    with pytest.raises(DeviceError, match=r"device: 'gpu' is not one of \['auto', 'cpu', 'cuda'\]"):
        resolve_device("gpu")


def test_autocast_is_bf16_on_the_cpu_in_training_only():
    cpu = torch.device("cpu")
    assert isinstance(autocast(cpu, "fp32"), contextlib.nullcontext)
    training = autocast(cpu, "bf16")
    assert isinstance(training, torch.autocast) and training.device == "cpu"
    assert isinstance(inference_autocast(cpu, "bf16"), contextlib.nullcontext)  # CPU evaluation stays fp32
    assert isinstance(inference_autocast(torch.device("cuda"), "fp32"), contextlib.nullcontext)


# --- config: schema and specs ---------------------------------------------------------------------


def test_schema_accepts_the_shipped_values_and_rejects_others_naming_the_field():
    assert DEFAULT["device"] == "auto" and PAPER["device"] == "cuda"
    for value in ("auto", "cpu", "cuda"):
        jsonschema.validate({**DEFAULT, "device": value}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError) as caught:
        jsonschema.validate({**DEFAULT, "device": "gpu"}, SCHEMA)
    assert list(caught.value.path) == ["device"] and "'gpu' is not one of" in caught.value.message


def test_paper_config_trains_and_evaluates_in_bf16():
    paper = load_config([REPO / "config" / "paper.yaml"], base=REPO / "config" / "config.yaml")
    for task in [*jobs.tasks(paper), "language"]:
        assert paper[task]["train"]["precision"] == "bf16", task


def test_device_enters_every_model_job_spec_and_no_other():
    config = {**copy.deepcopy(DEFAULT), "device": "cpu"}
    assert jobs.train_spec(config, "sparse_parity", "k2", "rope_pose", 0)["device"] == "cpu"
    assert jobs.eval_spec(config, "sparse_parity") == {
        "batch_size": DEFAULT["sparse_parity"]["eval"]["batch_size"], "seed": DEFAULT["sparse_parity"]["eval"]["seed"],
        "device": "cpu", "precision": DEFAULT["sparse_parity"]["train"]["precision"],
        "mechanism_samples": DEFAULT["mechanism"]["samples"]}
    assert lang.train_spec(config, "main")["device"] == "cpu"
    assert lang.eval_spec(config)["device"] == "cpu"
    assert lang.influence_spec(config)["device"] == "cpu"
    for spec in (jobs.train_data_spec(config, "sparse_parity", "k2"),
                 jobs.eval_data_spec(config, "sparse_parity", "k2"),
                 jobs.figure_spec(config, "figure1"), lang.corpus_spec(config), lang.figure_spec(config, "figure4")):
        assert "device" not in canonical_json(spec)
    without = {key: value for key, value in DEFAULT.items() if key != "device"}
    assert jobs.train_spec(without, "sparse_parity", "k2", "rope_pose", 0)["device"] == "auto"


# --- moving tensors -------------------------------------------------------------------------------


def test_training_batch_moves_every_tensor(train_data):
    from pipeline_src import datasets
    from pipeline_src.tasks import get_task

    table = SequenceTable.from_frame(datasets.read(train_data, get_task("sparse_parity").schema))
    batch = training_batch(table, torch.arange(4), pad_multiple=8)
    moved = batch.to(torch.device("meta"))
    for name in ("inputs", "positions", "targets", "loss_mask", "lengths", "scored_rows"):
        assert getattr(moved, name).device.type == "meta"
        assert getattr(batch.to(torch.device("cpu")), name) is getattr(batch, name)  # no copy where it is


def test_decoding_rejects_inputs_on_another_device_than_the_model():
    model = Decoder(ModelConfig(vocab_size=8, d_model=16, n_layer=1, n_head=2, d_mlp=32))
    prompt = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"the model is on cpu but prompt on meta, prompt_positions on meta"):
        greedy_decode(model, prompt.to("meta"), prompt.to("meta"), 2)


def test_cpu_training_and_evaluation_are_bit_identical_to_auto(no_cuda, tmp_path, train_data, eval_data):
    """On a machine without CUDA, device auto, cpu and an explicit torch.device("cpu") give the same
    weights, logs and accuracy tables; the resolved device is in the summary and every record."""
    runs = {"auto": ({**tiny_train_spec(), "device": "auto"}, None),
            "cpu": ({**tiny_train_spec(), "device": "cpu"}, None),
            "explicit": (tiny_train_spec(), torch.device("cpu"))}
    for name, (spec, device) in runs.items():
        out = tmp_path / name
        summary = train(spec, train_data, out, device=device, **quiet)
        assert summary["device"] == "cpu"
        eval_spec = {"batch_size": 4, "seed": 2, "device": spec.get("device", "auto"), "precision": "bf16"}
        evaluate(eval_spec, out, eval_data, out / "accuracy.parquet", device=device, **quiet)
        for artifact in ("model.safetensors", "train_log.parquet", "accuracy.parquet"):
            assert read_record(out / artifact)["device"] == "cpu", (name, artifact)
    reference = load_file(tmp_path / "auto" / "model.safetensors")
    for name in ("cpu", "explicit"):
        weights = load_file(tmp_path / name / "model.safetensors")
        assert all(torch.equal(reference[key], weights[key]) for key in reference), name
        for table in ("train_log.parquet", "accuracy.parquet"):
            a, b = (pl.read_parquet(tmp_path / run / table).drop("seconds", strict=False) for run in ("auto", name))
            assert a.equals(b), (name, table)
    fp32 = evaluate({"batch_size": 4, "seed": 2}, tmp_path / "auto", eval_data, tmp_path / "fp32.parquet", **quiet)
    assert fp32.equals(pl.read_parquet(tmp_path / "auto" / "accuracy.parquet")), "no autocast in CPU evaluation"


def test_cli_jobs_with_cuda_on_a_machine_without_it_fail_naming_the_field(no_cuda, tmp_path, train_data,
                                                                          eval_data):
    spec = {**tiny_train_spec(), "device": "cuda"}
    done = CliRunner().invoke(main, ["train", "--spec", json.dumps(spec), "--train-data", str(train_data),
                                     "--out-dir", str(tmp_path / "m")])
    assert done.exit_code == 1 and "device: 'cuda'" in done.output and "Traceback" not in done.output
    train(tiny_train_spec(), train_data, tmp_path / "m", **quiet)
    done = CliRunner().invoke(main, ["evaluate", "--spec", json.dumps({"batch_size": 4, "seed": 2, "device": "cuda"}),
                                     "--model-dir", str(tmp_path / "m"), "--eval-data", str(eval_data),
                                     "--out", str(tmp_path / "a.parquet")])
    assert done.exit_code == 1 and "device: 'cuda'" in done.output
    assert not (tmp_path / "a.parquet").exists()


# --- the GPU path (runs where CUDA is available) --------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_training_sees_the_cpu_batches_and_writes_cpu_results(tmp_path, train_data, eval_data):
    runs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        summary = train({**tiny_train_spec(precision="bf16"), "device": device}, train_data, out, **quiet)
        assert summary["device"].startswith(device)
        evaluate({"batch_size": 4, "seed": 2, "device": device, "precision": "bf16"}, out, eval_data,
                 out / "accuracy.parquet", **quiet)
        runs[device] = pl.read_parquet(out / "train_log.parquet")
        assert all(t.device.type == "cpu" for t in load_file(out / "model.safetensors").values())
    assert read_record(tmp_path / "cuda" / "accuracy.parquet")["device"].startswith("cuda:")
    # the same batches: the first step's loss (same init, same batch) agrees up to bf16 numerics
    assert runs["cuda"]["loss"][0] == pytest.approx(runs["cpu"]["loss"][0], rel=2e-2)


def test_model_jobs_request_a_local_gpu_only_when_they_will_use_cuda(monkeypatch):
    from pipeline_src.devices.setting import GPUS_ENV, gpus_per_model_job

    monkeypatch.delenv(GPUS_ENV, raising=False)  # no pretend GPUs (a suite run with them set, say)
    assert gpus_per_model_job({"device": "cpu"}) == 0
    assert gpus_per_model_job({"device": "cuda"}) == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus_per_model_job({"device": "auto"}) == 0


def test_the_gpus_model_jobs_spread_over(monkeypatch):
    from pipeline_src.devices.setting import GPUS_ENV, gpus_per_model_job, visible_gpus

    monkeypatch.delenv(GPUS_ENV, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    assert visible_gpus() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpus() == 0
    monkeypatch.setenv(GPUS_ENV, "2")  # pretend GPUs: auto model jobs are scheduled as GPU jobs
    assert visible_gpus() == 2 and gpus_per_model_job({"device": "auto"}) == 1
    monkeypatch.setenv(GPUS_ENV, "two")
    with pytest.raises(ValueError, match=GPUS_ENV):
        visible_gpus()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("scheme", ["rope_pose", "ppc"])
def test_a_cuda_training_step_never_synchronizes_with_the_host(scheme):
    from pipeline_src.training.train import build_model, make_optimizer, train_step
    from tests.helpers import a_batch

    spec = tiny_train_spec(scheme)
    cuda = torch.device("cuda")
    model = build_model(spec, vocab_size=6).to(cuda)
    optimizer = make_optimizer(model, spec["train"])
    batch = a_batch(scheme)
    batch, positions = batch.to(cuda), batch.positions.to(cuda)
    train_step(model, optimizer, batch, positions, spec["train"])  # first call: allocations, lazy init
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            numbers = train_step(model, optimizer, batch, positions, spec["train"])
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert numbers.device.type == "cuda"
