"""From config to job specs: variants, cells, target lengths and cross-field checks."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from pipeline_src.config.layers import ConfigError
from pipeline_src.planning import jobs
from pipeline_src.planning.load_config import load_config, validate
from pipeline_src.storage.canonical import canonical_json
from pipeline_src.tasks import get_task
from tests.helpers import DEFAULT, edited, merged

REPO = Path(__file__).resolve().parents[1]


def test_default_config_passes_and_lists_every_task_and_figure():
    jobs.check(DEFAULT)
    assert jobs.figures(DEFAULT) == ["figure1", "figure2", "figure3", "sparse_parity_scratchpad", "addition"]


def test_sparse_parity_variants_are_k_train_values():
    config = edited(sparse_parity={"k_train": [3, 1], "schemes": ["rope", "nope"], "seeds": [1, 0],
                                   "train": {"steps": 100}})
    cells = jobs.cells(config, "sparse_parity")
    assert [(c["variant"], c["scheme"], c["seed"]) for c in cells][:3] == [("k1", "rope", 0), ("k1", "rope", 1),
                                                                            ("k1", "nope", 0)]
    assert len(cells) == 8
    spec = jobs.train_data_spec(config, "sparse_parity", "k3")
    assert spec["params"] == {"k_train": 3, "l_min": 10, "l_max": 25,
                              "n_samples": DEFAULT["sparse_parity"]["data"]["n_train"]}
    assert jobs.train_spec(config, "sparse_parity", "k3", "rope", 0)["k_train"] == 3
    assert jobs.eval_data_name("sparse_parity", "k1") == jobs.eval_data_name("sparse_parity", "k3") == "eval"


def test_variable_assignment_variants_set_the_scratchpad_flag_of_both_datasets():
    config = edited(variable_assignment={"seeds": [0, 1], "runs": {"scratchpad": ["ppc"], "direct": ["rope_pose"]}})
    assert [(c["variant"], c["scheme"]) for c in jobs.cells(config, "variable_assignment")][::2] == [
        ("scratchpad", "ppc"), ("direct", "rope_pose")]
    for variant, flag in (("scratchpad", True), ("direct", False)):
        assert jobs.train_data_spec(config, "variable_assignment", variant)["params"]["scratchpad"] is flag
        eval_params = jobs.eval_data_spec(config, "variable_assignment", variant)["params"]
        assert (eval_params["scratchpad"] is flag
                and eval_params["n_vars"] == config["variable_assignment"]["data"]["n_vars"])
    assert jobs.eval_data_name("variable_assignment", "direct") == "eval_direct"
    # the generators accept exactly these params
    get_task("variable_assignment").generate_eval(
        {**jobs.eval_data_spec(config, "variable_assignment", "direct")["params"], "n_per_cell": 2}, 0)


def test_position_loss_weight_only_in_ppc_specs():
    ppc = jobs.train_spec(DEFAULT, "parity_scratchpad", "scratchpad", "ppc", 0)
    coupled = jobs.train_spec(DEFAULT, "parity_scratchpad", "scratchpad", "coupled", 0)
    assert ppc["train"]["position_loss_weight"] == 1.0
    assert "position_loss_weight" not in coupled["train"]
    assert "position_loss_weight" in DEFAULT["parity_scratchpad"]["train"], "the config itself is untouched"


def test_target_length_covers_the_evaluation_ids_of_each_scheme():
    longest = max(DEFAULT["parity_scratchpad"]["eval"]["lengths"])
    task = get_task("parity_scratchpad")
    assert (jobs.target_length(DEFAULT, "parity_scratchpad", "coupled", "scratchpad")
            == task.max_position_id(longest) + 1)
    assert jobs.target_length(DEFAULT, "parity_scratchpad", "rope_pose", "scratchpad") == task.sequence_tokens(longest)
    config = edited(parity_scratchpad={"positions": {"target_length": 300}})
    assert jobs.target_length(config, "parity_scratchpad", "ppc", "scratchpad") == 300


@pytest.mark.parametrize("changes, message", [
    ({"variable_assignment": {"runs": {"scratch": ["ppc"]}}}, "variable_assignment.runs names variant 'scratch'"),
    ({"parity_scratchpad": {"runs": {"hints": ["rope"]}}}, "parity_scratchpad.runs names variant 'hints'"),
    ({"variable_assignment": {"data": {"n_vars": 20}}}, "variable_assignment.data.n_vars=20"),
    ({"variable_assignment": {"data": {"n_vars": 64, "name_tokens": 4}}},
     "variable_assignment.data.n_vars=64 is not a power A^4"),
    ({"variable_assignment": {"data": {"name_tokens": 0}}}, "variable_assignment.data.name_tokens"),
    ({"parity_scratchpad": {"data": {"n_min": 30}}}, "parity_scratchpad.data.n_min=30 exceeds n_max=20"),
    ({"parity_scratchpad": {"model": {"max_positions": 50}}}, "parity_scratchpad.model.max_positions=50"),
    ({"parity_scratchpad": {"positions": {"target_length": 12}}}, "parity_scratchpad.positions.target_length=12"),
    ({"sparse_parity_scratchpad": {"k_train": [30]}}, "sparse_parity_scratchpad.k_train value 30"),
    ({"sparse_parity": {"data": {"l_min": 60}}}, "sparse_parity.data.l_min=60 exceeds l_max="),
    ({"addition": {"data": {"n_min": 30}}}, "addition.data.n_min=30 exceeds n_max="),
    ({"parity_scratchpad": {"model": {"n_head": 3}}}, "parity_scratchpad.model.d_model="),
    ({"parity_scratchpad": {"model": {"rotary_pct": 0.01}}}, "parity_scratchpad.model.rotary_pct=0.01"),
    ({"sparse_parity": {"eval": {"k_test": [60], "lengths": [20, 50]}}},
     "sparse_parity.eval: the evaluation grid has no cell (eval.k_test=[60], eval.lengths=[20, 50])"),
])
def test_inconsistent_configs_name_the_field(changes, message):
    with pytest.raises(jobs.TaskConfigError, match=re.escape(message)):
        jobs.check(edited(**changes))


@pytest.mark.parametrize("model, message", [
    ({"n_head": 3}, "model.d_model=64: must be divisible by n_head=3"),
    ({"max_positions": 50}, "model.max_positions=50 must be >= positions.target_length="),
])
def test_a_hand_run_spec_breaks_the_rule_the_config_check_reports(model, message):
    """The config check and the training job state each model rule once (model_config.model_config):
    the config error is the spec's, prefixed by the task."""
    from pipeline_src.config.model_config import model_config

    config = edited(parity_scratchpad={"model": model})
    spec = jobs.train_spec(config, "parity_scratchpad", "scratchpad", "coupled", 0)
    with pytest.raises(ValueError, match=re.escape(message)):
        model_config(spec, len(get_task("parity_scratchpad").vocab))
    with pytest.raises(jobs.TaskConfigError, match=re.escape(f"parity_scratchpad.{message}")):
        jobs.check(config)


def test_tasks_need_their_section():
    config = copy.deepcopy(DEFAULT)
    del config["variable_assignment"]
    with pytest.raises(jobs.TaskConfigError, match="no variable_assignment section"):
        jobs.check(config)


def test_rope_schemes_need_no_table():
    # a small max_positions is fine when no scheme uses a learned table or a position head
    config = edited(parity_scratchpad={"runs": {"scratchpad": ["rope", "rope_pose", "nope"]},
                                       "model": {"max_positions": 8}})
    jobs.check(config)


# the shipped configs made to go over another one (their header says so), with it
OVER = {"gpu_window_range_low.yaml": ["figure1_range.yaml"], "gpu_window_range_high.yaml": ["figure1_range.yaml"]}


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "config").glob("*.yaml") if p.name != "config.yaml"))
def test_shipped_scale_configs_pass_the_cross_field_checks(name):
    load_config([REPO / "config" / file for file in [*OVER.get(name, []), name]], base=REPO / "config" / "config.yaml")


def test_smoke_config_is_tiny_for_every_task():
    smoke = load_config([REPO / "config" / "smoke.yaml"], base=REPO / "config" / "config.yaml")
    for task in jobs.tasks(smoke):
        assert smoke[task]["train"]["steps"] <= 50 and smoke[task]["model"]["d_model"] <= 32, task
        assert smoke[task]["data"]["n_train"] <= 2000 and smoke[task]["eval"]["n_per_cell"] <= 20, task


def all_specs(config: dict) -> dict:
    """Every job spec of ``config``'s synthetic tasks, keyed by job."""
    specs = {}
    for task in jobs.tasks(config):
        for c in jobs.cells(config, task):
            key = f"{task}/{c['variant']}/{c['scheme']}/{c['seed']}"
            specs[f"train {key}"] = jobs.train_spec(config, task, c["variant"], c["scheme"], c["seed"])
            specs[f"data {key}"] = (jobs.train_data_spec(config, task, c["variant"]),
                                    jobs.eval_data_spec(config, task, c["variant"]))
        specs[f"eval {task}"] = jobs.eval_spec(config, task)
    specs.update({f"figure {f}": jobs.figure_spec(config, f) for f in jobs.figures(config)})
    return {key: canonical_json(spec) for key, spec in specs.items()}


def test_where_a_value_is_written_changes_no_job_spec():
    """A default spelled out in a section, a section value moved to ``defaults``, keys reordered:
    the same specs, so nothing reruns."""
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    reference = all_specs(validated(copy.deepcopy(raw)))
    spelled = copy.deepcopy(raw)
    spelled["parity_scratchpad"]["train"]["lr"] = raw["defaults"]["train"]["lr"]
    spelled["addition"]["model"] = {**dict(reversed(list(raw["defaults"]["model"].items()))),
                                    **raw["addition"]["model"]}
    moved = copy.deepcopy(raw)
    moved["defaults"]["train"]["steps"] = raw["parity_scratchpad"]["train"]["steps"]
    del moved["parity_scratchpad"]["train"]
    for task in ("sparse_parity", "variable_assignment", "sparse_parity_scratchpad", "addition"):
        moved[task].setdefault("train", {}).setdefault("steps", raw["defaults"]["train"]["steps"])
    assert all_specs(validated(spelled)) == reference
    assert all_specs(validated(moved)) == reference
    changed = copy.deepcopy(raw)
    changed["defaults"]["train"]["lr"] = 5.0e-4
    differ = {key for key, spec in all_specs(validated(changed)).items() if spec != reference[key]}
    assert differ == {key for key in reference if key.startswith("train ")}, "a default reaches every task"


def validated(config: dict) -> dict:
    validate(config)
    return config


def test_errors_in_defaults_name_the_defaults_field():
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["defaults"]["train"]["lr"] = "fast"
    with pytest.raises(ConfigError, match=re.escape("defaults.train.lr")):
        validate(raw)
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    del raw["defaults"]["train"]["steps"]
    with pytest.raises(ConfigError, match=r"([a-z_]+)\.train: 'steps' is a required property \(write it in the "
                                               r"\1 section or in defaults\)"):
        validate(raw)


UNSAFE_NAMES = [  # a config value that would name a folder outside its cell's -> the field named
    ({"tasks": ["sparse_parity", "../x"]}, "tasks", "tasks lists unknown task '../x'"),
    ({"sparse_parity": {"schemes": ["rope", "a/b"]}}, "schemes", "sparse_parity.schemes: 'a/b'"),
    ({"sparse_parity": {"schemes": [".."]}}, "schemes", "sparse_parity.schemes: '..'"),
    ({"sparse_parity": {"k_train": ["../2"]}}, "k_train", "sparse_parity.k_train: '../2'"),
    ({"sparse_parity": {"k_train": [-1]}}, "k_train", "sparse_parity.k_train: '-1'"),
    ({"sparse_parity": {"seeds": [-1]}}, "seeds", "sparse_parity.seeds: -1 is not an integer >= 0"),
    ({"sparse_parity": {"seeds": ["0/../../x"]}}, "seeds", "sparse_parity.seeds: '0/../../x' is not an integer"),
    ({"variable_assignment": {"runs": {"../direct": ["rope"]}}}, "runs", "variable_assignment.runs: '../direct'"),
    ({"variable_assignment": {"runs": {"direct": ["../rope"]}}}, "direct",
     "variable_assignment.runs.direct: '../rope'"),
]


@pytest.mark.parametrize("changes, key, message", UNSAFE_NAMES)
def test_names_that_could_leave_results_are_rejected_naming_the_field(changes, key, message):
    """Rejected by the JSON schema (applied first) and by ``check`` alone."""
    from pipeline_src.config.schema import ConfigSchemaError, validate

    config = merged(DEFAULT, changes)
    with pytest.raises(ConfigSchemaError, match=re.escape(key)):
        validate(copy.deepcopy(config))
    with pytest.raises(jobs.TaskConfigError, match=re.escape(message)):
        jobs.check(config)


@pytest.mark.parametrize("name", ["task", "scheme", "variant", "seed"])
def test_wildcard_patterns_admit_no_path_separator_or_parent(name):
    pattern = jobs.PATH_PATTERNS[name]
    for unsafe in ("../x", "a/b", "..", "", "x/..", "/x"):
        assert not re.fullmatch(pattern, unsafe), (name, unsafe)
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert f'{name}=jobs.PATH_PATTERNS["{name}"]' in common, "the workflow constrains its wildcards with these"


def test_a_section_checked_before_is_filled_in_place_as_the_first_time():
    """The schema check judges each section once per process (``schema._valid_by_section``): a section
    met again gets the same defaults, filled into the very mapping given, and a field at fault beside
    sections met before is still named."""
    from pipeline_src.config import schema
    from pipeline_src.config.layers import merge_defaults, read_config

    raw = read_config([], REPO / "config" / "config.yaml")[0]
    merge_defaults(raw)  # as load_config checks it: each task section over ``defaults``
    first, again = copy.deepcopy(raw), copy.deepcopy(raw)
    schema.validate(first)
    section = again["addition"]
    assert ("addition", repr(raw["addition"])) in schema._SECTIONS  # the second check reads the first's
    schema.validate(again)
    assert again == first and again["addition"] is section
    bad = copy.deepcopy(raw)
    bad["addition"]["train"] = {**bad["addition"].get("train", {}), "steps": -5}
    with pytest.raises(schema.ConfigSchemaError, match=r"config field addition\.train\.steps: -5 is less than"):
        schema.validate(bad)
