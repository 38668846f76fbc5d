"""Figure 2: parity with a scratchpad, accuracy against length n per positional scheme.

Left: answer accuracy (the final parity s_n); right: full-string exact match of the response.
Solid lines train with the scratchpad, dashed ones without (``direct``) where the config runs them.
"""

from __future__ import annotations

from pathlib import Path

from . import lines


def plot(spec: dict, inputs: list[Path], outputs: list[Path], rule: str = "figure2") -> None:
    lines.metric_panels(spec, inputs, outputs, rule,
                        panels=[("answer", "answer s_n", 0.5), ("exact_match", "full response (exact match)", None)],
                        x_label="length n (bits)",
                        title="Parity with a scratchpad: length generalization (mean over seeds; band: 95% interval, "
                              "seeds pooled)")
