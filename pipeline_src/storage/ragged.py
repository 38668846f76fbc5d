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
    values = _int32_array(padded[keep])
    offsets = _int32_array(np.concatenate([[0], np.cumsum(lengths)]))
    return pl.Series(pa_arrow.ListArray.from_arrays(offsets, values))


def _int32_array(values: np.ndarray) -> pa_arrow.Array:
    """``values`` as an Arrow int32 array over their own buffer (``pyarrow.array`` of a NumPy array
    would import pandas, half a second, to ask whether it is a pandas object)."""
    values = np.ascontiguousarray(values, dtype=np.int32)
    return pa_arrow.Array.from_buffers(pa_arrow.int32(), len(values), [None, pa_arrow.py_buffer(values)])


def padded(series: pl.Series, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`ragged`: a polars List column -> (right-padded int64 matrix, lengths)."""
    lengths = series.list.len().to_numpy().astype(np.int64)
    values = series.explode().to_numpy().astype(np.int64)
    out = np.full((len(series), int(lengths.max(initial=0))), pad, dtype=np.int64)
    keep = np.arange(out.shape[1])[None, :] < lengths[:, None]
    out[keep] = values
    return out, lengths
