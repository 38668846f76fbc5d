"""What the workflow, the report's landing page, the plot command, captions and ``lengthgen
findings`` ask of a *study*: a family of figures with the jobs that make them. Two studies
implement it: the synthetic tasks (:mod:`.task_study`, one figure per task of ``tasks``) and the
natural-language analysis (:mod:`pipeline_src.planning.language_study`, switched by ``language.enabled``);
:mod:`pipeline_src.planning.studies` lists them. Consumers loop over studies and ask them; none tests which
study it holds.

Every method is pure and cheap (the Snakefile calls them at parse time) and torch-free.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Companion:
    """A figure drawn by the job of another figure, from per-model files: its ``kind`` (the plot
    command's ``--<kind>-...`` options and the caption template ``workflow/report/<kind>.rst``),
    its name, the option naming each source (``source_option``), the sources themselves (one per
    model) and the files they are (``inputs``: the job's inputs)."""

    kind: str
    figure: str
    source_option: str
    sources: tuple[str, ...]
    inputs: tuple[str, ...]


class Study:
    """One study's figures and jobs; see the module docstring. Subclasses set :attr:`caption_run`,
    :attr:`train_rule` and :attr:`companion_kinds` and implement every method."""

    caption_run: str = ""
    """The "This run" block of its figures' captions: a Jinja template over the figure's record
    (:mod:`pipeline_src.figures.caption`)."""
    train_rule: str = ""
    """The rule that trains its models (the landing page lists differences there first)."""
    companion_kinds: tuple[str, ...] = ()
    """The kinds of companion figures its figures may have."""

    def all_figures(self) -> tuple[str, ...]:
        """Every figure the study can draw, whatever the config."""
        raise NotImplementedError

    def figures(self, config: dict) -> list[str]:
        """The figures ``config`` draws (none when the study is off)."""
        raise NotImplementedError

    def check(self, config: dict) -> None:
        """Cross-field checks of the study's part of a schema-valid config: a ValueError naming the
        field."""
        raise NotImplementedError

    def figure_spec(self, config: dict, figure: str) -> dict:
        """The figure job's spec."""
        raise NotImplementedError

    def figure_tables(self, config: dict, figure: str) -> list[str]:
        """The tables the figure is drawn from (the plot command's INPUTS), in its order."""
        raise NotImplementedError

    def made_from(self, config: dict, figure: str) -> list[str]:
        """The figure's tables and every file upstream of them (what its target asks for)."""
        raise NotImplementedError

    def upstream_specs(self, config: dict, figure: str) -> dict[str, list[dict]]:
        """The spec of every job upstream of the figure, by rule."""
        raise NotImplementedError

    def companions(self, config: dict, figure: str) -> list[Companion]:
        """The figures its job draws beside it."""
        return []

    def category(self, figure: str) -> str:
        """The report's category of the figure."""
        raise NotImplementedError

    def figure_digest(self, figure: str) -> str:
        """The code digest of the figure's job."""
        raise NotImplementedError

    def draw_function(self, figure: str) -> str:
        """``module:function`` drawing the figure, called as ``f(spec, inputs, outputs, rule=...)``."""
        raise NotImplementedError

    def check_plot_spec(self, figure: str, spec: dict) -> None:
        """A ValueError when ``spec`` cannot be the spec of ``figure``."""

    def draw(self, figure: str) -> Callable:
        """The function drawing ``figure`` (imported only now: drawing needs matplotlib)."""
        module, _, function = self.draw_function(figure).partition(":")
        return getattr(importlib.import_module(module), function)
