"""Task datasets as Parquet: ragged columns, schema checks on write and read, provenance metadata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandera.polars as pa
import polars as pl
import pyarrow as pa_arrow

from ..bookkeeping.provenance import attach


class DataError(ValueError):
    """A dataset file that does not match its task's schema."""


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


def validate(frame: pl.DataFrame, schema: type[pa.DataFrameModel], path: str | Path) -> pl.DataFrame:
    """Check ``frame`` eagerly (names, dtypes and data); errors name the file and the column (an
    unknown or missing column by name, before pandera's own message)."""
    expected = set(schema.to_schema().columns)
    unknown, missing = sorted(set(frame.columns) - expected), sorted(expected - set(frame.columns))
    if unknown or missing:
        raise DataError(f"{path}: does not match {schema.__name__}: "
                        + "; ".join(f"{what} column(s) {', '.join(map(repr, names))}"
                                    for what, names in (("unknown", unknown), ("missing", missing)) if names))
    try:
        return schema.validate(frame)
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as err:
        raise DataError(f"{path}: does not match {schema.__name__}: {err}") from None


def write(frame: pl.DataFrame, path: str | Path, schema: type[pa.DataFrameModel], record: dict) -> None:
    """Validate, then write Parquet with the provenance record in its key-value metadata and a sidecar."""
    frame = validate(frame, schema, path)
    attach(path, record, lambda tmp, meta: frame.write_parquet(tmp, metadata=meta, statistics=False))


def read(path: str | Path, schema: type[pa.DataFrameModel]) -> pl.DataFrame:
    """Read a Parquet file written by :func:`write` and check it against ``schema``."""
    return validate(load(path), schema, path)


def load(path: str | Path) -> pl.DataFrame:
    """Read a Parquet file, unchecked (see :func:`read`); a missing or unreadable file is a DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such dataset file")
    try:
        return pl.read_parquet(path)
    except Exception as err:  # polars raises several types for unreadable files
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None

