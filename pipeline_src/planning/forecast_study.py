"""The forecast as a study (:class:`.study.Study`): one figure, ``forecast``, across the models of every
synthetic task whose dependency sets are declared (Figures 1 to 3 and the addition anchor in the
default run), drawn from each model's accuracy table and attention table (docs/mechanism.md, "The
forecast"). It trains nothing: its models are the task study's."""

from __future__ import annotations

from ..provenance.code_digest import stage_digest
from ..tasks import get_task
from . import jobs, paths
from .study import Study
from .task_study import TaskStudy

FIGURE = paths.FORECAST_FIGURE

CAPTION_RUN = """\
**This run** (from the provenance of the figure and of every file it was made from): the models of
{{ spec.tasks|join(", ") }}, each at its k_test = K_train (or its task's one k). Reach is the longest
evaluated length, counted from the first, up to which a curve stays at its level, drawn as a multiple
of the task's longest training length T.
"""


class ForecastStudy(Study):
    """Predicted against measured reach, from the attention at the training lengths."""

    caption_run = CAPTION_RUN
    train_rule = "train"

    def all_figures(self) -> tuple[str, ...]:
        return (FIGURE,)

    def figures(self, config: dict) -> list[str]:
        return [FIGURE] if jobs.mechanism_tasks(config) else []

    def check(self, config: dict) -> None:
        """Nothing of its own: its tasks' sections are the task study's."""

    def _task_figures(self, config: dict) -> list[str]:
        return [get_task(task).figure.name for task in jobs.mechanism_tasks(config)]

    def figure_spec(self, config: dict, figure: str) -> dict:
        """Per task: its training range, evaluated lengths and seeds (as its own figure's spec has them)."""
        return {"tasks": {task: {name: jobs.figure_spec(config, get_task(task).figure.name)[name]
                                 for name in ("train_lengths", "lengths", "seeds")}
                          for task in jobs.mechanism_tasks(config)}}

    def figure_tables(self, config: dict, figure: str) -> list[str]:
        """Each model's accuracy table, then its attention table."""
        return [table for task in jobs.mechanism_tasks(config) for cell in jobs.cells(config, task)
                for table in (paths.accuracy(**cell), paths.mechanism_tables(**cell)["attention"])]

    def made_from(self, config: dict, figure: str) -> list[str]:
        return list({path: None for task_figure in self._task_figures(config)
                     for path in TaskStudy().made_from(config, task_figure)})

    def upstream_specs(self, config: dict, figure: str) -> dict[str, list[dict]]:
        specs: dict[str, list[dict]] = {}
        for task_figure in self._task_figures(config):
            for rule, found in TaskStudy().upstream_specs(config, task_figure).items():
                specs.setdefault(rule, []).extend(found)
        return specs

    def category(self, figure: str) -> str:
        return FIGURE

    def figure_digest(self, figure: str) -> str:
        return stage_digest("forecast_figures")

    def draw_function(self, figure: str) -> str:
        return "pipeline_src.figures.forecast_figure:plot"

    def check_plot_spec(self, figure: str, spec: dict) -> None:
        if not isinstance(spec.get("tasks"), dict) or not spec["tasks"]:
            raise ValueError("the forecast's spec names its tasks (tasks: a mapping of task to its lengths)")
