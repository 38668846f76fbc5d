"""From the validated pipeline config to the exact spec of each job.

Each function returns the config subset one job uses, nothing more: it becomes the job's
canonical-JSON param (so editing a value reruns exactly the jobs that use it) and the ``config``
of the artifact's provenance record. Pure and cheap: the Snakefile calls it at parse time.

A task's section trains one model per (variant, scheme, seed). A *variant* is one training set:

* sparse parity and its scratchpad version: one variant ``k{K}`` per K_train, every scheme of
  ``schemes`` trained on each (``k_train`` x ``schemes``);
* parity with a scratchpad and variable assignment: ``runs`` maps each variant, ``scratchpad``
  (the response works step by step) or ``direct`` (the response is the answer), to its schemes.
"""

from __future__ import annotations

import itertools
import re

from ..config.model_config import model_config
from ..devices.setting import device_setting
from ..schemes import get_scheme
from ..schemes.scheme import check_below_target
from ..tasks import TASKS, get_task


class TaskConfigError(ValueError):
    """A config that passes the JSON schema but is inconsistent across fields."""


# Each training cell's names become folders under results/ (results/train/{task}/{scheme}/{variant}/
# seed{seed}); the workflow's wildcard_constraints are these patterns. None admits "/" or "..", so no
# config value can produce a path outside results/.
PATH_PATTERNS = {"task": r"[a-z_]+", "scheme": r"[a-z_]+", "variant": r"[a-z0-9]+", "seed": r"\d+"}
FIGURE_TASK = {task.figure.name: name for name, task in TASKS.items()}  # figure name -> the task it shows
# The train fields only a scheme predicting position IDs (ppc) uses: the other schemes' specs leave them out.
POSITION_HEAD_TRAIN_FIELDS = ("position_loss_weight",)


def tasks(config: dict) -> list[str]:
    """The synthetic tasks this run trains and plots, in config order."""
    return list(config["tasks"])


def figures(config: dict) -> list[str]:
    """The figure of each synthetic task of the run, in config order."""
    return [get_task(task).figure.name for task in tasks(config)]


def variants(config: dict, task: str) -> dict[str, list[str]]:
    """Every training variant of ``task`` with the schemes trained on it."""
    return get_task(task).layout.variants_of(config[task])


def cells(config: dict, task: str) -> list[dict]:
    """Every training cell of ``task``: one dict per (variant, scheme, seed)."""
    seeds = sorted(config[task]["seeds"])
    return [{"task": task, "variant": variant, "scheme": scheme, "seed": seed}
            for variant, schemes in variants(config, task).items()
            for scheme, seed in itertools.product(schemes, seeds)]


def train_data_spec(config: dict, task: str, variant: str) -> dict:
    data = config[task]["data"]
    params = {**{f: data[f] for f in get_task(task).layout.data_fields}, **get_task(task).layout.params(variant),
              "n_samples": data["n_train"]}
    return {"task": task, "split": "train", "seed": data["seed"], "params": params}


def eval_data_name(task: str, variant: str) -> str:
    """File stem of the evaluation set a variant is scored on: shared unless the variant changes
    the response (scratchpad or direct)."""
    return get_task(task).layout.eval_name(variant)


def eval_data_spec(config: dict, task: str, variant: str) -> dict:
    section = config[task]
    ev = section["eval"]
    layout = get_task(task).layout
    params = {"lengths": sorted(ev["lengths"]), "n_per_cell": ev["n_per_cell"],
              **{f: section["data"][f] for f in layout.eval_data_fields}, **layout.eval_params(section, variant)}
    return {"task": task, "split": "eval", "seed": ev["seed"], "params": params}


def target_length(config: dict, task: str, scheme: str, variant: str) -> int:
    """All training position IDs stay below this (PoSE, shift, coupled offset): the configured
    value, or one past the largest ID any evaluation sample uses under ``scheme``."""
    configured = config[task]["positions"]["target_length"]
    if configured is not None:
        return configured
    return _largest_eval_id(config, task, scheme, variant) + 1


def _largest_eval_id(config: dict, task: str, scheme: str, variant: str) -> int:
    return largest_eval_id(task, scheme, eval_data_spec(config, task, variant)["params"])


def largest_eval_id(task: str, scheme: str, params: dict) -> int:
    """The largest position ID under ``scheme`` of the evaluation set generated with ``params``."""
    return _largest_id(task, scheme, params, max(params["lengths"]))


def _largest_id(task: str, scheme: str, params: dict, longest: int) -> int:
    t = get_task(task)
    if get_scheme(scheme).coupled:
        return t.max_position_id(longest, params)
    return t.sequence_tokens(longest, params) - 1


def check_target_length(task: str, scheme: str, params: dict, target: int) -> None:
    """Every training position ID of the training set generated with ``params`` below the target
    length ``target`` (:func:`check_below_target`), its longest samples' included; a ValueError
    naming ``positions.target_length``."""
    train_id = _largest_id(task, scheme, params, get_task(task).train_lengths(params)[1])
    try:
        check_below_target(train_id, target)
    except ValueError:
        raise ValueError(f"positions.target_length={target} is not above the largest training position ID "
                         f"({train_id}) of scheme {scheme}") from None


def train_spec(config: dict, task: str, variant: str, scheme: str, seed: int) -> dict:
    section = config[task]
    spec = {"task": task, "variant": variant, "scheme": scheme, "seed": seed, "device": device_setting(config),
            "model": dict(section["model"]), "train": dict(section["train"]),
            "positions": {"pose_chunks": section["positions"]["pose_chunks"],
                          "target_length": target_length(config, task, scheme, variant)}}
    k_train = get_task(task).layout.k_train(variant)
    spec["train"]["steps"] = train_steps(section["train"], k_train)  # the model's own, of a map per K_train
    if spec["train"].get("curriculum", {}) is None:  # null: none, the spec of a config that writes none
        del spec["train"]["curriculum"]
    if k_train is not None:
        spec["k_train"] = k_train
    if not get_scheme(scheme).predicts_positions:
        for field in POSITION_HEAD_TRAIN_FIELDS:  # unused: editing it must not retrain
            del spec["train"][field]
    return spec


def train_steps(train: dict, k_train: int | None) -> int:
    """The steps a model of ``k_train`` trains: ``train.steps``, or its entry there when that is a map
    from K_train to steps (keys made integers by :func:`check_steps`)."""
    steps = train["steps"]
    return steps[k_train] if isinstance(steps, dict) else steps


def eval_spec(config: dict, task: str) -> dict:
    """Evaluation of one model: ``precision`` (the task's train.precision) sets bf16 autocast on CUDA;
    ``mechanism_samples`` per cell are analysed for the mechanism (the probes drawn from ``seed``)."""
    ev = config[task]["eval"]
    return {"batch_size": ev["batch_size"], "seed": ev["seed"], "device": device_setting(config),
            "precision": config[task]["train"]["precision"], "mechanism_samples": config["mechanism"]["samples"]}


def mechanism_tasks(config: dict) -> list[str]:
    """The tasks of the config whose dependency sets are declared: each has a mechanism figure."""
    return [task for task in tasks(config) if get_task(task).dependencies is not None]


def figure_spec(config: dict, figure: str) -> dict:
    """A task figure's spec: what it draws, and the evaluated lengths (and k_test) its caption's
    finding is judged at (:mod:`pipeline_src.findings.judge`)."""
    task = FIGURE_TASK[figure]
    section = config[task]
    train_lengths = list(get_task(task).train_lengths(section["data"]))
    spec = {"task": task, "runs": variants(config, task), "seeds": sorted(section["seeds"]),
            "x_scale": section["figure"]["x_scale"], "train_lengths": train_lengths,
            "lengths": sorted(section["eval"]["lengths"]), **get_task(task).layout.figure_cells(section)}
    return spec


def check(config: dict) -> None:
    """Cross-field checks the JSON schema cannot express; errors name the field. Also (as the schema
    does) rejects any name that could not be a results folder, should the schema be bypassed."""
    for task in config["tasks"]:
        if task not in TASKS:
            raise TaskConfigError(f"tasks lists unknown task {task!r}; known: {list(TASKS)}")
        if task not in config:
            raise TaskConfigError(f"tasks lists {task!r} but the config has no {task} section")
    for task in tasks(config):
        _check_path_names(config, task)
        _check_task(config, task)


def _check_path_names(config: dict, task: str) -> None:
    """Every scheme, variant and seed of ``task`` names a single folder (see PATH_PATTERNS)."""
    section, layout = config[task], get_task(task).layout
    for seed in section["seeds"]:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise TaskConfigError(f"{task}.seeds: {seed!r} is not an integer >= 0")
    for cell in cells(config, task):
        fields = {"variant": f"{task}.{layout.variants_field}", "seed": f"{task}.seeds",
                  "scheme": f"{task}.{layout.schemes_field(cell['variant'])}"}
        for name, field in fields.items():
            value = str(cell[name])
            if not re.fullmatch(PATH_PATTERNS[name], value):
                shown = layout.as_configured(value) if name == "variant" else value
                raise TaskConfigError(f"{field}: {shown!r} cannot name a results folder "
                                  f"(the {name} must match {PATH_PATTERNS[name]!r})")


def _check_task(config: dict, task: str) -> None:
    section, declared = config[task], get_task(task)
    try:
        check_curriculum(task, section["train"])
        check_steps(section)
        declared.layout.check_variants(section)
        if declared.check_section is not None:
            declared.check_section(section)
    except ValueError as err:
        raise TaskConfigError(f"{task}.{err}") from None
    for variant in variants(config, task):
        _check_eval_grid(config, task, variant)
    for cell in cells(config, task):
        _check_positions(config, task, cell["scheme"], cell["variant"])


def check_curriculum(task: str, train: dict) -> None:
    """A ``train`` block with a curriculum over k only for a task trained on k_train; a ValueError
    naming ``train.curriculum``."""
    if train.get("curriculum") is not None and not get_task(task).layout.by_k_train:
        trained_on_k = ", ".join(name for name, declared in TASKS.items() if declared.layout.by_k_train)
        raise ValueError(f"train.curriculum: a curriculum over k needs a task trained on k_train ({trained_on_k})")


def check_steps(section: dict) -> None:
    """A section's ``train.steps`` given as a map from K_train to steps (the schema allows one for a task
    trained on k_train only): keys that are K_train values, one for every K_train the section trains (a
    K_train it does not train may be named too); its keys made integers in place (YAML reads ``8:`` as one,
    ``--config``'s JSON ``"8"`` as a string; of both, the one merged last, the later layer's, wins); a
    ValueError naming ``train.steps``."""
    steps = section["train"]["steps"]
    if not isinstance(steps, dict):
        return
    for key in steps:
        if not re.fullmatch(r"[1-9]\d*", str(key)):
            raise ValueError(f"train.steps: {key!r} is not a K_train (a positive integer)")
    section["train"]["steps"] = steps = {int(key): value for key, value in steps.items()}
    missing = sorted(set(section["k_train"]) - set(steps))
    if missing:
        raise ValueError(f"train.steps names no steps for K_train {', '.join(map(str, missing))} "
                         f"(it names {', '.join(map(str, sorted(steps)))})")


def _check_eval_grid(config: dict, task: str, variant: str) -> None:
    """The evaluation grid of ``variant`` has at least one cell (the task's ``eval_cells``, as its
    generator draws them), so no evaluation job fails on an empty grid after others ran."""
    params = eval_data_spec(config, task, variant)["params"]
    if not get_task(task).eval_cells(params):
        fields = ", ".join(f"eval.{name}={config[task]['eval'][name]}" for name in ("k_test", "lengths")
                           if name in config[task]["eval"])
        raise TaskConfigError(f"{task}.eval: the evaluation grid has no cell ({fields})")


def _check_positions(config: dict, task: str, scheme: str, variant: str) -> None:
    """The rules a training job checks of its spec and data, checked here on the config's longest
    samples: training IDs below the target length (:func:`check_below_target`), the model config
    (:func:`model_config`: d_model divisible by n_head, the encoding's needs, the target length
    within the position table), and the evaluation IDs within it (as the evaluation checks them)."""
    spec = train_spec(config, task, variant, scheme, seed=0)
    try:
        check_target_length(task, scheme, train_data_spec(config, task, variant)["params"],
                            spec["positions"]["target_length"])
        limit = model_config(spec, len(get_task(task).vocab)).position_limit
        check_position_limit(limit, _largest_eval_id(config, task, scheme, variant), scheme)
    except ValueError as err:
        raise TaskConfigError(f"{task}.{err}") from None


def check_position_limit(limit: int | None, eval_id: int, scheme: str) -> None:
    """The largest evaluation position ID ``eval_id`` below the model's ``limit``
    (:attr:`~pipeline_src.config.model_config.ModelConfig.position_limit`; None: none); a ValueError naming
    ``model.max_positions``."""
    if limit is not None and eval_id >= limit:
        raise ValueError(f"model.max_positions={limit} is too small for scheme {scheme}: its position IDs reach "
                         f"{eval_id} (evaluation lengths)")
