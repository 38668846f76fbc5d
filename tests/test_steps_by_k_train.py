"""train.steps_by_k_train: the steps of each named K_train's models, resolved into each model's own
spec, and the config errors that name the field."""

from __future__ import annotations

import re

import pytest
import yaml

from pipeline_src.config.layers import ConfigError
from pipeline_src.config.load import validate
from pipeline_src.planning import jobs
from tests.conftest import REPO
from tests.helpers import edited

# K_train 2 and 4, each trained train.steps on the paper's law: the base these tests layer over, whatever the default's
PLAIN = {"k_train": [2, 4], "train": {"steps_by_k_train": None, "curriculum": None}}
BASE = edited(sparse_parity=PLAIN)


def specs(config: dict) -> dict:
    return {(cell["variant"], cell["seed"]): jobs.train_spec(config, "sparse_parity", cell["variant"], cell["scheme"],
                                                             cell["seed"])
            for cell in jobs.cells(config, "sparse_parity")}


def test_a_named_k_train_trains_its_own_steps_and_only_its_specs_change():
    config = edited(sparse_parity={"k_train": [2, 4], "train": {"steps_by_k_train": {4: 1234}, "curriculum": None}})
    jobs.check(config)
    before, after = specs(BASE), specs(config)
    assert {key for key in before if before[key] != after[key]} == {key for key in before if key[0] == "k4"}
    for (variant, _), spec in after.items():
        assert spec["train"]["steps"] == (1234 if variant == "k4" else BASE["sparse_parity"]["train"]["steps"])
        assert "steps_by_k_train" not in spec["train"]


def test_an_entry_for_a_k_train_not_trained_is_unused():
    config = edited(sparse_parity={"k_train": [2, 4], "train": {"steps_by_k_train": {4: 1234, 8: 9999}, "curriculum": None}})
    jobs.check(config)
    assert [spec["train"]["steps"] for spec in specs(config).values()] == [BASE["sparse_parity"]["train"]["steps"]] * 2 + [1234] * 2


def test_keys_from_the_command_line_are_read_as_k_train_and_the_later_layer_wins():
    config = edited(sparse_parity={"k_train": [2, 4], "train": {"steps_by_k_train": {2: 100, 4: 200, "4": 300}}})
    jobs.check(config)
    assert config["sparse_parity"]["train"]["steps_by_k_train"] == {2: 100, 4: 300}
    assert specs(config)[("k4", 0)]["train"]["steps"] == 300


@pytest.mark.parametrize("task, by_k, message", [
    ("sparse_parity", {"k4": 100}, "sparse_parity.train.steps_by_k_train: 'k4' is not a K_train (a positive integer)"),
    ("sparse_parity", {0: 100}, "sparse_parity.train.steps_by_k_train: 0 is not a K_train"),
    ("parity_scratchpad", {4: 100}, "parity_scratchpad.train.steps_by_k_train: steps per K_train need a task trained on k_train"),
])
def test_the_check_names_the_field(task, by_k, message):
    config = edited(**{task: {"train": {"steps_by_k_train": by_k}}})
    config["sparse_parity"]["k_train"] = [2, 4]
    with pytest.raises(jobs.TaskConfigError, match=re.escape(message)):
        jobs.check(config)


@pytest.mark.parametrize("steps", [0, 2.5, "many"])
def test_the_schema_names_a_bad_step_count(steps):
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["sparse_parity"]["train"] = {**raw["sparse_parity"].get("train", {}), "steps_by_k_train": {4: steps}}
    with pytest.raises(ConfigError, match=re.escape("steps_by_k_train")):
        validate(raw)


def test_null_turns_off_the_map_and_the_curriculum_of_a_config_layered_under():
    recipe = {"k_train": [2, 4], "train": {"steps_by_k_train": {4: 1234}, "curriculum": {"start": 1, "every": 10,
                                                                                         "threshold": 0.9}}}
    with_recipe = edited(sparse_parity=recipe)
    turned_off = edited(sparse_parity={**recipe, **PLAIN})
    for config in (with_recipe, turned_off):
        jobs.check(config)
    written_nowhere = edited(sparse_parity={"k_train": [2, 4]})
    for field in ("steps_by_k_train", "curriculum"):
        written_nowhere["sparse_parity"]["train"].pop(field, None)
    assert specs(with_recipe) != specs(written_nowhere)
    assert specs(turned_off) == specs(written_nowhere)
    assert all("curriculum" not in spec["train"] for spec in specs(turned_off).values())


def test_null_passes_the_schema():
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["sparse_parity"]["train"] = {**raw["sparse_parity"].get("train", {}), "steps_by_k_train": None,
                                     "curriculum": None}
    validate(raw)
