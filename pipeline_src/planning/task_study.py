"""The synthetic tasks as a study (:class:`.study.Study`): one figure per task of ``tasks``, drawn
from the accuracy table of every cell of the task (:mod:`.jobs`), with its training-curve figure and,
for a task whose dependency sets are declared, its mechanism figure beside it."""

from __future__ import annotations

import os

from ..provenance.code_digest import stage_digest
from ..tasks import get_task
from . import jobs, paths
from .cell_jobs import cell_jobs
from .study import Companion, Study

# The "This run" block of a task figure's caption (pipeline_src/figures/caption.py renders it).
CAPTION_RUN = """\
**This run** (from the provenance of the figure and of every file it was made from): seeds
{{ spec.seeds|join(", ") }}; d_model {{ value("train", "model.d_model") }},
{{ count("train", "model.n_layer", "layer") }}, {{ count("train", "model.n_head", "head") }};
{{ value("train", "train.steps") }} training steps of batch {{ value("train", "train.batch_size") }} at lr
{{ value("train", "train.lr") }}; {{ value("eval_data", "params.n_per_cell") }} evaluation samples per cell.
Lines are means over the training seeds; bands the 95% Wilson interval of the seeds' pooled counts
(the samples of every finished seed together); with 2 or 3 seeds, each seed's own curve is drawn thin.
A run whose training diverged has no accuracy: it is named in red under the figure (and on the
report's landing page) and left out of the means.
"""


class TaskStudy(Study):
    """The synthetic tasks (docs/tasks.md)."""

    caption_run = CAPTION_RUN
    train_rule = "train"
    companion_kinds = ("mechanism", "training")

    def all_figures(self) -> tuple[str, ...]:
        return tuple(jobs.FIGURE_TASK)

    def figures(self, config: dict) -> list[str]:
        return jobs.figures(config)

    def check(self, config: dict) -> None:
        jobs.check(config)

    def figure_spec(self, config: dict, figure: str) -> dict:
        return jobs.figure_spec(config, figure)

    def figure_tables(self, config: dict, figure: str) -> list[str]:
        return [paths.accuracy(**cell) for cell in jobs.cells(config, jobs.FIGURE_TASK[figure])]

    def made_from(self, config: dict, figure: str) -> list[str]:
        files = {path: None for cell in jobs.cells(config, jobs.FIGURE_TASK[figure])
                 for job in cell_jobs(config, cell) for path in job.outputs}
        return list(files)

    def upstream_specs(self, config: dict, figure: str) -> dict[str, list[dict]]:
        specs: dict[str, list[dict]] = {}
        for cell in jobs.cells(config, jobs.FIGURE_TASK[figure]):
            for job in cell_jobs(config, cell):
                specs.setdefault(job.rule, []).append(job.spec)
        return specs

    def companions(self, config: dict, figure: str) -> list[Companion]:
        """The mechanism figure (a task with declared dependency sets: from each model's mechanism
        tables) and the training-curve figure (from each model's training log)."""
        task = jobs.FIGURE_TASK[figure]
        cells = jobs.cells(config, task)
        found = []
        if task in jobs.mechanism_tasks(config):
            tables = [paths.mechanism_tables(**cell) for cell in cells]
            found.append(Companion("mechanism", paths.mechanism_figure(task), "--mechanism-dir",
                                   tuple(os.path.dirname(t["attention"]) for t in tables),
                                   tuple(table for t in tables for table in t.values())))
        logs = tuple(paths.train_outputs(**cell)["log_table"] for cell in cells)
        found.append(Companion("training", paths.training_figure(figure), "--training-log", logs, logs))
        return found

    def category(self, figure: str) -> str:
        return jobs.FIGURE_TASK[figure]

    def figure_digest(self, figure: str) -> str:
        return stage_digest("figures", jobs.FIGURE_TASK[figure])

    def draw_function(self, figure: str) -> str:
        return get_task(jobs.FIGURE_TASK[figure]).figure.draw

    def check_plot_spec(self, figure: str, spec: dict) -> None:
        task = jobs.FIGURE_TASK[figure]
        if spec.get("task") != task:
            raise ValueError(f"figure {figure} shows task {task!r}, but the spec is for task {spec.get('task')!r}")

