"""Config layers: config/config.yaml, each --configfile, then --config. A layer's ``defaults`` go over
the sections of the layers before it (every task's, and the language section's model and train), so
an override file writes a setting for every task once; its own sections still beat its defaults. The
Snakefile and the CLI read layers the same way."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from pipeline_src.config.layers import copied, merge_defaults, merge_layers, read_config
from pipeline_src.config.schema import coerced
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import load_config, validate
from tests.conftest import default_config
from tests.helpers import REPO, copy_workflow

OVERRIDE = {
    "defaults": {"model": {"d_model": 48}, "train": {"steps": 7}, "figure": {"x_scale": "log"}},
    "addition": {"train": {"steps": 9}},
}


def test_a_later_layers_defaults_beat_earlier_sections_and_lose_to_its_own():
    base = {"defaults": {"model": {"d_model": 64, "n_layer": 2}},
            "addition": {"model": {"d_model": 256}}, "language": {"model": {"d_model": 128}, "figure": {"n_boot": 5}}}
    merged = merge_layers([base, OVERRIDE, {"addition": {"model": {"n_layer": 3}}}])
    assert merged["addition"]["model"] == {"d_model": 48, "n_layer": 3}
    assert merged["addition"]["train"] == {"steps": 9}
    assert merged["language"]["model"] == {"d_model": 48} and merged["language"]["train"] == {"steps": 7}
    assert merged["language"]["figure"] == {"n_boot": 5}, "the language section takes only model and train"
    # one layer alone: its sections beat its defaults, as before layers
    assert merge_layers([base]) == base


def test_a_loaded_config_shares_no_mapping_or_list_between_its_sections_or_with_its_layers():
    """Every section merged over the same ``defaults``, and values a YAML alias repeats, are each their
    own: filling one task's defaults in place leaves the others and the files read unchanged."""
    text = "shared: &steps {steps: 7}\ndefaults: {train: *steps, model: {d_model: 48}}\nmore: *steps\n"
    layer = yaml.safe_load(text)
    assert layer["shared"] is layer["more"]
    merged = merge_layers([layer, {"addition": {}, "parity_scratchpad": {}}])
    merge_defaults(merged)
    assert merged["addition"]["model"] == merged["parity_scratchpad"]["model"] == {"d_model": 48}
    assert merged["addition"]["model"] is not merged["parity_scratchpad"]["model"]
    assert merged["shared"] is not merged["more"] and merged["shared"] is not layer["shared"]
    config = default_config()
    tasks = [value for value in config.values() if isinstance(value, dict) and "model" in value]
    assert len({id(task["model"]) for task in tasks}) == len(tasks) > 1
    assert copied(layer) == layer and copied(layer)["shared"] is not copied(layer)["more"]


def test_an_override_files_defaults_reach_every_task_and_the_language_model(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump(OVERRIDE))
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert base["addition"]["model"]["d_model"] != 48 and base["variable_assignment"]["model"]["d_model"] != 48
    config = load_config([override], base=REPO / "config" / "config.yaml")
    for task in jobs.tasks(config):
        assert config[task]["model"]["d_model"] == 48, task
        assert config[task]["train"]["steps"] == (9 if task == "addition" else 7), task
        assert config[task]["figure"]["x_scale"] == "log", task
    assert config["language"]["model"]["d_model"] == 48 and config["language"]["train"]["steps"] == 7
    # what the base config's sections set and the override leaves alone stays
    assert config["addition"]["model"]["d_mlp"] == base["addition"]["model"]["d_mlp"]
    assert config["language"]["train"]["betas"] == base["language"]["train"]["betas"]


@pytest.mark.e2e
def test_the_snakefile_layers_the_config_as_the_cli_does(tmp_path):
    workdir = copy_workflow(tmp_path)
    (workdir / "config" / "override.yaml").write_text(yaml.safe_dump(OVERRIDE))
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "figure1", "--configfile",
         "config/override.yaml", "--config", "device=cpu", 'defaults={"seeds": [0, 1, 2], "train": {"lr": 2e-3}}'],
        cwd=workdir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    specs = [json.loads(found) for found in re.findall(r"lengthgen train --rule train --spec '([^']*)'", done.stdout)]
    command_line = {"device": "cpu", "defaults": {"seeds": [0, 1, 2], "train": {"lr": 2e-3}}}
    config, _ = read_config([workdir / "config" / "override.yaml"], base=workdir / "config" / "config.yaml",
                            command_line=command_line)
    validate(config)
    assert specs and all(spec["model"]["d_model"] == 48 and spec["train"]["steps"] == 7 for spec in specs)
    assert all(spec["device"] == "cpu" and spec["train"]["lr"] == 2e-3 for spec in specs), "--config is the last layer"
    assert {spec["seed"] for spec in specs} == {0, 1, 2}, "a nested --config value reaches every task"
    expected = {json.dumps(jobs.train_spec(config, c["task"], c["variant"], c["scheme"], c["seed"]),
                           sort_keys=True) for c in jobs.cells(config, "sparse_parity")}
    assert {json.dumps(spec, sort_keys=True) for spec in specs} == expected


def test_nested_command_line_values_are_read_by_the_schemas_types():
    # Snakemake reads `--config 'defaults={"seeds": [0, 1]}'` with YAML's BaseLoader: every scalar a string
    layer = {"defaults": {"seeds": ["0", "1"], "train": {"lr": "1e-3", "steps": "7", "precision": "bf16"},
                          "model": {"parallel_residual": "false"}},
             "language": {"tokenizer": {"path": "null"}, "analysis": {"hf_model": "smollm2"}},
             "addition": {"runs": {"direct": ["ppc"]}}, "unknown": {"x": "1"}}
    assert coerced(layer) == {
        "defaults": {"seeds": [0, 1], "train": {"lr": 1e-3, "steps": 7, "precision": "bf16"},
                     "model": {"parallel_residual": False}},
        "language": {"tokenizer": {"path": None}, "analysis": {"hf_model": "smollm2"}},
        "addition": {"runs": {"direct": ["ppc"]}}, "unknown": {"x": "1"}}
    assert coerced({"defaults": {"seeds": ["zero"]}}) == {"defaults": {"seeds": ["zero"]}}, (
        "left for validation to name")
