"""Sparse parity with a scratchpad (ours, beyond the paper): PPC against oracle coupling and RoPE+PoSE.

The scratchpad follows the running parity over the marked bits, each step coupled to the marked
pair it reads, so the position IDs depend on the input: the case PPC exists for. One panel per
k_test; answer accuracy (the final parity); one line per scheme (K_train in the title).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from ..evaluation.accuracy_schema import read_accuracy
from . import lines
from .shared import note_diverged, save_figure, suptitle


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "sparse_parity_scratchpad") -> None:
    from ..tasks import get_task

    layout = get_task(spec["task"]).layout
    frame = read_accuracy(inputs)
    summary = lines.summarize(frame, "answer")
    runs = lines.runs_of(spec)
    variants = list(spec["runs"])
    k_tests = sorted(set(summary["k"]))
    fig, axes = plt.subplots(len(variants), len(k_tests), squeeze=False, sharex=True, sharey=True,
                             figsize=(3.2 * len(k_tests) + 1.4, 2.8 * len(variants) + 0.6), layout="constrained")
    for row, variant in enumerate(variants):
        for col, k in enumerate(k_tests):
            lines.draw(axes[row][col], summary.filter(pl.col("k") == k), [r for r in runs if r[0] == variant],
                       spec, title=f"K_train={layout.k_train(variant)}, k_test={k}", chance=0.5, with_variant=False,
                       per_seed=frame.filter((pl.col("metric") == "answer") & (pl.col("k") == k)))
            axes[row][col].set_xlabel("length 2l")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", title="scheme", fontsize=8)
    suptitle(fig, "Sparse parity with a scratchpad: answer accuracy (mean over seeds; band: 95% interval, "
                  "seeds pooled)")
    note_diverged(fig, frame)
    save_figure(fig, outputs, rule, spec, inputs)
