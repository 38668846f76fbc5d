"""A step run by hand is checked like the pipeline's (issue 64, item 4): every ``lengthgen`` step
checks its ``--spec`` with the config schema's rules of the fields it holds and the config check's
cross-field rules, and names inputs that do not fit, before reading or writing anything; every spec
the workflow makes passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.config.model_config import model_config
from pipeline_src.planning import jobs, spec_check
from pipeline_src.planning import language_jobs as lang
from pipeline_src.planning.load_config import load_config
from pipeline_src.planning.studies import figures, study_of
from pipeline_src.provenance.sidecars import sidecar_path
from pipeline_src.tasks import get_task
from tests.conftest import REPO, tiny_train_spec, write_dataset
from tests.helpers import write_data


def failed(args: list, *named: str, nothing_under: Path | None = None) -> str:
    """``lengthgen ARGS``, which must fail in one line naming each of ``named`` and write nothing
    under ``nothing_under``; the line."""
    done = CliRunner().invoke(main, [str(arg) for arg in args])
    line = done.output.strip()
    assert done.exit_code == 1 and "\n" not in line and "Traceback" not in line, done.output
    assert all(name in line for name in named), line
    if nothing_under is not None:
        assert not nothing_under.exists() or not any(nothing_under.iterdir()), sorted(nothing_under.iterdir())
    return line


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def train_args(spec: dict, train_data, out: Path) -> list:
    return ["train", "--spec", json.dumps(spec), "--train-data", train_data, "--out-dir", out / "model"]


def test_a_negative_step_count_is_named_before_anything_is_written(train_data, out):
    line = failed(train_args(tiny_train_spec(steps=-5), train_data, out), "spec field train.steps", "-5",
                  nothing_under=out)
    assert line == "Error: spec field train.steps: -5 is less than the minimum of 1"


def test_an_unknown_key_is_named_with_the_key_it_may_mean(train_data, out):
    spec = tiny_train_spec()
    spec["train"]["stepz"] = 5
    failed(train_args(spec, train_data, out), "spec field train: unknown key ('stepz' was unexpected)",
           "(did you mean 'steps'?)", nothing_under=out)


@pytest.mark.parametrize("edit, named", [
    ({"k_train": 3}, "spec field k_train=3: variant k2 trains on K_train 2"),
    ({"model": {"n_head": 3}}, "spec field model.d_model=32: must be divisible by n_head=3"),
    ({"positions": {"target_length": 20}}, "spec field positions.target_length=20 is not above the largest "
                                           "training position ID (52) of scheme rope_pose (the longest samples of"),
    ({"variant": "k3", "k_train": 3}, "has k_train=2 (its provenance record), but the spec's variant k3 has k_train=3"),
    ({"task": "parity_scratchpad", "variant": "scratchpad"}, "spec: unknown key ('k_train' was unexpected)"),
    ({"device": "gpu"}, "spec field device: 'gpu' is not one of ['auto', 'cpu', 'cuda']"),
])
def test_a_training_spec_breaking_a_rule_of_the_config_check_names_the_field(train_data, out, edit, named):
    spec = tiny_train_spec()
    for key, value in edit.items():
        spec[key] = {**spec[key], **value} if isinstance(value, dict) else value
    failed(train_args(spec, train_data, out), named, nothing_under=out)


def test_the_curriculum_is_refused_for_a_task_without_k_train(out):
    spec = {**tiny_train_spec(), "task": "parity_scratchpad", "variant": "scratchpad"}
    del spec["k_train"]
    spec["train"]["curriculum"] = {"start": 1, "every": 10, "threshold": 0.8}
    data = write_data(out.parent / "parity.parquet", "parity_scratchpad", "train",
                      {"n_min": 1, "n_max": 4, "scratchpad": True, "n_samples": 10}, 1)
    failed(train_args(spec, data, out), "spec field train.curriculum: a curriculum over k needs a task trained on "
                                        "k_train", nothing_under=out)


def test_training_data_of_another_task_is_named_before_it_is_read(out):
    data = write_data(out.parent / "parity.parquet", "parity_scratchpad", "train",
                      {"n_min": 1, "n_max": 4, "scratchpad": True, "n_samples": 10}, 1)
    failed(train_args(tiny_train_spec(), data, out), f"--train-data {data} is the train set of task "
                                                     "parity_scratchpad", "not a train set of task sparse_parity",
           nothing_under=out)


@pytest.fixture
def sparse_parity_model(tmp_path, train_data):
    from pipeline_src.training.train import train

    train(tiny_train_spec(steps=2), train_data, tmp_path / "model", progress=lambda line: None)
    return tmp_path / "model"


def evaluate_args(spec: dict, model, eval_data, out: Path) -> list:
    return ["evaluate", "--spec", json.dumps(spec), "--model-dir", model, "--eval-data", eval_data,
            "--out", out / "accuracy.parquet", "--mechanism-dir", out / "mechanism"]


EVAL_SPEC = {"batch_size": 4, "seed": 2, "device": "cpu", "precision": "fp32", "mechanism_samples": 2}


def test_a_model_and_evaluation_data_of_different_tasks_are_both_named(sparse_parity_model, out):
    data = write_data(out.parent / "parity_eval.parquet", "parity_scratchpad", "eval",
                      {"lengths": [2, 4], "scratchpad": True, "n_per_cell": 3}, 1)
    failed(evaluate_args(EVAL_SPEC, sparse_parity_model, data, out),
           f"--model-dir {sparse_parity_model} holds a model of task sparse_parity (its model.json)",
           f"--eval-data {data} is the evaluation set of task parity_scratchpad", nothing_under=out)


def test_evaluation_ids_beyond_the_models_table_are_named(tmp_path, train_data, out):
    from pipeline_src.training.train import train

    spec = tiny_train_spec("abs_shift", steps=1)
    spec["model"]["max_positions"] = spec["positions"]["target_length"] = 64
    train(spec, train_data, tmp_path / "abs", progress=lambda line: None)
    grid = write_dataset(tmp_path / "long.parquet", "eval", {"k_test": [1], "lengths": [80], "n_per_cell": 2})
    failed(evaluate_args(EVAL_SPEC, tmp_path / "abs", grid, out), f"--model-dir {tmp_path / 'abs'}: "
           "model.max_positions=64 is too small for scheme abs_shift", f"of --eval-data {grid}", nothing_under=out)


@pytest.mark.parametrize("spec, named", [
    ({**EVAL_SPEC, "batch_size": 0}, "spec field batch_size: 0 is less than the minimum of 1"),
    ({**EVAL_SPEC, "batch_sise": 4}, "(did you mean 'batch_size'?)"),
    ({key: value for key, value in EVAL_SPEC.items() if key != "mechanism_samples"},
     "spec: 'mechanism_samples' is a required property (the mechanism analysis reads it)"),
])
def test_an_evaluation_spec_breaking_a_rule_names_the_field(sparse_parity_model, eval_data, out, spec, named):
    failed(evaluate_args(spec, sparse_parity_model, eval_data, out), named, nothing_under=out)


CORPUS = {"source": "default", "path": None, "max_docs": 5, "heldout_fraction": 0.5, "split_seed": 0}
FIGURE2 = {"task": "parity_scratchpad", "runs": {"scratchpad": ["ppc"]}, "seeds": [0], "x_scale": "linear",
           "train_lengths": [1, 20]}


@pytest.mark.parametrize("command, spec, outputs, named", [
    (["generate"], {"task": "sparse_parity", "split": "train", "seed": 1,
                    "params": {"k_train": 2, "l_min": 3, "l_max": 5, "n_sample": 4}}, ["--out"],
     "spec field params: unknown key ('n_sample' was unexpected) (did you mean 'n_samples'?)"),
    (["generate"], {"task": "sparse_parity", "split": "train", "seed": 1}, ["--out"],
     "spec: 'params' is a required property"),
    (["corpus"], {"corpus": CORPUS, "tokenizer": {"path": None}}, ["--tokenizer-out", "--tokens-out"],
     "spec field tokenizer: give path"),
    (["corpus"], {"corpus": {**CORPUS, "heldout_fraction": 1.5}, "tokenizer": {"vocab_size": 300}},
     ["--tokenizer-out", "--tokens-out"], "spec field corpus.heldout_fraction: 1.5 is greater than or equal to"),
    (["plot", "figure2"], {**FIGURE2, "x_scael": "log"}, ["--out"],
     "spec: unknown key ('x_scael' was unexpected) (did you mean 'x_scale'?)"),
    (["plot", "figure2"], {**FIGURE2, "seeds": [-1]}, ["--out"], "spec field seeds[0]: -1 is less than the minimum"),
])
def test_each_step_checks_its_spec(tmp_path, out, command, spec, outputs, named):
    inputs = [tmp_path / "table.parquet"] if command[0] == "plot" else []
    for path in inputs:
        path.write_bytes(b"")
    written = [arg for option in outputs for arg in (option, out / option.strip("-"))]
    failed([*command, "--spec", json.dumps(spec), *written, *inputs], named, nothing_under=out)


# --- every spec the workflow makes passes ------------------------------------------------------------

STEP = {"train_data": "generate", "eval_data": "generate", "train": "train", "evaluate": "evaluate",
        "language_corpus": "corpus", "language_train": "lm_train", "language_eval": "lm_eval",
        "language_influence": "influence"}  # each rule's command (workflow/rules/*.smk)
# the options no shipped config sets: a curriculum over k (Figure 1) and screened influence targets
CURRICULUM = ("sparse_parity: {train: {curriculum: {start: 1, every: 100, threshold: 0.8}}}\n"
              "language: {analysis: {screen: true}}\n")


def recorded(path: Path, spec: dict) -> Path:
    """``path`` standing for a file its job made with ``spec``: its provenance record alone."""
    sidecar_path(path).write_text(json.dumps({"config": spec}))
    return path


@pytest.mark.parametrize("configfiles", [(), ("config/smoke.yaml",), ("curriculum",)])
def test_every_spec_the_workflow_makes_passes(tmp_path, configfiles):
    (tmp_path / "curriculum").write_text(CURRICULUM)
    config = load_config([tmp_path / f if f == "curriculum" else REPO / f for f in configfiles],
                         base=REPO / "config" / "config.yaml")
    checked = dict.fromkeys(STEP, 0)
    for figure in figures(config):
        study = study_of(figure)
        spec_check.plot(figure, study.figure_spec(config, figure), captioned=True)
        for rule, specs in study.upstream_specs(config, figure).items():
            for spec in specs:
                getattr(spec_check, STEP[rule])(spec)
                checked[rule] += 1
    for task in jobs.tasks(config):
        for cell in jobs.cells(config, task):
            check_with_inputs(config, cell, tmp_path)
    assert all(checked.values()), checked
    if configfiles == ("curriculum",):
        trained = study_of("figure1").upstream_specs(config, "figure1")["train"]
        assert all("curriculum" in spec["train"] for spec in trained)


def check_with_inputs(config: dict, cell: dict, folder: Path) -> None:
    """The training and evaluation specs of ``cell`` checked with inputs recorded as its jobs make them."""
    task, variant, scheme = cell["task"], cell["variant"], cell["scheme"]
    train = jobs.train_spec(config, task, variant, scheme, cell["seed"])
    train_data = recorded(folder / "train.parquet", jobs.train_data_spec(config, task, variant))
    spec_check.train(train, train_data)
    model = folder / "model"
    model.mkdir(exist_ok=True)
    (model / "model.json").write_text(json.dumps({
        "task": task, "variant": variant, "scheme": scheme,
        "model_config": model_config(train, len(get_task(task).vocab)).to_dict()}))
    eval_data = recorded(folder / "eval.parquet", jobs.eval_data_spec(config, task, variant))
    spec_check.evaluate(jobs.eval_spec(config, task), model, eval_data, mechanism=True)


def test_the_language_specs_are_checked_by_the_analysis_rules():
    config = load_config([], base=REPO / "config" / "config.yaml")
    with pytest.raises(spec_check.SpecError, match=r"spec field targets\.local=.*must be shorter than the context"):
        spec = lang.eval_spec(config)
        spec_check.lm_eval({**spec, "targets": {**spec["targets"], "local": spec["targets"]["context"]}})
    with pytest.raises(spec_check.SpecError, match=r"spec field k_max=.*cannot choose more than"):
        spec_check.influence({**lang.influence_spec(config), "k_max": 10 ** 6})
    with pytest.raises(spec_check.SpecError, match=r"spec field train: unknown key \('pad_multiple'"):
        spec = lang.train_spec(config, lang.MAIN)
        spec_check.lm_train({**spec, "train": {**spec["train"], "pad_multiple": 8}})
