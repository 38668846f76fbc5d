"""Figure 3: variable assignment, the paper's four panels plus the oracle-coupled upper bound.

(a) scratchpad + PPC, (b) scratchpad + absolute positions with a random shift, (c) RoPE + PoSE
without a scratchpad (answer accuracy), (d) RoPE + PoSE with a scratchpad (full-string accuracy).
Panel (a) also shows scratchpad + coupled (oracle position IDs at evaluation), in its own colour, as the upper
bound PPC aims at. Scratchpad panels score the full response by exact match. A panel whose run is
not in the config says so.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..evaluation.accuracy_schema import read_accuracy
from . import lines
from .shared import grid_figure, note_diverged, save_figure, suptitle

PANELS = (  # title, metric, runs (variant, scheme)
    ("(a) scratchpad + PPC", "exact_match", [("scratchpad", "ppc"), ("scratchpad", "coupled")]),
    ("(b) scratchpad + abs_shift", "exact_match", [("scratchpad", "abs_shift")]),
    ("(c) RoPE+PoSE, no scratchpad (answer)", "answer", [("direct", "rope_pose")]),
    ("(d) RoPE+PoSE, scratchpad (full string)", "exact_match", [("scratchpad", "rope_pose")]),
)


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "figure3") -> None:
    frame = read_accuracy(inputs)
    fig, _, axes = grid_figure(len(PANELS), (3.4, 3.3), sharey=True)
    for ax, (title, metric, runs) in zip(axes, PANELS, strict=False):
        summary = lines.summarize(frame, metric)
        lines.draw(ax, summary, runs, spec, title=title, with_variant=False,
                   per_seed=frame.filter(pl.col("metric") == metric))
        present = summary.filter(pl.struct("variant", "scheme").is_in(
            [{"variant": v, "scheme": s} for v, s in runs]))
        if present.is_empty():
            ax.text(0.5, 0.5, "not in this config", ha="center", va="center", transform=ax.transAxes)
        else:
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)  # off the data
        ax.set_xlabel("statements n")
    suptitle(fig, "Variable assignment: length generalization (mean over seeds; band: 95% interval, seeds pooled)")
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)
