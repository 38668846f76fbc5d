"""train.steps as a map from K_train to steps (tasks trained on k_train): each model's own steps in its
spec, one number in a later layer replacing the map, and the config errors that name the field."""

from __future__ import annotations

import re

import pytest
import yaml

from pipeline_src.config.layers import ConfigError, merge_layers
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import validate
from tests.conftest import REPO
from tests.helpers import edited

# K_train 2 and 4 on the paper's law: the base these tests layer over, whatever the default's
PLAIN = {"k_train": [2, 4], "train": {"steps": 100, "curriculum": None}}
BASE = edited(sparse_parity=PLAIN)


def specs(config: dict) -> dict:
    return {(cell["variant"], cell["seed"]): jobs.train_spec(config, "sparse_parity", cell["variant"], cell["scheme"],
                                                             cell["seed"])
            for cell in jobs.cells(config, "sparse_parity")}


def test_each_k_train_trains_its_own_steps_and_only_the_changed_ones_specs_change():
    config = edited(sparse_parity={**PLAIN, "train": {"steps": {2: 100, 4: 1234}, "curriculum": None}})
    jobs.check(config)
    before, after = specs(BASE), specs(config)
    assert {key for key in before if before[key] != after[key]} == {key for key in before if key[0] == "k4"}
    assert {variant: spec["train"]["steps"] for (variant, _), spec in after.items()} == {"k2": 100, "k4": 1234}


def test_keys_from_the_command_line_are_read_as_k_train_the_later_layer_wins_and_others_are_unused():
    config = edited(sparse_parity={**PLAIN, "train": {"steps": {2: 100, 4: 200, "4": 300, 8: 9}, "curriculum": None}})
    jobs.check(config)
    assert config["sparse_parity"]["train"]["steps"] == {2: 100, 4: 300, 8: 9}
    assert specs(config)[("k4", 0)]["train"]["steps"] == 300


def test_one_number_in_a_later_layer_replaces_the_map():
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert isinstance(base["sparse_parity"]["train"]["steps"], dict)  # the default's Figure 1 recipe
    for override in ({"sparse_parity": {"train": {"steps": 7}}}, {"defaults": {"train": {"steps": 7}}}):
        config = merge_layers([base, override])
        validate(config)
        assert {spec["train"]["steps"] for spec in specs(config).values()} == {7}, override


@pytest.mark.parametrize("steps, message", [
    ({"k4": 100}, "sparse_parity.train.steps: 'k4' is not a K_train (a positive integer)"),
    ({2: 100}, "sparse_parity.train.steps names no steps for K_train 4 (it names 2)"),
])
def test_the_check_names_the_field(steps, message):
    config = edited(sparse_parity={**PLAIN, "train": {"steps": steps}})
    with pytest.raises(jobs.TaskConfigError, match=re.escape(message)):
        jobs.check(config)


@pytest.mark.parametrize("task, steps", [("sparse_parity", {4: 0}), ("sparse_parity", {4: 2.5}), ("sparse_parity", {}),
                                         ("parity_scratchpad", {4: 100})])
def test_the_schema_names_a_bad_step_count_or_a_map_where_there_is_no_k_train(task, steps):
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw[task]["train"] = {**raw[task].get("train", {}), "steps": steps}
    with pytest.raises(ConfigError, match=re.escape(f"{task}.train.steps")):
        validate(raw)


def test_null_turns_off_the_curriculum_of_a_config_layered_under():
    recipe = {"k_train": [2, 4], "train": {"steps": 100, "curriculum": {"start": 1, "every": 10, "threshold": 0.9}}}
    turned_off = edited(sparse_parity={**recipe, "train": {"steps": 100, "curriculum": None}})
    written_nowhere = edited(sparse_parity={"k_train": [2, 4], "train": {"steps": 100}})
    written_nowhere["sparse_parity"]["train"].pop("curriculum", None)
    for config in (edited(sparse_parity=recipe), turned_off, written_nowhere):
        jobs.check(config)
    assert specs(edited(sparse_parity=recipe)) != specs(written_nowhere)
    assert specs(turned_off) == specs(written_nowhere)
    assert all("curriculum" not in spec["train"] for spec in specs(turned_off).values())
