"""From the validated pipeline config to the exact spec of each job.

Each function returns the config subset one job uses, nothing more: it becomes the job's
canonical-JSON param (so editing a value reruns exactly the jobs that use it) and the ``config``
of the artifact's provenance record. Pure and cheap: the Snakefile calls it at parse time.
"""

from __future__ import annotations

import itertools

from .tasks import get_task


class ConfigError(ValueError):
    """A config that passes the JSON schema but is inconsistent across fields."""


def check(config: dict) -> None:
    """Cross-field checks the JSON schema cannot express; errors name the field."""
    sp = config["sparse_parity"]
    data, model = sp["data"], sp["model"]
    if data["l_min"] > data["l_max"]:
        raise ConfigError(f"sparse_parity.data.l_min={data['l_min']} exceeds l_max={data['l_max']}")
    for k in sp["k_train"]:
        if k > data["l_max"]:
            raise ConfigError(f"sparse_parity.k_train value {k} exceeds data.l_max={data['l_max']}")
    if model["d_model"] % model["n_head"]:
        raise ConfigError(f"sparse_parity.model.d_model={model['d_model']} is not divisible by n_head={model['n_head']}")
    target = target_length(config, "sparse_parity")
    largest_eval = get_task("sparse_parity").sequence_tokens(max(sp["eval"]["lengths"]))
    uses_table = any(s in ("abs", "abs_shift") for s in sp["schemes"])
    if uses_table and max(target, largest_eval) > model["max_positions"]:
        raise ConfigError(f"sparse_parity.model.max_positions={model['max_positions']} is too small: learned "
                          f"absolute positions need {max(target, largest_eval)} (evaluation lengths / target_length)")
    train_tokens = get_task("sparse_parity").sequence_tokens(2 * data["l_max"])
    if target < train_tokens:
        raise ConfigError(f"sparse_parity.positions.target_length={target} is shorter than the longest "
                          f"training sequence ({train_tokens} tokens)")


def target_length(config: dict, task: str) -> int:
    """PoSE / shift target length: the configured value, or the largest evaluation sequence."""
    section = config[task]
    configured = section["positions"]["target_length"]
    if configured is not None:
        return configured
    return get_task(task).sequence_tokens(max(section["eval"]["lengths"]))


def train_data_spec(config: dict, task: str, k_train: int) -> dict:
    data = config[task]["data"]
    return {"task": task, "split": "train", "seed": data["seed"],
            "params": {"k_train": k_train, "l_min": data["l_min"], "l_max": data["l_max"],
                       "n_samples": data["n_train"]}}


def eval_data_spec(config: dict, task: str) -> dict:
    ev = config[task]["eval"]
    return {"task": task, "split": "eval", "seed": ev["seed"],
            "params": {"k_test": sorted(ev["k_test"]), "lengths": sorted(ev["lengths"]),
                       "n_per_cell": ev["n_per_cell"]}}


def train_spec(config: dict, task: str, scheme: str, k_train: int, seed: int) -> dict:
    section = config[task]
    return {"task": task, "scheme": scheme, "k_train": k_train, "seed": seed,
            "model": dict(section["model"]), "train": dict(section["train"]),
            "positions": {"pose_chunks": section["positions"]["pose_chunks"],
                          "target_length": target_length(config, task)}}


def eval_spec(config: dict, task: str) -> dict:
    ev = config[task]["eval"]
    return {"batch_size": ev["batch_size"], "seed": ev["seed"]}


def figure1_spec(config: dict) -> dict:
    sp = config["sparse_parity"]
    return {"schemes": list(sp["schemes"]), "seeds": sorted(sp["seeds"]),
            "x_scale": sp["figure"]["x_scale"],
            "train_lengths": [2 * sp["data"]["l_min"], 2 * sp["data"]["l_max"]]}


def cells(config: dict, task: str) -> list[dict]:
    """Every training cell of ``task``: one dict per (scheme, K_train, seed)."""
    section = config[task]
    return [{"task": task, "scheme": s, "k": k, "seed": seed}
            for s, k, seed in itertools.product(section["schemes"], sorted(section["k_train"]),
                                                sorted(section["seeds"]))]
