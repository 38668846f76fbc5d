"""A synthetic task's numbers cell by cell, as the findings read them: per training run (variant,
scheme) and cell (k_test where the task has one, length), the mean over seeds of the run's headline
metric (:meth:`pipeline_src.tasks.task.Task.headline_metric`), the seeds' extremes and how many
seeds have an accuracy (a diverged seed has none and takes no part); and each seed's value, which
the findings' tests compare (:mod:`.significance`).

They are read from a run summary's rows (:mod:`.run_summary`: one per run, seed and cell, made from
the accuracy tables or read from a committed summary) and restricted to the runs and seeds of the
task's figure spec (:func:`pipeline_src.planning.jobs.figure_spec`): rows of other runs are not
read, and a run with seeds missing uses those present. The lengths that matter are the spec's: the
training length is the longest of the task's training range, and "beyond it by a factor" is the
shortest evaluated length at least that factor times it.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

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

    def __str__(self) -> str:
        """The mean, then in brackets the seeds' range where they differ and the seeds used where
        some are missing: ``0.62 (0.55-0.70, 2 of 3 seeds)``."""
        notes = [f"{self.low:.2f}-{self.high:.2f}"] if f"{self.low:.2f}" != f"{self.high:.2f}" else []
        if self.seeds < self.of:
            notes.append(f"{self.seeds} of {self.of} seeds")
        return f"{self.mean:.2f}" + (f" ({', '.join(notes)})" if notes else "")


def configured(spec: dict, rows: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``rows`` (run-summary columns) that the task figure ``spec`` judges: its task, runs
    and seeds, each run's headline metric."""
    return _configured(spec, rows).collect()


def _configured(spec: dict, rows: pl.DataFrame) -> pl.LazyFrame:
    """:func:`configured` as a query (polars' cost is per query at these sizes: one, with what follows)."""
    task = get_task(spec["task"])
    runs = pl.LazyFrame([(variant, scheme, task.headline_metric(variant))
                         for variant, schemes in spec["runs"].items() for scheme in schemes],
                        schema={"variant": pl.String, "scheme": pl.String, "metric": pl.String},
                        orient="row")
    mine = rows.lazy().filter((pl.col("task") == spec["task"]) & pl.col("seed").is_in(spec["seeds"]))
    return mine.join(runs, on=["variant", "scheme", "metric"], how="semi")


class TaskResults:
    """The numbers of the task figure ``spec``'s runs among ``rows`` (run-summary columns; none
    there: every cell is None)."""

    def __init__(self, spec: dict, rows: pl.DataFrame) -> None:
        self.task = get_task(spec["task"])
        self.lengths = sorted(spec["lengths"])
        self.train_max = spec["train_lengths"][1]
        self.seeds = len(spec["seeds"])
        self._rows = _configured(spec, rows).filter(pl.col("value").is_not_null()).collect()
        summary = (self._rows.group_by("variant", "scheme", "k", "length")
                   .agg(mean=pl.col("value").mean(), seed_min=pl.col("value").min(),
                        seed_max=pl.col("value").max(), seeds=pl.col("value").count()))
        # each cell's numbers looked up by (variant, scheme, length, k): a claim asks for hundreds of them
        self._stats = {(row["variant"], row["scheme"], row["length"], row["k"]): row
                       for row in summary.iter_rows(named=True)}
        self._values: dict[tuple, dict[int, float]] = {}
        for variant, scheme, length, k, seed, value in self._rows.sort("seed").select(
                "variant", "scheme", "length", "k", "seed", "value").iter_rows():
            self._values.setdefault((variant, scheme, length, k), {})[seed] = value

    def metric(self, variant: str) -> str:
        """The metric ``variant``'s runs are judged by."""
        return self.task.headline_metric(variant)

    def at(self, variant: str, scheme: str, length: int | None, k: int | None = None) -> SeedStat | None:
        """The run's accuracy at the cell (``k`` None: a task without k_test), or None where no seed
        has one."""
        row = self._stats.get((variant, scheme, length, k)) if length is not None else None
        if row is None or row["mean"] is None:
            return None
        return SeedStat(row["mean"], row["seed_min"], row["seed_max"], row["seeds"], self.seeds)

    def per_seed(self, variant: str, scheme: str, length: int | None, k: int | None = None) -> dict[int, float]:
        """The run's value at the cell seed by seed (seeds with no value left out; none: empty)."""
        return dict(self._values.get((variant, scheme, length, k), {})) if length is not None else {}

    def seeds_with(self, variant: str, scheme: str) -> list[int]:
        """The seeds of the run with a value in some cell (a diverged seed's are null: left out)."""
        mine = self._rows.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme))
        return sorted(mine["seed"].unique().to_list())

    def beyond(self, factor: float) -> int | None:
        """The shortest evaluated length at least ``factor`` times the training length (None: none)."""
        return next((length for length in self.lengths if length >= factor * self.train_max), None)

    def in_training(self) -> int | None:
        """The longest evaluated length within the training lengths (None: none)."""
        return max((length for length in self.lengths if length <= self.train_max), default=None)
