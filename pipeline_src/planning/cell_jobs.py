"""The jobs of one experiment cell (task, variant, scheme, seed), upstream first: its training set
and evaluation set, its training and its evaluation, each with the config subset it runs with and
its code digest, as ``workflow/rules`` runs them. ``lengthgen status``, the provenance checks and
the files each task figure is made from follow it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..provenance.code_digest import stage_digest
from . import jobs, paths


@dataclass(frozen=True)
class Job:
    """One job of a cell's chain: its name in notes, its rule (as its records name it), its outputs
    (the first one's record is read), the config subset it would run with, its stage and code
    digest (as the workflow's code param), and the upstream artifacts it reads (record input role
    -> path)."""

    name: str
    rule: str
    outputs: tuple[str, ...]
    spec: dict
    stage: str
    code: str
    inputs: dict[str, str] = field(default_factory=dict)

    @property
    def artifact(self) -> str:
        return self.outputs[0]


def cell_jobs(config: dict, cell: dict) -> list[Job]:
    """The jobs of ``cell``, upstream first, with the paths of ``workflow/rules``: the one description
    of a cell's job chain in Python (``lengthgen status``, provenance checks and the files each task
    figure is made from follow it)."""
    task, variant, scheme = cell["task"], cell["variant"], cell["scheme"]
    train_data = paths.train_data(task=task, variant=variant)
    eval_data = paths.eval_data(task=task, evalset=jobs.eval_data_name(task, variant))
    model = paths.train_outputs(**cell)
    data_code = stage_digest("data", task)
    return [
        Job("train data", "train_data", (train_data,), jobs.train_data_spec(config, task, variant), "data", data_code),
        Job("eval data", "eval_data", (eval_data,), jobs.eval_data_spec(config, task, variant), "data", data_code),
        Job("train", "train", tuple(model.values()),
            jobs.train_spec(config, task, variant, scheme, cell["seed"]), "train",
            stage_digest("train", task, scheme), {"train_data": train_data}),
        Job("evaluate", "evaluate", (paths.accuracy(**cell), *paths.mechanism_tables(**cell).values()),
            jobs.eval_spec(config, task),
            "evaluate", stage_digest("evaluate", task, scheme), {"model": model["model"], "eval_data": eval_data}),
    ]
