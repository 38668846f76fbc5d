"""Accuracy tables for reading results without opening a figure: one row per training run and cell
(variant, scheme, and the task's cell columns beyond length: k_test for sparse parity, none for the
others), one column per evaluation length, each entry
the mean accuracy over seeds of one metric. Printed as Markdown. A run whose training diverged has
no accuracy: it takes no part in the means, and ``seeds`` counts only the seeds that have one.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..evaluation import accuracy_schema


def accuracy_table(paths: list[Path], metric: str) -> pl.DataFrame:
    """Mean over seeds of ``metric`` per (task, variant, scheme, k_train, cell columns but length) and
    length, wide; key columns null throughout (``k_train`` and ``k`` where no task has them) are left out."""
    frame = accuracy_schema.read_accuracy(paths, metric)
    if frame.is_empty():
        raise ValueError(f"no rows with metric {metric!r} in the {len(paths)} given files")
    cells = [column for column in accuracy_schema.cell_columns(frame) if column != "length"]
    keys = ["task", "variant", "scheme", "k_train", *cells]
    means = (frame.group_by([*keys, "length"])
             .agg(mean=pl.col("accuracy").mean(), seeds=pl.col("accuracy").count())
             .sort("length"))
    seeds = means.group_by(keys).agg(seeds=pl.col("seeds").min())
    wide = means.pivot(on="length", index=keys, values="mean", sort_columns=False)
    table = wide.join(seeds, on=keys, nulls_equal=True).sort(keys, nulls_last=True)
    unused = [key for key in keys if table[key].null_count() == len(table)]
    return table.drop(unused)


def markdown(table: pl.DataFrame, digits: int = 2) -> str:
    """``table`` as a Markdown table; numbers rounded to ``digits`` decimals."""
    def cell(value) -> str:
        if value is None:
            return "-"
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    header = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.iter_rows()]
    return "\n".join(lines)
