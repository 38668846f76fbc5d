"""Addition (Cho et al. 2024): exact match of the whole sum (left) and accuracy of the carry out of
the top digit (right) against the number of operand digits n, one line per positional scheme.

Kept out of the task module: a task module's code digest covers what it imports, so drawing code
there would rerun the task's data, training and evaluation whenever the plotting helpers change.
"""

from __future__ import annotations

from pathlib import Path

from . import lines


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "addition") -> None:
    lines.metric_panels(spec, inputs, outputs, rule,
                        panels=[("exact_match", "whole sum (exact match)", None),
                                ("answer", "carry out c_{n+1}", None)],
                        x_label="operand digits n",
                        title="Addition: length generalization (mean over seeds; band: 95% interval, seeds pooled)")
