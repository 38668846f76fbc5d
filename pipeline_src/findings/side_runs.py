"""A claim whose sides are runs of different configs (each side names its ``config``: docs/claims.md), as
the results given hold it: each side's runs, read from the results folder or run summary made with that
side's config (:mod:`pipeline_src.runs.across_folders` finds it), or why the claim is not judged.
:func:`.judge.judge` judges it with the judges every claim is judged by, each side on its own runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl


@dataclass(frozen=True)
class SideRuns:
    """The runs of one side: its config's figure ``spec``, the run-summary ``rows`` of its runs, where they
    were read from (``source``) and when each result was made (:class:`.preregistration.Made`)."""

    name: str
    spec: dict
    rows: pl.DataFrame = field(compare=False)
    source: Path
    made: tuple = ()


@dataclass(frozen=True)
class Across:
    """A claim across configs: each side's runs by its ``config`` (none: not judged, ``why``)."""

    sides: dict[tuple[str, ...], SideRuns]
    why: str = ""

    @property
    def made(self) -> list:
        """When each result of either side was made: its pre-registration is judged against both."""
        return [made for side in self.sides.values() for made in side.made]

    def read_from(self) -> str:
        """Where each side's runs were read from, in a sentence."""
        return "Read " + ", ".join(f"{side.name} from {side.source}" for side in self.sides.values()) + "."
