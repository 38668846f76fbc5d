"""The training-curve figure's block per k: for a task trained on k ~ Unif{1..K_train} (its logs count
the response tokens predicted right per k, ``k_correct`` and ``k_scored``), one panel per model,
its training accuracy at each k against the step, one line per k (dark: small k; light: large k).

A reader sees which k a model learned first and where it sits on a plateau; under a curriculum over
k (``train.curriculum``) a k's line begins at the step the curriculum first drew it. Each point pools
the tokens of :data:`BINS`-th of the run's steps, so a k drawn in few batches is not drawn as noise.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from ..provenance.sidecars import read_record
from .shared import grid_columns

BINS = 100  # points per line: each pools the counts of 1/BINS of the run's steps
PANEL = (3.0, 2.3)  # inches per panel


def read_k_logs(logs: list[Path]) -> dict[tuple, pl.DataFrame]:
    """Per model (variant, scheme, seed) whose log counts accuracy per k: its step, k_correct and
    k_scored columns, ordered by variant, scheme and seed. Empty where no log does."""
    found = {}
    for path in logs:
        columns = pl.read_parquet_schema(path)
        if "k_scored" not in columns:
            continue
        config = read_record(path)["config"]
        found[(config["variant"], config["scheme"], config["seed"])] = pl.read_parquet(
            path, columns=["step", "k_correct", "k_scored"])
    return dict(sorted(found.items(), key=lambda item: (_k_train(item[0][0]), item[0][1], item[0][2])))


def _k_train(variant: str) -> int:
    return int(variant[1:]) if variant[1:].isdigit() else 0


def by_k_canvas(size: tuple[float, float], by_k: dict):
    """The figure, the subfigure of the main panels (of ``size`` inches) and that of the per-k block
    below it (None, and the main panels on the figure itself, where no log counts accuracy per k)."""
    if not by_k:
        fig = plt.figure(figsize=size, layout="constrained")
        return fig, fig, None
    columns = _columns(by_k)
    rows = -(-len(by_k) // columns)
    width = max(size[0], PANEL[0] * columns + 1.2)
    height = PANEL[1] * rows + 0.4
    fig = plt.figure(figsize=(width, size[1] + height), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=(size[1], height))
    return fig, top, bottom


def _columns(by_k: dict) -> int:
    """Panels per row: a row per run (variant and scheme), its seeds side by side, at most 3."""
    seeds = max(sum(1 for other in by_k if other[:2] == model[:2]) for model in by_k)
    return grid_columns(seeds) if seeds > 1 else min(3, len(by_k))


def binned(log: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(steps [P], accuracy [P, K]) of a model's log: each row pools the counts of consecutive steps
    (1/BINS of the run), NaN where a k was not drawn in them."""
    size = max(1, -(-len(log) // BINS))
    correct = np.array(log["k_correct"].to_list(), dtype=float)
    scored = np.array(log["k_scored"].to_list(), dtype=float)
    steps = log["step"].to_numpy()
    starts = np.arange(0, len(log), size)
    right, total = np.add.reduceat(correct, starts), np.add.reduceat(scored, starts)
    ends = np.minimum(starts + size, len(log)) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return steps[ends], np.where(total > 0, right / total, np.nan)


def draw_by_k(sub, by_k: dict) -> None:
    """One panel per model of ``by_k`` in the subfigure ``sub``: accuracy per k against the step."""
    columns = _columns(by_k)
    rows = -(-len(by_k) // columns)
    grid = sub.subplots(rows, columns, squeeze=False, sharey=True)
    largest = max(len(log["k_scored"][0]) for log in by_k.values())
    colours = plt.get_cmap("viridis")
    for ax, ((variant, scheme, seed), log) in zip(grid.ravel(), by_k.items(), strict=False):
        steps, accuracy = binned(log)
        for k in range(accuracy.shape[1]):
            ax.plot(steps, accuracy[:, k], color=colours(0.85 * k / max(1, largest - 1)), lw=0.9,
                    label=f"k={k + 1}", gid=f"{variant}/{scheme}/seed{seed} k={k + 1}")
        ax.axhline(0.5, color="0.5", lw=0.8, ls=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{scheme}, K_train={variant[1:]}, seed {seed}", fontsize=8)
        ax.set_xlabel("step", fontsize=8)
    for ax in grid.ravel()[len(by_k):]:
        ax.set_visible(False)
    for ax in grid[:, 0]:
        ax.set_ylabel("training accuracy", fontsize=8)
    widest = max(by_k, key=lambda model: len(by_k[model]["k_scored"][0]))
    handles, labels = grid.ravel()[list(by_k).index(widest)].get_legend_handles_labels()
    sub.legend(handles, labels, loc="outside right center", title="k", fontsize=7, ncols=1 + len(labels) // 13)
    sub.suptitle("Training accuracy per k (tokens of the batches pooled over 1/100 of the run; dotted: chance)",
                 fontsize=9)
