"""The studies of the pipeline (:class:`pipeline_src.bookkeeping.study.Study`): the synthetic tasks
and the natural-language analysis. The workflow, the plot command, the landing page, ``lengthgen
findings`` and the fault-injection tool loop over :data:`STUDIES`; a new study is one more entry.

Also the whole check of a config (:func:`validate`, :func:`load_config`): the schema and the
defaults (:func:`pipeline_src.bookkeeping.jobs.complete`), then every study's own checks.
"""

from __future__ import annotations

from pathlib import Path

from .bookkeeping import jobs
from .bookkeeping import paths
from .bookkeeping.status import BASE_CONFIG, checked_config
from .bookkeeping.study import Study
from .bookkeeping.task_study import TaskStudy
from .language.study import LanguageStudy

STUDIES: tuple[Study, ...] = (TaskStudy(), LanguageStudy())


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
    the results folder ``results``: what ``lengthgen findings`` judges a finding from."""
    wanted = study_of(figure).figure_tables(config, figure)
    return [path for name in wanted if (path := paths.under(results, name)).is_file()]


def validate(config: dict) -> None:
    """The whole check of a loaded config, in place (defaults merged and filled in); a
    :class:`~pipeline_src.bookkeeping.jobs.ConfigError` naming the field."""
    jobs.complete(config)
    for study in STUDIES:
        try:
            study.check(config)
        except ValueError as err:
            raise jobs.ConfigError(str(err)) from None
    if not figures(config):
        raise jobs.ConfigError("the config draws no figure: tasks is empty and no other study is enabled")


def load_config(configfiles: list[Path] | tuple[Path, ...] = (), base: Path = BASE_CONFIG) -> dict:
    """The config Snakemake would run with ``--configfile`` ``configfiles`` over ``base``
    (:func:`pipeline_src.bookkeeping.status.read_config`), checked (:func:`validate`); a
    StatusError naming the files."""
    return checked_config(configfiles, base, validate)
