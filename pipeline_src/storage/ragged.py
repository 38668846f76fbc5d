"""Ragged list columns: a right-padded matrix with its row lengths as a polars List(Int32) column,
and back (a task frame's ``prompt``, ``response`` and their position IDs; a target's context)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa_arrow


def ragged(padded: np.ndarray, lengths: np.ndarray) -> pl.Series:
    """Turn a right-padded [n, w] matrix plus row lengths into a polars List(Int32) series."""
    lengths = np.asarray(lengths, dtype=np.int64)
    keep = np.arange(padded.shape[1])[None, :] < lengths[:, None]
    values = pa_arrow.array(np.ascontiguousarray(padded[keep]).astype(np.int32))
    offsets = pa_arrow.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return pl.Series(pa_arrow.ListArray.from_arrays(offsets, values))


def padded(series: pl.Series, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`ragged`: a polars List column -> (right-padded int64 matrix, lengths)."""
    lengths = series.list.len().to_numpy().astype(np.int64)
    values = series.explode().to_numpy().astype(np.int64)
    out = np.full((len(series), int(lengths.max(initial=0))), pad, dtype=np.int64)
    keep = np.arange(out.shape[1])[None, :] < lengths[:, None]
    out[keep] = values
    return out, lengths
