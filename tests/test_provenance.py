"""Provenance: records, sidecars, embedded metadata and the chain from a figure back to data."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline_src.storage.canonical import canonical_json, config_hash, sha256_file
from pipeline_src.cli import main
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.figures import figure1
from pipeline_src.storage.provenance import PARQUET_KEY, read_record, sidecar_path, trace
from pipeline_src.training.train import train
from tests.conftest import tiny_train_spec


def test_canonical_json_ignores_key_order():
    a = {"b": 1, "a": {"y": [1, 2], "x": 0.5}}
    b = {"a": {"x": 0.5, "y": [1, 2]}, "b": 1}
    assert canonical_json(a) == canonical_json(b) and config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash({**a, "b": 2})


def test_dataset_record_embedded_and_sidecar(train_data):
    embedded = json.loads(pq.read_metadata(train_data).metadata[PARQUET_KEY.encode()])
    side = json.loads(sidecar_path(train_data).read_text())
    assert embedded["config"] == side["config"] and embedded["config_hash"] == config_hash(side["config"])
    assert side["artifact"]["sha256"] == sha256_file(train_data)
    assert side["seeds"] == {"seed": 1} and side["code"]["stage"] == "data"
    assert {"torch", "polars", "python"} <= set(side["libraries"])


def test_chain_from_figure_back_to_datasets(tmp_path, train_data, eval_data, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths in records are relative to the pipeline's working directory
    spec = tiny_train_spec()
    train(spec, "train.parquet", "model", progress=lambda _: None)
    evaluate({"batch_size": 8, "seed": 2}, "model", "eval.parquet", "acc.parquet", progress=lambda _: None)
    figure_spec = {"task": "sparse_parity", "runs": {"k2": ["rope_pose"]}, "seeds": [3], "x_scale": "log", "train_lengths": [20, 50]}
    figure1.plot(figure_spec, ["acc.parquet"], ["fig.png", "fig.pdf"])

    chain = trace("fig.png")
    assert chain["record"]["config"] == figure_spec
    evaluation = chain["upstream"]["input0"]
    assert evaluation["path"] == "acc.parquet"
    model = evaluation["upstream"]["model"]
    assert model["record"]["config"] == spec and model["record"]["seeds"] == {"seed": 3}
    data = model["upstream"]["train_data"]
    assert data["record"]["inputs"] == {} and data["record"]["config"]["split"] == "train"
    assert evaluation["record"]["inputs"]["eval_data"]["sha256"] == sha256_file("eval.parquet")
    assert read_record("model/model.safetensors")["config_hash"] == config_hash(spec)

    shown = CliRunner().invoke(main, ["provenance", "fig.png"])
    assert shown.exit_code == 0, shown.output
    for needle in ("rule", "train.parquet", "eval.parquet", "model/model.safetensors",
                   sha256_file("train.parquet")[:12], '"seed":3'):
        assert needle in shown.output, needle


def test_provenance_of_a_file_without_record_fails_clearly(tmp_path):
    stray = tmp_path / "stray.png"
    stray.write_bytes(b"not a figure")
    shown = CliRunner().invoke(main, ["provenance", str(stray)])
    assert shown.exit_code != 0 and "no provenance record" in shown.output


def test_a_model_without_its_weights_is_traced_by_its_trainings_model_json(tmp_path, train_data, eval_data,
                                                                          monkeypatch):
    """Results brought back without weights (a GPU machine's): the chain reads the model's record
    from the model.json its training wrote beside it (the same record but for the artifact), says
    so, and goes on upstream; without stand-ins the model has no provenance."""
    from pipeline_src.planning.paths import same_job

    monkeypatch.chdir(tmp_path)
    spec = tiny_train_spec()
    train(spec, "train.parquet", "train/m", progress=lambda _: None)
    evaluate({"batch_size": 8, "seed": 2}, "train/m", "eval.parquet", "acc.parquet", progress=lambda _: None)
    for gone in ("train/m/model.safetensors", "train/m/model.safetensors.prov.json"):
        (tmp_path / gone).unlink()

    assert "missing" in trace("acc.parquet")["upstream"]["model"]
    model = trace("acc.parquet", stand_ins=same_job)["upstream"]["model"]
    assert model["stood_in"] == "train/m/model.json" and "artifact" not in model["record"]
    assert model["record"]["config"] == spec and model["upstream"]["train_data"]["record"]["config"]["split"] == "train"
    shown = CliRunner().invoke(main, ["provenance", "acc.parquet"])
    assert shown.exit_code == 0 and "[not here; its job's record, read from train/m/model.json]" in shown.output, shown.output
    assert same_job("eval/x/accuracy.parquet") == []
