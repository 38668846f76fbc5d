"""One place for each default and rule: the model's and the influence analysis's fields declare them
(``ModelConfig``, ``InfluenceConfig``), and the config's ``model`` and ``language.analysis`` blocks are
generated from those. So a config that leaves a field out runs with the dataclass's default, and the
config check and the dataclass reject the same values."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from pipeline_src.config.influence_config import InfluenceConfig, InfluenceError
from pipeline_src.config.layers import ConfigError
from pipeline_src.config.model_config import ModelConfig, ModelConfigError
from pipeline_src.planning import jobs, language_jobs
from pipeline_src.planning.load_config import validate
from tests.conftest import default_config


def declared_defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls)
            if f.metadata["config"] and f.metadata["written"] and f.default is not dataclasses.MISSING}


def test_a_task_that_sets_no_model_field_trains_with_modelconfigs_defaults():
    config = default_config()
    cell = jobs.cells(config, "sparse_parity_scratchpad")[0]  # its section sets only max_positions
    model = jobs.train_spec(config, cell["task"], cell["variant"], cell["scheme"], cell["seed"])["model"]
    expected = {**declared_defaults(ModelConfig), "d_mlp": 256, "max_positions": 320}  # written in config.yaml
    assert model == expected
    assert "attention_scale" not in model, "an absent attention_scale means none and is not written"


def test_the_influence_analysis_takes_influenceconfigs_defaults():
    spec = language_jobs.influence_spec(default_config())
    analysed = {key: spec[key] for key in declared_defaults(InfluenceConfig)}
    assert analysed == declared_defaults(InfluenceConfig)
    assert InfluenceConfig(context=spec["context"], local=spec["local"], **analysed).n_targets == spec["n_targets"]


def test_leave_out_enters_both_draws_specs_only_where_it_is_set():
    """The analysis and the models' target losses draw the same targets; a config without leave_out
    gives the specs of before the field (no job reruns)."""
    config = default_config()
    assert "leave_out" not in language_jobs.influence_spec(config)
    assert "leave_out" not in language_jobs.eval_spec(config)["targets"]
    edited = copy.deepcopy(config)
    edited["language"]["analysis"]["leave_out"] = {"seed": 0, "n_targets": 32}
    validate(edited)
    assert language_jobs.influence_spec(edited)["leave_out"] == {"seed": 0, "n_targets": 32}
    assert language_jobs.eval_spec(edited)["targets"]["leave_out"] == {"seed": 0, "n_targets": 32}
    edited["language"]["analysis"]["leave_out"] = {"seed": 0}
    with pytest.raises(ConfigError, match="language.analysis.leave_out"):
        validate(edited)


@pytest.mark.parametrize("field, bad", [("d_model", 0), ("rotary_pct", 1.5), ("attention_scale", "cubic"),
                                        ("parallel_residual", "yes"), ("d_mlp", -4)])
def test_the_config_check_and_modelconfig_reject_the_same_model_values(field, bad):
    config = default_config()
    edited = copy.deepcopy(config)
    edited["variable_assignment"]["model"][field] = bad
    with pytest.raises(ConfigError, match=f"variable_assignment.model.{field}"):
        validate(edited)
    with pytest.raises(ModelConfigError, match=f"ModelConfig.{field}="):
        ModelConfig(vocab_size=8, **{field: bad})


@pytest.mark.parametrize("field, bad", [("k_max", 0), ("selection", "all"), ("seed", -1), ("null_draws", 1.5)])
def test_the_config_check_and_influenceconfig_reject_the_same_analysis_values(field, bad):
    edited = copy.deepcopy(default_config())
    edited["language"]["analysis"][field] = bad
    with pytest.raises(ConfigError, match=f"language.analysis.{field}"):
        validate(edited)
    with pytest.raises(InfluenceError, match=f"InfluenceConfig.{field}="):
        InfluenceConfig(context=16, local=8, **{field: bad})
