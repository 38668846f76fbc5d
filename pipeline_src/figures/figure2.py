"""Figure 2: parity with a scratchpad, accuracy against length n per positional scheme.

Left: answer accuracy (the final parity s_n); right: full-string exact match of the response.
Solid lines train with the scratchpad, dashed ones without (``direct``) where the config runs them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from . import lines
from .common import note_diverged, read_accuracy, save_figure


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "figure2") -> None:
    frame = read_accuracy(inputs)
    runs = lines.runs_of(spec)
    fig, axes = plt.subplots(1, 2, sharey=True, figsize=(10, 3.8), layout="constrained")
    for ax, (metric, title, chance) in zip(axes, [("answer", "answer s_n", 0.5),
                                                  ("exact_match", "full response (exact match)", None)]):
        lines.draw(ax, lines.summarize(frame, metric), runs, spec, title=title, chance=chance,
                   with_variant=len(spec["runs"]) > 1)
        ax.set_xlabel("length n (bits)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="scheme", fontsize=8)
    fig.suptitle("Parity with a scratchpad: length generalization (mean over seeds, band = spread)", fontsize=10)
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)
