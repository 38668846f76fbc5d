"""Accuracy-against-length panels with one line per training run (variant, scheme).

Each line is the mean over training seeds; its band is the seeds' min-max spread (with one seed,
the 95% Wilson interval of that run). The grey band marks the training lengths.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl

from ..evaluation import accuracy_schema
from ..schemes import SCHEMES
from .common import mean_over_seeds

VARIANT_STYLE = {"scratchpad": "-", "direct": "--"}


def summarize(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Mean over seeds of ``metric`` per (variant, scheme, cell): the cell columns of ``frame``, length
    last (``k`` is null throughout for a task keyed by length alone). A task keyed by more than length
    draws one panel per value of its other cell columns (as ``sparse_parity_scratchpad`` does per k)."""
    part = frame.filter(pl.col("metric") == metric)
    cells = [column for column in accuracy_schema.cell_columns(frame) if column != "length"]
    return mean_over_seeds(part, ["variant", "scheme", *cells, "length"])


def runs_of(spec: dict) -> list[tuple[str, str]]:
    """(variant, scheme) of every run in the figure's spec, in config order."""
    return [(variant, scheme) for variant, schemes in spec["runs"].items() for scheme in schemes]


def label(variant: str, scheme: str, *, with_variant: bool) -> str:
    return f"{scheme} ({variant})" if with_variant else scheme


def draw(ax, summary: pl.DataFrame, runs: list[tuple[str, str]], spec: dict, *, title: str,
         ylabel: str = "accuracy", chance: float | None = None, with_variant: bool = True,
         colours: dict | None = None) -> None:
    """One line per run of ``runs`` found in ``summary``; runs without results are left out."""
    palette = colours or {name: scheme.colour for name, scheme in SCHEMES.items() if scheme.colour}
    cycle = plt.get_cmap("tab10")
    ax.axvspan(*spec["train_lengths"], color="0.9", zorder=0)
    if chance is not None:
        ax.axhline(chance, color="0.5", lw=0.8, ls=":")
    for i, (variant, scheme) in enumerate(runs):
        part = summary.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme))
        if part.is_empty():
            continue
        colour = palette.get(scheme, cycle(i % 10))
        one_seed = part["seeds"].max() == 1
        low, high = (part["ci_low"], part["ci_high"]) if one_seed else (part["low"], part["high"])
        ax.plot(part["length"], part["mean"], marker="o", ms=3, color=colour,
                ls=VARIANT_STYLE.get(variant, "-"), label=label(variant, scheme, with_variant=with_variant))
        ax.fill_between(part["length"], low, high, color=colour, alpha=0.15, lw=0)
    lengths = sorted(set(summary["length"]))
    ax.set_xscale(spec["x_scale"])
    if spec["x_scale"] == "log":
        ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=7, rotation=90)
        ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel)


def metric_panels(spec: dict, inputs: list, outputs: list, rule: str, *, panels: list[tuple[str, str, float | None]],
                  x_label: str, title: str) -> None:
    """A row of panels, one per ``(metric, panel title, chance level)``, each one line per run against
    length; the legend to the right; runs whose training diverged named under the figure."""
    from .common import note_diverged, read_accuracy, save_figure

    frame = read_accuracy(inputs)
    fig, axes = plt.subplots(1, len(panels), sharey=True, figsize=(5 * len(panels), 3.8), layout="constrained")
    for ax, (metric, panel_title, chance) in zip(axes, panels):
        draw(ax, summarize(frame, metric), runs_of(spec), spec, title=panel_title, chance=chance,
             with_variant=len(spec["runs"]) > 1)
        ax.set_xlabel(x_label)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="scheme", fontsize=8)
    fig.suptitle(title, fontsize=10)
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)
