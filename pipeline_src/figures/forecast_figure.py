"""The forecast figure: each model's length limit forecast from its attention at the training lengths,
against the limit its evaluation measured (docs/mechanism.md, "The forecast").

The first panel has one point per model: its predicted reach (where the forecast mass of its head of
largest margin falls below half its own at the longest training length T) against its measured reach
(where exact match falls below 0.9 of its own there), both as multiples of T, coloured by task and
marked by scheme; the diagonal is a perfect forecast. Then one model a task (its first, run columns
sorted): its forecast mass (dashed) beside its measured mass (solid) against length / T.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..evaluation.forecast import RUN, at_k_train, from_tables
from .shared import grid_figure, save_figure, suptitle

MARKERS = "osD^vP*Xh"


def name(variant: str, scheme: str, k_train: int | None) -> str:
    """A model's line: its scheme with its K_train, or after its variant."""
    return f"{scheme}, K_train {k_train}" if k_train is not None else f"{variant} {scheme}"


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str) -> None:
    """Draw the forecast of every model of ``spec["tasks"]`` from its accuracy and attention tables."""
    curves, reaches = from_tables(spec, inputs)
    tasks = [task for task in spec["tasks"] if task in set(reaches["task"])]
    fig, _, axes = grid_figure(2, (3.8, 3.4), extra_width=1.6)
    colours = {task: f"C{i}" for i, task in enumerate(spec["tasks"])}
    markers = {scheme: MARKERS[i % len(MARKERS)] for i, scheme in enumerate(sorted(set(reaches["scheme"])))}
    ax = axes[0]
    for (task, scheme), points in reaches.group_by(["task", "scheme"], maintain_order=True):
        ax.scatter(points["predicted_reach"] / points["T"], points["measured_reach"] / points["T"], s=28,
                   color=colours[task], marker=markers[scheme], alpha=0.8, label=f"{task}, {scheme}")
    top = max([1.0, *(reaches["predicted_reach"] / reaches["T"]), *(reaches["measured_reach"] / reaches["T"])])
    ax.plot([0, top], [0, top], color="0.6", lw=1, ls=":", label="perfect forecast")
    ax.set(xlabel="predicted reach / T", ylabel="measured reach / T", title=f"reach of {reaches.height} models")
    ax = axes[1]
    for task in tasks:  # one model a task: its first in the table (run columns sorted), at k_test = K_train
        first = reaches.filter(pl.col("task") == task).row(0, named=True)
        line = curves.filter(*(pl.col(column).eq_missing(first[column]) for column in RUN), at_k_train()).sort("length")
        x = line["length"] / line["T"]
        ax.plot(x, line["measured"], color=colours[task], marker=markers[first["scheme"]], ms=3,
                label=f"{task}: {name(first['variant'], first['scheme'], first['k_train'])}")
        ax.plot(x, line["predicted"], color=colours[task], ls="--", lw=1)
    ax.set(xlabel="length / T", ylabel="mass on the dependency set", ylim=(0, 1.02),
           title="one model a task: measured (solid), forecast (dashed)")
    ax.legend(fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=8)
    suptitle(fig, "Where a model stops, forecast from its attention at the training lengths")
    save_figure(fig, outputs, rule, spec, inputs, stage="forecast_figures")
