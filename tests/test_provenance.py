"""Provenance: records, sidecars, embedded metadata, the chain from a figure back to data, and the
shipped config a figure was made with."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.evaluation.evaluate import evaluate
from pipeline_src.figures import figure1
from pipeline_src.planning import paths
from pipeline_src.planning.load_config import load_config
from pipeline_src.planning.studies import study_of
from pipeline_src.provenance.sidecars import PARQUET_KEY, read_record, sidecar_path, trace
from pipeline_src.storage.canonical import canonical_json, config_hash, sha256_file
from pipeline_src.training.train import train
from tests.conftest import REPO, tiny_train_spec
from tests.helpers import F2_TASK, recorded_runs


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
    figure_spec = {"task": "sparse_parity", "runs": {"k2": ["rope_pose"]}, "seeds": [3], "x_scale": "log",
                   "train_lengths": [20, 50]}
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
    assert (shown.exit_code == 0
            and "[not here; its job's record, read from train/m/model.json]" in shown.output), shown.output
    assert same_job("eval/x/accuracy.parquet") == []


def drawn(config: dict, figure: str) -> Path:
    """``figure`` drawn by ``lengthgen plot`` as its rule draws it, from the tables of ``config``'s
    runs that recorded_runs put under results/ (with their jobs' records)."""
    recorded_runs(Path(paths.RESULTS), config)
    study = study_of(figure)
    outputs = paths.figure_files(figure)
    Path(outputs[0]).parent.mkdir(parents=True, exist_ok=True)
    done = CliRunner().invoke(main, ["plot", figure, "--rule", f"plot_{figure}",
                                     "--spec", canonical_json(study.figure_spec(config, figure)),
                                     *(f"--out={path}" for path in outputs), *study.figure_tables(config, figure)])
    assert done.exit_code == 0, done.output
    return Path(outputs[0])


@pytest.fixture
def shipped_configs(tmp_path, monkeypatch):
    """A run's working directory with the shipped configs in config/."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").symlink_to(REPO / "config")


def test_a_figure_names_the_shipped_config_it_was_made_with(shipped_configs):
    figure = drawn(load_config([Path("config/smoke.yaml")]), "figure2")
    shown = CliRunner().invoke(main, ["provenance", str(figure)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("config: its record matches config/smoke.yaml (--configfile config/smoke.yaml)"
                                   ", the first shipped layering that does\n"
                                   "results/figures/figure2.png\n"), shown.output
    as_json = CliRunner().invoke(main, ["provenance", "--json", str(figure)])
    assert json.loads(as_json.output)["shipped_configfiles"] == ["config/smoke.yaml"]


def test_a_figure_of_no_shipped_config_says_so(shipped_configs, tmp_path):
    own = tmp_path / "own.yaml"
    own.write_text(f"{F2_TASK}:\n  eval:\n    n_per_cell: 8\n")
    figure = drawn(load_config([own]), "figure2")
    shown = CliRunner().invoke(main, ["provenance", str(figure)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("config: no shipped layering (config/config.yaml alone, with one file of config/, "
                                   "or two in either order) gives every value its record holds\n"), shown.output
    table = CliRunner().invoke(main, ["provenance", paths.INFLUENCE])  # not a figure: no config named
    assert table.exit_code == 0 and not table.output.startswith("config:"), table.output
