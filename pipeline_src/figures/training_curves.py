"""A task's training-curve figure: how every model of the task's figure trained.

Per positional scheme, two panels against the training step, one above the other: the training
loss (log scale; under ppc it includes the weighted position-ID loss) and the training accuracy (the
fraction of response tokens predicted right in the step's batch); at most three schemes side by side,
so that the report shows the text readable, each metric on one scale across schemes. Every model is its own line: seeds
as separate lines of the scheme's colour, variants by line style. A log longer than
:data:`MAX_POINTS` steps is drawn as the means of consecutive steps. A run whose training diverged
has a log up to its last finite step: it is drawn, ends in a red cross, and is named under the figure.
Where the logs count accuracy per k (a task trained on k ~ Unif{1..K_train}), a block below shows each
model's training accuracy per k (:mod:`.training_by_k`).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.lines import Line2D
from matplotlib.ticker import LogFormatterSciNotation

from ..evaluation.accuracy_schema import read_accuracy
from ..provenance.sidecars import read_record
from . import lines
from .shared import diverged_cells, note_diverged, panel_grid, save_figure, suptitle
from .training_by_k import by_k_canvas, draw_by_k, read_k_logs

RUN = ("task", "variant", "scheme", "seed")  # what a log's provenance record names of its model
# the log columns drawn, each with its axis label and scale (row by row)
METRICS = {"loss": ("training loss", "log"), "accuracy": ("training accuracy", "linear")}
MAX_POINTS = 500  # per line: a longer log is drawn as the means of consecutive steps


class PlainLog(LogFormatterSciNotation):
    """The ticks matplotlib labels on a log axis, each as a plain number (1.5, not 1.5 x 10^0)."""

    def __call__(self, x, pos=None):
        return f"{x:g}" if super().__call__(x, pos) else ""


def read_log(path: Path) -> pl.DataFrame:
    """The training log at ``path`` (``train_log.parquet``): step and the drawn metrics, with the
    columns of its run (task, variant, scheme, seed) from the log's provenance record."""
    config = read_record(path).get("config", {})
    missing = [key for key in RUN if key not in config]
    if missing:
        raise ValueError(f"{path}: its provenance record names no {', '.join(missing)} (not a training log?)")
    try:
        log = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ValueError(f"{path}: not a readable Parquet file ({err})") from None
    absent = [column for column in ("step", *METRICS) if column not in log.columns]
    if absent:
        raise ValueError(f"{path}: no column {', '.join(absent)} (not a training log?)")
    return log.select("step", *METRICS).with_columns(**{key: pl.lit(config[key]) for key in RUN})


def thinned(log: pl.DataFrame, points: int = MAX_POINTS) -> pl.DataFrame:
    """``log`` (one model's, by step) in at most ``points`` rows: each the mean of consecutive steps,
    at the last of them."""
    size = -(-len(log) // points)
    if size <= 1:
        return log
    return (log.with_row_index("row").group_by(pl.col("row") // size, maintain_order=True)
            .agg(pl.col("step").last(), *(pl.col(metric).mean() for metric in METRICS)))


def panels_of(grid, index: int, columns: int) -> list:
    """The panels (one per metric, top to bottom) of the ``index``-th scheme in ``grid``, whose
    schemes fill ``columns`` columns per group of metric rows."""
    group, column = divmod(index, columns)
    return [grid[group * len(METRICS) + row, column] for row in range(len(METRICS))]


def plot(spec: dict, accuracy: list[Path], logs: list[Path], outputs: list[Path], rule: str) -> None:
    """Draw the training-curve figure of ``spec["task"]`` from each model's training log (``logs``);
    the accuracy tables (``accuracy``) say which runs diverged."""
    from ..tasks import get_task

    frame = read_accuracy(accuracy)
    curves = pl.concat([read_log(path) for path in logs], how="diagonal_relaxed")
    diverged = set(diverged_cells(frame).select("variant", "scheme", "seed").iter_rows())
    runs, styles = lines.runs_of(spec), lines.variant_styles(spec)
    schemes = list(dict.fromkeys(scheme for _, scheme in runs))
    palette, cycle = lines.scheme_colours(), plt.get_cmap("tab10")
    groups, columns = panel_grid(len(schemes))  # a row of loss panels over a row of accuracy panels, per group
    by_k = read_k_logs(logs)
    size = (1.5 + 3.2 * columns, 2.7 * len(METRICS) * groups)
    fig, top, bottom = by_k_canvas(size, by_k)
    grid = top.subplots(len(METRICS) * groups, columns, squeeze=False, sharex=True)
    for row, panels in enumerate(grid):  # each metric's panels on one y scale, its first panel's
        for ax in panels:
            if ax is not grid[row % len(METRICS), 0]:
                ax.sharey(grid[row % len(METRICS), 0])
    for column, scheme in enumerate(schemes):
        axes = panels_of(grid, column, columns)
        colour = palette.get(scheme, cycle(column % 10))
        for variant in (variant for variant, name in runs if name == scheme):
            models = curves.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme))
            for (seed,), log in models.sort("seed", "step").group_by(["seed"], maintain_order=True):
                log = thinned(log)
                for ax, metric in zip(axes, METRICS, strict=False):
                    ax.plot(log["step"], log[metric], color=colour, ls=styles.get(variant, "-"), lw=0.9,
                            alpha=0.85, gid=f"{variant}/{scheme}/seed{seed}")
                    if (variant, scheme, seed) in diverged:
                        ax.plot(log["step"][-1:], log[metric][-1:], marker="x", ms=7, mew=1.8, color="tab:red",
                                ls="none", gid=f"diverged {variant}/{scheme}/seed{seed}")
        axes[0].set_title(scheme, fontsize=9)
        axes[-1].set_xlabel("step")
        axes[-1].xaxis.set_tick_params(labelbottom=True)
    for column in range(len(schemes), groups * columns):  # the last group's empty cells
        for ax in panels_of(grid, column, columns):
            ax.set_visible(False)
    for row, (metric, (label, scale)) in enumerate(list(METRICS.items()) * groups):
        grid[row, 0].set_ylabel(label)
        grid[row, 0].set_yscale(scale)
        if scale == "log":
            grid[row, 0].yaxis.set_major_formatter(PlainLog())
            grid[row, 0].yaxis.set_minor_formatter(PlainLog(labelOnlyBase=False))
        if metric == "accuracy":
            grid[row, 0].set_ylim(-0.02, 1.02)
        for ax in grid[row, 1:]:
            ax.yaxis.set_tick_params(labelleft=False)
    legend = [Line2D([], [], color="0.3", ls=styles[variant], label=variant) for variant in spec["runs"]]
    if diverged:
        legend.append(Line2D([], [], marker="x", color="tab:red", ls="none", label="training diverged"))
    if len(legend) > 1:
        top.legend(handles=legend, loc="outside right center", title="variant", fontsize=8)
    if bottom is not None:
        draw_by_k(bottom, by_k)
    task = get_task(spec["task"])
    suptitle(fig, f"{task.summary.rstrip('.')}: training loss and accuracy of every model (one line per seed)"
             + ("; below, each model's training accuracy per k" if bottom is not None else ""))
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, [*accuracy, *logs])
