"""One place for each default: the Python defaults of the model and the influence analysis are the
shipped config's (``config/config.yaml``), so a library call without a field and a pipeline run
without it in an override file build the same thing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from pipeline_src.language.influence_table import InfluenceConfig
from pipeline_src.model_config import ModelConfig

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())


def python_defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def test_the_model_defaults_are_the_configs():
    config, python = CONFIG["defaults"]["model"], python_defaults(ModelConfig)
    shared = (set(config) & set(python)) - {"d_mlp"}  # d_mlp: checked below
    assert shared >= {"d_model", "n_layer", "n_head", "max_positions", "rotary_pct", "rotary_base", "parallel_residual"}
    assert {name: python[name] for name in shared} == {name: config[name] for name in shared}
    assert 4 * config["d_model"] == config["d_mlp"]  # ModelConfig's d_mlp None means 4 * d_model


def test_the_influence_defaults_are_the_configs():
    language = CONFIG["language"]
    config = {"context": language["context"], "local": language["local"],
              **{k: v for k, v in language["analysis"].items() if k != "hf_model"}}
    python = python_defaults(InfluenceConfig)
    assert set(python) == set(config)
    assert python == config
