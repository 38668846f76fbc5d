"""Shared figure plumbing: reading evaluation results, seed aggregation, reproducible saving."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from .. import datasets  # noqa: E402
from ..accuracy_schema import AccuracySchema  # noqa: E402
from ..provenance import attach, build_record  # noqa: E402

# Fixed metadata keeps PNG and PDF bytes identical across reruns (no timestamps, no versions).
_METADATA = {".png": {"Software": None}, ".pdf": {"Creator": None, "Producer": None, "CreationDate": None}}


def read_accuracy(paths: list[Path], metric: str | None = None) -> pl.DataFrame:
    """The evaluation results of ``paths`` in one frame; only ``metric``'s rows if given."""
    frame = pl.concat([datasets.read(p, AccuracySchema) for p in paths])
    return frame if metric is None else frame.filter(pl.col("metric") == metric)


def mean_over_seeds(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Mean accuracy over seeds per ``keys`` with the seeds' min and max as the spread."""
    return (frame.group_by(keys)
            .agg(mean=pl.col("accuracy").mean(), low=pl.col("accuracy").min(), high=pl.col("accuracy").max(),
                 seeds=pl.col("seed").n_unique(), ci_low=pl.col("ci_low").mean(), ci_high=pl.col("ci_high").mean())
            .sort(keys))


def save_figure(fig, outputs: list[Path], rule: str, spec: dict, inputs: list[Path], stage: str = "figures") -> None:
    """Save ``fig`` to every path of ``outputs`` (by suffix) with a provenance sidecar each; ``stage``
    names the code digest recorded (as the workflow's code param)."""
    record = build_record(rule, stage, spec, inputs={f"input{i}": p for i, p in enumerate(inputs)},
                          seeds={"seeds": spec.get("seeds", [])})
    for path in outputs:
        path = Path(path)
        attach(path, record, lambda tmp, _meta, path=path: fig.savefig(
            tmp, format=path.suffix[1:], metadata=_METADATA[path.suffix], dpi=150, bbox_inches="tight"))
    plt.close(fig)
