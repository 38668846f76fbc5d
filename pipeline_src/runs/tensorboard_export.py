"""Training logs as TensorBoard event files (``lengthgen tensorboard``; needs the ``tensorboard`` extra).

Every model's training log under a results folder becomes one TensorBoard run: a synthetic task's
``train/<task>/<scheme>/<variant>/seed<S>/train_log.parquet`` the run ``<task>/<scheme>/<variant>/seed<S>``
(its path relative to ``train/``), a language model's ``language/train/<model>/`` the run
``language/<model>``, with its held-out log (``heldout_log.parquet``) beside its training log. Each
column of a log but ``step`` is a scalar of that name at every logged step; a NaN (the position
accuracy of a model without a position head) is left out. A point's wall time is the training time
of its step (the log's ``seconds``) counted from when the run started: the log file's modification
time less the run's duration, so TensorBoard's relative time axis shows training time.

The writer is torch's ``SummaryWriter``, which needs the ``tensorboard`` package (torch ships none of
its own). The pipeline never runs this: the export is for looking at runs, nothing reads it back.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from ..planning import paths

EXTRA = "pip install 'lengthgen[tensorboard]'"


class ExportError(RuntimeError):
    """The export cannot run (the tensorboard package missing, no training log found)."""


def runs(results: Path) -> dict[str, list[Path]]:
    """Every model's logs under the results folder ``results``, by TensorBoard run name (training log
    first)."""
    found = {paths.cell(**cell): [path] for path, cell in paths.find(paths.train_outputs()["log_table"], results)}
    for role in ("log_table", "heldout_table"):
        for path, model in paths.find(paths.language_train_outputs()[role], results):
            found.setdefault(f"language/{model['lm']}", []).append(path)
    return found


def summary_writer():
    """torch's ``SummaryWriter`` class, or an :class:`ExportError` naming the extra to install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ExportError(f"TensorBoard export needs the tensorboard package: {EXTRA}") from None
    return SummaryWriter


def export(results: Path, out_dir: Path) -> list[str]:
    """Write the logs of every model under ``results`` as event files under ``out_dir/<run>/``
    (replacing a run's earlier event files there); the run names, sorted."""
    writer_class = summary_writer()
    found = runs(results)
    if not found:
        raise ExportError(f"{results}: no training log (train/<task>/<scheme>/<variant>/seed<S>/train_log.parquet "
                          "or language/train/<model>/train_log.parquet)")
    for name, logs in sorted(found.items()):
        folder = Path(out_dir, name)
        for old in folder.glob("events.out.tfevents.*"):
            old.unlink()
        writer = writer_class(log_dir=str(folder))
        try:
            tables = [pl.read_parquet(log) for log in logs]
            clock = (dict(zip(tables[0]["step"], tables[0]["seconds"], strict=False))
                     if "seconds" in tables[0].columns else {})
            start = logs[0].stat().st_mtime - max(clock.values(), default=0.0)
            for table in tables:
                write_scalars(writer, table, start, clock)
        finally:
            writer.close()
    return sorted(found)


def write_scalars(writer, table: pl.DataFrame, start: float, clock: dict[int, float]) -> None:
    """Every numeric column of ``table`` but ``step`` as a scalar at each step (NaN and null left
    out), at wall time ``start`` plus the training time ``clock`` gives the step."""
    columns = [name for name, dtype in table.schema.items() if name != "step" and dtype.is_numeric()]
    for row in table.select("step", *columns).iter_rows(named=True):
        for column in columns:
            value = row[column]
            if value is not None and not math.isnan(value):
                writer.add_scalar(column, value, row["step"], walltime=start + clock.get(row["step"], 0.0))
