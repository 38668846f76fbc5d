"""Our figure: PoSE against plain RoPE on natural language, and which targets PoSE helps.

Left: held-out loss by position of every language model (``main`` trained at context Lbar,
``short_rope`` and ``short_pose`` at the short context L, the latter with PoSE IDs up to the target
length), positions past each model's training context included: thin lines per position, bold
lines the mean over bins of ``POSITION_BINS``-th of the range (single positions are noisy).
Right: for the analysed targets whose long-context gain (main model) exceeds
``gain_threshold``, the loss PoSE saves with the full Lbar context,
L_long(short_rope) - L_long(short_pose), grouped by how many influential tokens the target needs
to recover ``recover_fraction`` of its gain (``> k_max``: more than the analysis chose). Points are
targets; bars the median with a 95% percentile-bootstrap interval.

Inputs are recognised by their columns: loss-by-position and target-loss tables of each model
(:mod:`pipeline_src.language.schemas`) and the influence table of the main model.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from .. import datasets
from ..language.influence_summary import tokens_needed
from ..language.schemas import LossByPositionSchema, TargetLossSchema
from ..planning.language_jobs import SHORT_POSE, SHORT_ROPE
from .figure4 import read_influence
from .shared import save_figure, suptitle

MODEL_COLOURS = {"main": "0.3", SHORT_ROPE: "tab:purple", SHORT_POSE: "tab:blue"}
POSITION_BINS = 32  # the loss-by-position curve is also drawn as the mean over this many bins


def read_inputs(inputs: list[Path], spec: dict) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(loss by position, target losses, influence) from ``inputs`` in any order."""
    by_position, targets, analysed = [], [], []
    for path in inputs:
        columns = pl.read_parquet_schema(path)
        if "position" in columns:
            by_position.append(datasets.read(path, LossByPositionSchema))
        elif "sparse_loss" in columns:
            analysed.append(path)
        else:
            targets.append(datasets.read(path, TargetLossSchema))
    if not analysed or not by_position or not targets:
        raise ValueError("language_pose needs loss-by-position and target-loss tables and the influence table (or "
                         f"its parts'); got {len(by_position)}, {len(targets)} and {len(analysed)}")
    return pl.concat(by_position), pl.concat(targets), read_influence(analysed, spec)


def bootstrap_median(values: np.ndarray, n_boot: int, rng: np.random.Generator, level: float = 0.95):
    """(median, low, high): percentile bootstrap of the median."""
    resamples = rng.integers(0, len(values), size=(n_boot, len(values)))
    boot = np.median(values[resamples], axis=1)
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(np.median(values)), float(low), float(high)


def pose_gain_by_tokens_needed(targets: pl.DataFrame, analysed: pl.DataFrame, spec: dict) -> pl.DataFrame:
    """Per analysed target with gain > threshold: ``needed`` (k, or k_max + 1) and ``pose_gain``."""
    gain = analysed["short_loss"] - analysed["long_loss"]
    selected = analysed.filter(gain > spec["gain_threshold"])
    needed = tokens_needed(selected, spec["recover_fraction"]) if selected.height else np.array([], int)
    keyed = selected.select("doc", "t").with_columns(needed=pl.Series(needed, dtype=pl.Int64))
    rope = targets.filter(pl.col("model") == SHORT_ROPE).select("doc", "t", rope=pl.col("long_loss"))
    pose = targets.filter(pl.col("model") == SHORT_POSE).select("doc", "t", pose=pl.col("long_loss"))
    joined = keyed.join(rope, on=["doc", "t"]).join(pose, on=["doc", "t"])
    if joined.height != keyed.height:
        raise ValueError(f"the target-loss tables cover {joined.height} of the {keyed.height} selected targets: "
                         "were they drawn with the same targets settings?")
    return joined.select("needed", pose_gain=pl.col("rope") - pl.col("pose"))


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "language_pose") -> None:
    by_position, targets, analysed = read_inputs(inputs, spec)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for model, part in by_position.sort("position").group_by("model", maintain_order=True):
        name = model[0]
        colour = MODEL_COLOURS.get(name, "tab:green")
        x, loss = part["position"].to_numpy(), part["loss"].to_numpy()
        left.plot(x, loss, color=colour, lw=0.5, alpha=0.35)
        width = max(1, len(x) // POSITION_BINS)
        bins = len(x) // width
        centres = x[:bins * width].reshape(bins, width).mean(axis=1)
        left.plot(centres, loss[:bins * width].reshape(bins, width).mean(axis=1), color=colour, lw=1.6,
                  marker="o", ms=2.5, label=f"{name} ({part['scheme'][0]}, trained at {part['train_context'][0]})")
    for value, style, text in ((spec["short_context"], ":", "L"), (spec["context"], "--", "Lbar")):
        left.axvline(value, color="0.4", lw=0.8, ls=style)
        left.text(value, 1.0, text, transform=left.get_xaxis_transform(), fontsize=8, ha="center",
                  va="bottom")  # above the axes, off the data
    if spec["target_length"] != spec["context"]:
        left.axvline(spec["target_length"], color="tab:blue", lw=0.8, ls="-.")
    left.set_xlabel("position ID of the last token read")
    left.set_ylabel("held-out next-token loss (nats)")
    left.set_title(f"Loss by position ({by_position['windows'][0]} held-out windows; bold: "
                   f"mean over {max(1, by_position['position'].n_unique() // POSITION_BINS)} positions)",
                   fontsize=9, pad=14)
    left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)  # off the data

    table = pose_gain_by_tokens_needed(targets, analysed, spec)
    k_max = spec["k_max"]
    rng = np.random.default_rng(spec["seed"])
    right.axhline(0.0, color="0.5", lw=0.8, ls=":")
    for needed in range(1, k_max + 2):
        values = table.filter(pl.col("needed") == needed)["pose_gain"].to_numpy()
        if len(values) == 0:
            continue
        jitter = rng.uniform(-0.15, 0.15, len(values))
        right.scatter(needed + jitter, values, s=6, alpha=0.4, color="tab:blue", lw=0)
        median, low, high = bootstrap_median(values, spec["n_boot"], rng)
        right.errorbar([needed], [median], yerr=[[median - low], [high - median]], marker="s", ms=5,
                       capsize=4, color="black")
        right.text(needed, 1.0, f"n={len(values)}", transform=right.get_xaxis_transform(), ha="center",
                   va="bottom", fontsize=8)
    right.set_xticks(range(1, k_max + 2), [*map(str, range(1, k_max + 1)), f">{k_max}"])
    right.set_xlim(0.5, k_max + 1.5)
    right.set_xlabel(f"influential tokens needed to recover {spec['recover_fraction']:.0%} of the gain")
    right.set_ylabel("L_long(short_rope) - L_long(short_pose) (nats)")
    right.set_title(f"Gain from PoSE at context {spec['context']} ({table.height} targets with gain > "
                    f"{spec['gain_threshold']:g})", fontsize=9, pad=14)
    suptitle(fig, "RoPE vs RoPE + PoSE trained at the short context")
    save_figure(fig, outputs, rule, spec, inputs, stage="language_figures")
