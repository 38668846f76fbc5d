"""The studies of the pipeline (:class:`pipeline_src.planning.study.Study`): the synthetic tasks,
the natural-language analysis and the forecast across the tasks' models. The workflow, the plot
command, the landing page, ``lengthgen findings`` and the fault-injection tool loop over
:data:`STUDIES`; a new study is one more entry.

Each study checks its part of a config (``Study.check``); :func:`pipeline_src.planning.load_config.validate`
runs every study's check after the schema's.
"""

from __future__ import annotations

from pathlib import Path

from . import paths
from .forecast_study import ForecastStudy
from .language_study import LanguageStudy
from .study import Study
from .task_study import TaskStudy

STUDIES: tuple[Study, ...] = (TaskStudy(), LanguageStudy(), ForecastStudy())


def figures(config: dict) -> list[str]:
    """Every figure ``config`` draws, study by study."""
    return [figure for study in STUDIES for figure in study.figures(config)]


def all_figures() -> list[str]:
    """Every figure any config can draw."""
    return [figure for study in STUDIES for figure in study.all_figures()]


def study_of(figure: str) -> Study:
    """The study drawing ``figure``."""
    for study in STUDIES:
        if figure in study.all_figures():
            return study
    raise KeyError(f"no study draws a figure {figure!r}; known: {all_figures()}")


def figure_inputs(config: dict, figure: str, results: Path) -> list[Path]:
    """The tables ``figure``'s job reads (its study's ``figure_tables``), as far as they exist under
    the results folder ``results`` (a table outside ``results/``, such as a committed run summary, where
    it is named): what ``lengthgen findings`` judges a finding from."""
    locate = paths.locate_under(results)
    return [path for name in study_of(figure).figure_tables(config, figure) if (path := Path(locate(name))).is_file()]


