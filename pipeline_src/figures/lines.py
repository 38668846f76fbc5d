"""Accuracy-against-length panels with one line per training run (variant, scheme).

Each line is the mean over training seeds; its band the 95% Wilson interval of the seeds' pooled
counts (see :func:`.common.mean_over_seeds`). Each scheme has its colour and marker, and the runs
of a panel are dodged a little along the length axis, so coinciding curves stay visible. The grey
band marks the training lengths.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl

from ..evaluation import accuracy_schema
from ..evaluation.accuracy_schema import read_accuracy
from ..schemes import SCHEMES
from .shared import mean_over_seeds, note_diverged, save_figure, suptitle

VARIANT_STYLE = {"scratchpad": "-", "direct": "--"}
STYLES = ("-", "--", ":", "-.")  # the other variants' styles (k_train variants), by their place in the spec
MARKERS = "osD^v<>ph*"  # by the scheme's place in the registry
THIN_SEEDS = 3  # up to this many seeds, each seed's curve is drawn too
DODGE = 0.006  # horizontal offset between neighbouring runs, as a fraction of the axis (log or linear)


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


def variant_styles(spec: dict) -> dict[str, str]:
    """One line style per variant of the figure's spec: scratchpad solid, direct dashed, any other
    (k_train variants) by its place in the spec."""
    return {variant: VARIANT_STYLE.get(variant, STYLES[i % len(STYLES)]) for i, variant in enumerate(spec["runs"])}


def scheme_colours() -> dict[str, str]:
    """Each registered scheme's colour (a scheme without one takes the next of matplotlib's cycle)."""
    return {name: scheme.colour for name, scheme in SCHEMES.items() if scheme.colour}


def label(variant: str, scheme: str, *, with_variant: bool) -> str:
    return f"{scheme} ({variant})" if with_variant else scheme


def draw(ax, summary: pl.DataFrame, runs: list[tuple[str, str]], spec: dict, *, title: str,
         ylabel: str = "accuracy", chance: float | None = None, with_variant: bool = True,
         colours: dict | None = None, per_seed: pl.DataFrame | None = None, styles: dict | None = None) -> None:
    """One line per run of ``runs`` found in ``summary``; runs without results are left out. With
    ``per_seed`` (the accuracy rows ``summary`` was made from), a run of 2 to ``THIN_SEEDS`` seeds
    also shows each seed's own curve, thin. ``styles``: variant -> line style (default
    :data:`VARIANT_STYLE`)."""
    styles = styles or VARIANT_STYLE
    palette = colours or scheme_colours()
    cycle = plt.get_cmap("tab10")
    ax.axvspan(*spec["train_lengths"], color="0.9", zorder=0)
    if chance is not None:
        ax.axhline(chance, color="0.5", lw=0.8, ls=":")
    lengths = sorted(set(summary["length"]))
    parts = [(variant, scheme, summary.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme)))
             for variant, scheme in runs]
    shown = [run for run in parts if not run[2].is_empty()]
    for i, (variant, scheme, part) in enumerate(shown):
        colour = palette.get(scheme, cycle(i % 10))
        x = dodged(part["length"].to_numpy(), i - (len(shown) - 1) / 2, lengths, spec["x_scale"])
        ax.plot(x, part["mean"],
                marker=MARKERS[list(SCHEMES).index(scheme) % len(MARKERS)] if scheme in SCHEMES else "o",
                ms=3.5, color=colour, ls=styles.get(variant, "-"),
                label=label(variant, scheme, with_variant=with_variant))
        ax.fill_between(x, part["low"], part["high"], color=colour, alpha=0.12, lw=0)
        if per_seed is not None:
            run = per_seed.filter((pl.col("variant") == variant) & (pl.col("scheme") == scheme))
            seed_curves(ax, run, i - (len(shown) - 1) / 2, lengths, spec["x_scale"], colour,
                        styles.get(variant, "-"))
    ax.set_xscale(spec["x_scale"])
    if spec["x_scale"] == "log":
        ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=8, rotation=90)
        ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel)


def seed_curves(ax, rows: pl.DataFrame, slot: float, lengths: list, scale: str, colour, style: str = "-") -> None:
    """Each seed's own curve, thin, from the accuracy ``rows`` of one line, when it has 2 to
    ``THIN_SEEDS`` finished seeds (dodged by ``slot`` like the line)."""
    finished = rows.filter(pl.col("accuracy").is_not_null())
    if not 1 < finished["seed"].n_unique() <= THIN_SEEDS:
        return
    for (_,), seed in finished.sort("length").group_by(["seed"], maintain_order=True):
        ax.plot(dodged(seed["length"].to_numpy(), slot, lengths, scale), seed["accuracy"], color=colour, lw=0.6,
                alpha=0.5, ls=style)


def metric_panels(spec: dict, inputs: list, outputs: list, rule: str, *, panels: list[tuple[str, str, float | None]],
                  x_label: str, title: str) -> None:
    """A row of panels, one per ``(metric, panel title, chance level)``, each one line per run against
    length; the legend to the right; runs whose training diverged named under the figure."""
    frame = read_accuracy(inputs)
    fig, axes = plt.subplots(1, len(panels), sharey=True, figsize=(5 * len(panels), 3.8), layout="constrained")
    for ax, (metric, panel_title, chance) in zip(axes, panels, strict=False):
        draw(ax, summarize(frame, metric), runs_of(spec), spec, title=panel_title, chance=chance,
             with_variant=len(spec["runs"]) > 1, per_seed=frame.filter(pl.col("metric") == metric))
        ax.set_xlabel(x_label)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="scheme", fontsize=8)
    suptitle(fig, title)
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)


def dodged(x, slot: float, lengths: list, scale: str):
    """``x`` moved by ``slot`` dodge steps: multiplicatively on a log axis, additively on a linear one."""
    import numpy as np

    if scale == "log":
        span = np.log10(max(lengths) / min(lengths)) if len(lengths) > 1 else 1.0
        return x * 10 ** (slot * DODGE * span)
    span = (max(lengths) - min(lengths)) if len(lengths) > 1 else 1.0
    return x + slot * DODGE * span
