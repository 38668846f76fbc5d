"""Figure 1: sparse parity, accuracy against length, one panel per K_train, one line per k_test.

The metric is the accuracy of the predicted last token (``answer``). Lines are the mean over
training seeds; the band is the 95% Wilson interval of the seeds' pooled counts; with 2 or 3 seeds,
each seed's curve is drawn thin. The grey band marks the training lengths.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from ..evaluation.accuracy_schema import read_accuracy
from . import lines
from .shared import mean_over_seeds, note_diverged, save_figure, suptitle


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "figure1") -> None:
    frame = read_accuracy(inputs, metric="answer")
    summary = mean_over_seeds(frame, ["scheme", "k_train", "k", "length"])
    ordered = dict.fromkeys(scheme for schemes in spec["runs"].values() for scheme in schemes)
    schemes = [s for s in ordered if s in set(summary["scheme"])]
    k_trains = sorted(set(summary["k_train"]))
    k_tests = sorted(set(summary["k"]))
    colours = plt.get_cmap("viridis")
    lengths = sorted(set(summary["length"]))
    lowest = summary["low"].min()  # None where every run diverged
    bottom = 0.4 if lowest is None else min(0.4, lowest - 0.05)
    fig, axes = plt.subplots(len(schemes), len(k_trains), squeeze=False, sharex=True, sharey=True,
                             figsize=(3.2 * len(k_trains) + 1.2, 2.6 * len(schemes) + 0.8),
                             layout="constrained")
    for row, scheme in enumerate(schemes):
        for col, k_train in enumerate(k_trains):
            ax = axes[row][col]
            ax.axvspan(*spec["train_lengths"], color="0.9", zorder=0)
            ax.axhline(0.5, color="0.5", lw=0.8, ls=":")
            for j, k in enumerate(k_tests):
                part = summary.filter((summary["scheme"] == scheme) & (summary["k_train"] == k_train)
                                      & (summary["k"] == k))
                if part.is_empty():
                    continue
                colour = colours(0.85 * j / max(1, len(k_tests) - 1))  # not viridis' palest yellow
                x = lines.dodged(part["length"].to_numpy(), j - (len(k_tests) - 1) / 2, lengths, spec["x_scale"])
                ax.plot(x, part["mean"], marker=lines.MARKERS[j % len(lines.MARKERS)], ms=3.5, color=colour,
                        label=f"k={k}")
                ax.fill_between(x, part["low"], part["high"], color=colour, alpha=0.2, lw=0)
                lines.seed_curves(ax, frame.filter((pl.col("scheme") == scheme) & (pl.col("k_train") == k_train)
                                                   & (pl.col("k") == k)),
                                  j - (len(k_tests) - 1) / 2, lengths, spec["x_scale"], colour)
            ax.set_xscale(spec["x_scale"])
            ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=8, rotation=90)
            ax.minorticks_off()
            ax.set_ylim(bottom, 1.02)
            ax.set_title(f"{scheme}, K_train={k_train}", fontsize=9)
            if row == len(schemes) - 1:
                ax.set_xlabel("length 2l")
            if col == 0:
                ax.set_ylabel("accuracy")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="k_test", fontsize=8)
    suptitle(fig, "Sparse parity: length generalization (mean over seeds; band: 95% interval, seeds pooled)")
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)
