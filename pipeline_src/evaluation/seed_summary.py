"""A synthetic task's results under a results folder, cell by cell, as the findings read them: per
training run (variant, scheme) and cell (k_test where the task has one, length), the mean over
seeds of the run's headline metric (:meth:`pipeline_src.tasks.task.Task.headline_metric`), the
seeds' extremes and how many seeds have an accuracy (a diverged seed has none and takes no part).

The runs and seeds are those of the config (:func:`pipeline_src.bookkeeping.config.cells`); tables of
runs the config does not train are not read, and a run with seeds missing uses those present. The
lengths that matter are the config's: the training length is the longest of the task's training
range, and "beyond it by a factor" is the shortest evaluated length at least that factor times it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..bookkeeping import config as jobs
from ..bookkeeping import paths
from ..tasks import get_task


@dataclass(frozen=True)
class SeedStat:
    """One run's accuracy at one cell: ``mean`` over its ``seeds`` seeds with an accuracy (of
    ``of`` configured), whose smallest and largest are ``low`` and ``high``."""

    mean: float
    low: float
    high: float
    seeds: int
    of: int

    @property
    def spread(self) -> float:
        """Max minus min over the seeds (0 with one seed)."""
        return self.high - self.low

    def above(self, other: SeedStat) -> bool:
        """This run beats ``other`` by more than the seeds' spread: the mean difference exceeds the
        larger of the two spreads."""
        return self.mean - other.mean > max(self.spread, other.spread)

    def __str__(self) -> str:
        """The mean, then in brackets the seeds' range where they differ and the seeds used where
        some are missing: ``0.62 (0.55-0.70, 2 of 3 seeds)``."""
        notes = [f"{self.low:.2f}-{self.high:.2f}"] if f"{self.low:.2f}" != f"{self.high:.2f}" else []
        if self.seeds < self.of:
            notes.append(f"{self.seeds} of {self.of} seeds")
        return f"{self.mean:.2f}" + (f" ({', '.join(notes)})" if notes else "")


class TaskResults:
    """The accuracy tables of ``task``'s runs in ``config`` found under the results folder
    ``results`` (none found: :attr:`found` is False and every cell is None)."""

    def __init__(self, config: dict, task: str, results: Path) -> None:
        self.task = get_task(task)
        self.section = config[task]
        self.lengths = sorted(self.section["eval"]["lengths"])
        self.train_max = self.task.train_lengths(self.section["data"])[1]
        files = [path for cell in jobs.cells(config, task)
                 if (path := paths.under(results, paths.accuracy(**cell))).is_file()]
        self.found = bool(files)
        self._summary = self._read(files) if files else None

    def _read(self, files: list[Path]) -> pl.DataFrame:
        from ..figures.common import mean_over_seeds, read_accuracy

        frame = read_accuracy(files)
        metric = {variant: self.metric(variant) for variant in frame["variant"].unique()}
        frame = frame.filter(pl.col("metric") == pl.col("variant").replace_strict(metric))
        return mean_over_seeds(frame, ["variant", "scheme", "k", "length"])

    def metric(self, variant: str) -> str:
        """The metric ``variant``'s runs are judged by."""
        return self.task.headline_metric(variant)

    def at(self, variant: str, scheme: str, length: int | None, k: int | None = None) -> SeedStat | None:
        """The run's accuracy at the cell (``k`` None: a task without k_test), or None where no seed
        has one."""
        if self._summary is None or length is None:
            return None
        k_match = pl.col("k").is_null() if k is None else pl.col("k") == k
        rows = self._summary.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme)
                                    & (pl.col("length") == length) & k_match)
        if rows.is_empty() or rows["mean"][0] is None:
            return None
        row = rows.row(0, named=True)
        return SeedStat(row["mean"], row["seed_min"], row["seed_max"], row["seeds"], len(self.section["seeds"]))

    def beyond(self, factor: float) -> int | None:
        """The shortest evaluated length at least ``factor`` times the training length (None: none)."""
        return next((length for length in self.lengths if length >= factor * self.train_max), None)

    def in_training(self) -> int | None:
        """The longest evaluated length within the training lengths (None: none)."""
        return max((length for length in self.lengths if length <= self.train_max), default=None)
