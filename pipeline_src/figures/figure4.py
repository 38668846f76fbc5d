"""Figure 4: sparse dependencies in natural language.

One panel per k = 1..k_max: each analysed target is a point (or a hexbin cell) at
x = L_short - L_short,sparse(k), the loss the k influential far tokens win back, and
y = L_short - L_long, the gain of the whole long context; the diagonal x = y means the k tokens
recover all of it. The last panel: the median fraction (L_short - L_short,sparse(k)) /
(L_short - L_long) against k, over targets whose gain exceeds ``gain_threshold``, with a 95%
percentile-bootstrap interval over targets
(:func:`pipeline_src.language.influence_summary.recovered_gain`); beside it the same statistic of
the two null baselines (:mod:`pipeline_src.language.influence`): k far tokens drawn at random, and k
tokens chosen the same way from another document's far tokens. The gap between the influential
tokens and the second baseline is what the target's own far context adds beyond selection.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from ..config.influence_config import SCREENED_OUT, InfluenceConfig
from ..language.influence_parts import read_whole
from ..language.influence_summary import recovered_gain
from ..provenance.sidecars import read_record
from .shared import grid_figure, save_figure, suptitle

# The last panel's curves: the influential tokens, then the two null baselines.
CURVES = (("sparse_loss", "influential tokens (own far context)", "tab:blue", "o"),
          ("other_loss", "chosen alike from another document", "tab:orange", "s"),
          ("random_loss", "k far tokens at random (mean of draws)", "0.45", "^"))


# how the title names analysis.selection
SELECTION_NAMES = {"greedy": "greedy", "topk": "top-k", "greedy_kl": "greedy-by-KL"}


def selection_of(path: Path) -> str | None:
    """The selection (``analysis.selection``) the influence table at ``path`` was made with, from its
    provenance record: the title states what the table holds, whatever the config says now. None for
    a table without a record."""
    try:
        return read_record(path)["config"].get("selection")
    except FileNotFoundError:
        return None


def read_influence(paths: list[Path], spec: dict):
    """The whole draw's influence table: its own, or its parts' end to end (:mod:`.influence_parts`), or
    rebuilt from a run summary of every part (``language.figure.from_summary``: the per-target losses the
    summary keeps, :func:`pipeline_src.findings.summary_parts.whole_table`)."""
    from ..findings import run_summary, summary_parts

    if len(paths) == 1 and Path(paths[0]).suffix == run_summary.SUMMARY_SUFFIX:
        return summary_parts.whole_table(run_summary.read(Path(paths[0])), spec["k_max"], paths[0])
    return read_whole(paths, InfluenceConfig(context=spec["context"], local=spec["local"], k_max=spec["k_max"]))


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "figure4") -> None:
    if not inputs:
        raise ValueError("figure4 takes the influence table (or its parts'), got no inputs")
    frame = read_influence(inputs, spec)
    k_max, threshold = spec["k_max"], spec["gain_threshold"]
    shown = frame.filter(~pl.col(SCREENED_OUT)) if SCREENED_OUT in frame.columns else frame  # those with a loss at k
    short, long = shown["short_loss"].to_numpy(), shown["long_loss"].to_numpy()
    sparse = np.array(shown["sparse_loss"].to_list(), dtype=np.float64).reshape(shown.height, k_max)
    y = short - long
    xs = short[:, None] - sparse
    low = float(min(np.min(y, initial=0.0), np.min(xs, initial=0.0), 0.0))
    high = float(max(np.max(y, initial=low), np.max(xs, initial=low)))
    pad = 0.05 * (high - low) or 0.01  # axes fitted to the data (with a margin)
    limits = (low - pad, high + pad)

    fig, axes, flat = grid_figure(k_max + 1, (3.0, 2.9))
    counts = None
    for k in range(1, k_max + 1):
        ax = flat[k - 1]
        x = xs[:, k - 1]
        if spec["plot"] == "hexbin":
            counts = ax.hexbin(x, y, gridsize=25, extent=(*limits, *limits), mincnt=1, bins="log", cmap="viridis",
                               vmin=1, vmax=max(shown.height, 1))
        else:
            ax.scatter(x, y, s=6, alpha=0.5, color="tab:blue", lw=0)
        ax.plot(limits, limits, color="0.3", lw=0.8, ls="--")
        ax.axhline(threshold, color="tab:red", lw=0.6, ls=":")
        ax.set_xlim(limits)
        ax.set_ylim(limits)
        ax.set_title(f"k = {k}", fontsize=9)
        ax.set_xlabel("L_short - L_short,sparse(k) (nats)", fontsize=8)
        ax.set_ylabel("L_short - L_long (nats)", fontsize=8)

    ax = flat[k_max]
    n = 0
    for offset, (column, label, colour, marker) in zip((-0.15, 0.0, 0.15), CURVES, strict=False):
        summary = recovered_gain(frame, gain_threshold=threshold, n_boot=spec["n_boot"], seed=spec["seed"],
                                 column=column)
        n = int(summary["n_targets"][0])
        if n:
            median = summary["median"].to_numpy()
            ax.errorbar(summary["k"].to_numpy() + offset, median,
                        yerr=[median - summary["ci_low"].to_numpy(), summary["ci_high"].to_numpy() - median],
                        marker=marker, ms=4, capsize=2, lw=1, color=colour, label=label)
    if n:
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
        ax.axhline(0.0, color="0.5", lw=0.5)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    else:
        ax.text(0.5, 0.5, f"no target with\nL_short - L_long > {threshold:g}", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
    ax.set_xticks(range(1, k_max + 1))
    ax.set_xlabel("k (influential tokens)", fontsize=8)
    ax.set_ylabel("median fraction of gain recovered", fontsize=8)
    ax.set_title(f"{n} of {frame.height} targets with gain > {threshold:g}", fontsize=9)
    if counts is not None:  # one scale for every panel (vmin, vmax fixed)
        fig.colorbar(counts, ax=axes.ravel().tolist(), location="left", shrink=0.6, label="targets per hexagon")
    selection = selection_of(inputs[0])
    suptitle(fig, f"Influential tokens: Lbar = {spec['context']}, local window L = {spec['local']}"
                  + (f", {SELECTION_NAMES.get(selection, selection)} selection" if selection else "")
                  + f" ({frame.height} held-out targets"
                  + (f", {frame.height - shown.height} screened out" if shown is not frame else "")
                  + ")")
    save_figure(fig, outputs, rule, spec, inputs, stage="language_figures")
