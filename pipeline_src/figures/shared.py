"""Shared figure plumbing: reading evaluation results, seed aggregation, naming the runs whose
training diverged (they have no accuracy and are left out of the means), grids of panels that stay
readable in the report, reproducible saving."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from ..provenance.records import build_record  # noqa: E402
from ..provenance.sidecars import attach, upstream_values  # noqa: E402

# Fixed metadata keeps PNG and PDF bytes identical across reruns (no timestamps, no versions).
_METADATA = {".png": {"Software": None}, ".pdf": {"Creator": None, "Producer": None, "CreationDate": None}}
DPI = 150  # every PNG's resolution
# Snakemake's report shows an image at most this wide (px) in a 1280 x 800 window, scaling a wider one
# down (measured in Chromium: tests/test_workflow.py): a 2266-px figure's 7-pt labels (15 px in the
# image) showed under 7 px tall there.
REPORT_WIDTH_PX = 1020
MIN_TEXT_PX = 9  # the smallest text a figure may show, in px, at the size the report shows it
MAX_COLUMNS = 3  # panels per row of a many-panel figure: 3 panels of about 3.5 in keep 8-pt text readable


def mean_over_seeds(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys``: ``mean`` accuracy over seeds; ``low``, ``high``: the 95% Wilson interval of the
    seeds' pooled counts (every finished seed's samples together: the one band every figure draws,
    whatever the number of seeds); ``seed_min``, ``seed_max``: the seeds' own extremes; ``seeds``:
    the seeds with an accuracy (a diverged run has none, and takes no part: null where every seed
    diverged)."""
    from ..evaluation.stats import wilson_interval

    finished = pl.col("correct").is_not_null()
    summary = (frame.group_by(keys)
               .agg(mean=pl.col("accuracy").mean(), seed_min=pl.col("accuracy").min(),
                    seed_max=pl.col("accuracy").max(), seeds=pl.col("accuracy").count(),
                    pooled_correct=pl.col("correct").filter(finished).sum(),
                    pooled_n=pl.col("n").filter(finished).sum())
               .sort(keys))
    scored = (summary["pooled_n"] > 0).to_numpy()
    low, high = np.full(len(summary), np.nan), np.full(len(summary), np.nan)
    low[scored], high[scored] = wilson_interval(summary["pooled_correct"].to_numpy()[scored],
                                                summary["pooled_n"].to_numpy()[scored])
    return summary.with_columns(low=pl.Series(low, nan_to_null=True), high=pl.Series(high, nan_to_null=True)
                                ).drop("pooled_correct", "pooled_n")


def diverged_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """task, scheme, variant and seed of every run in ``frame`` whose training diverged (no accuracy)."""
    return frame.filter(pl.col("accuracy").is_null()).select("task", "scheme", "variant", "seed").unique()


def diverged_runs(frame: pl.DataFrame) -> list[str]:
    """task/scheme/variant seedN of every run in ``frame`` whose training diverged, sorted."""
    failed = diverged_cells(frame)
    return [f"{task}/{scheme}/{variant} seed{seed}" for task, scheme, variant, seed in sorted(failed.iter_rows())]


def note_diverged(fig, frame: pl.DataFrame) -> None:
    """Name, under the figure, the runs of ``frame`` whose training diverged (nothing if none)."""
    failed = diverged_runs(frame)
    if failed:
        fig.text(0.5, -0.01, "Training diverged (no accuracy; left out of the means): " + ", ".join(failed),
                 ha="center", va="top", fontsize=8, color="tab:red", wrap=True)


def grid_columns(panels: int, most: int = MAX_COLUMNS) -> int:
    """Columns of a grid of ``panels`` panels: all in one row up to ``most``; beyond, the number
    from 2 to ``most`` that leaves the fewest cells empty (the more columns on a tie)."""
    if panels <= most:
        return panels
    return min(range(2, most + 1), key=lambda columns: (math.ceil(panels / columns) * columns - panels, -columns))


def panel_grid(panels: int, most: int = MAX_COLUMNS) -> tuple[int, int]:
    """(rows, columns) of :func:`grid_columns`' grid of ``panels`` panels."""
    columns = grid_columns(panels, most)
    return math.ceil(panels / columns), columns


def grid_figure(panels: int, panel_size: tuple[float, float], extra_width: float = 0.0, **subplots):
    """A figure of ``panels`` panels in :func:`panel_grid`'s grid, each ``panel_size`` inches (plus
    ``extra_width`` for a legend or colour bar), the grid's spare cells hidden: the figure, the whole
    grid of axes, and the ``panels`` shown ones in reading order."""
    rows, columns = panel_grid(panels)
    fig, grid = plt.subplots(rows, columns, squeeze=False, layout="constrained", **subplots,
                             figsize=(panel_size[0] * columns + extra_width, panel_size[1] * rows))
    for ax in grid.ravel()[panels:]:
        ax.set_visible(False)
    return fig, grid, list(grid.ravel()[:panels])


def suptitle(fig, text: str) -> None:
    """``fig``'s title, wrapped to the figure's width (a one-line title wider than the panels would
    widen the saved image, and shrink everything in it, by the title's overhang)."""
    fig.suptitle(textwrap.fill(text, max(40, int(fig.get_figwidth() * 12))), fontsize=10)


def text_px_in_report(fig, drawn: bool = False) -> float:
    """The height in px of ``fig``'s smallest visible text as the report shows the saved PNG (font
    size at :data:`DPI`, scaled down when the tight image is wider than :data:`REPORT_WIDTH_PX`).
    ``drawn``: ``fig`` was drawn already (saved), so its tick labels have their text and its layout is done."""
    from matplotlib.text import Text

    if not drawn:
        fig.draw_without_rendering()  # tick labels get their text when drawn
    renderer = fig.canvas.get_renderer()
    sizes = [text.get_fontsize() for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip()]
    if not sizes:
        return math.inf
    width_px = (fig.get_tightbbox(renderer).width + 0.2) * DPI  # savefig's bbox_inches="tight", 0.1-in pad each side
    return min(sizes) * DPI / 72 * min(1.0, REPORT_WIDTH_PX / width_px)


def _seeds(spec: dict) -> dict:
    """The seeds a figure's record lists: the training seeds of a synthetic figure (``seeds``), the
    bootstrap seed of a language figure (``seed``)."""
    return {key: spec[key] for key in ("seeds", "seed") if key in spec} or {"seeds": []}


def save_figure(fig, outputs: list[Path], rule: str, spec: dict, inputs: list[Path], stage: str = "figures") -> None:
    """Save ``fig`` to every path of ``outputs`` (by suffix) with a provenance sidecar each; ``stage``
    (and the spec's ``task``, for a task's figure) names the code digest recorded (as the workflow's
    code param). The record also holds what the inputs were made from (``made_with``: sizes, steps,
    samples, seeds and code versions upstream), which the figure's caption states."""
    record = build_record(rule, stage, spec, inputs={f"input{i}": p for i, p in enumerate(inputs)},
                          seeds=_seeds(spec), task=spec.get("task"))
    record["made_with"] = upstream_values(inputs)
    for path in outputs:
        path = Path(path)
        attach(path, record, lambda tmp, _meta, path=path: fig.savefig(
            tmp, format=path.suffix[1:], metadata=_METADATA[path.suffix], dpi=DPI, bbox_inches="tight"))
    shown = text_px_in_report(fig, drawn=bool(outputs))  # measured on the saved layout: no third drawing
    if shown < MIN_TEXT_PX:
        print(f"warning: {rule}: its smallest text shows {shown:.1f} px tall in the report (at least {MIN_TEXT_PX} "
              "wanted): fewer panels per row or a larger font", file=sys.stderr)
    plt.close(fig)
