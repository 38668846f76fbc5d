"""Task datasets as Parquet: schema checks on write and read, provenance metadata (their ragged
columns: :mod:`pipeline_src.storage.ragged`).

A file is checked against its schema (:mod:`.storage.table_schema`) when it is written and when it
is read, except where the reader's schema is the writer's and the file still has the bytes that
passed (see :func:`read`).
A file is never used when its bytes differ from the SHA-256 its provenance sidecar recorded.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Union

import polars as pl

from .provenance.sidecars import attach, read_checked
from .storage.errors import library_failure, os_error

if TYPE_CHECKING:
    from .storage.table_schema import TableSchema

    Schema = Union[type[TableSchema], Callable[[], type[TableSchema]]]


class DataError(ValueError):
    """A dataset file that does not match its task's schema."""


def validate(frame: pl.DataFrame, schema: type[TableSchema], path: str | Path) -> pl.DataFrame:
    """Check ``frame`` eagerly (names, dtypes and data); errors name the file and the column (an
    unknown or missing column by name, before pandera's own message). Every check runs in one polars
    query first (:func:`.storage.frame_check.passes`); pandera itself (the schema's pandera model)
    only where that does not pass, to decide and to say why."""
    from .storage.frame_check import passes

    expected = set(schema.columns())
    unknown, missing = sorted(set(frame.columns) - expected), sorted(expected - set(frame.columns))
    if unknown or missing:
        raise DataError(f"{path}: does not match {schema.__name__}: "
                        + "; ".join(f"{what} column(s) {', '.join(map(repr, names))}"
                                    for what, names in (("unknown", unknown), ("missing", missing)) if names))
    if passes(frame, schema):
        return frame
    import pandera.polars as pa

    try:
        return schema.validate(frame)  # pandera's model of the schema
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as err:
        raise DataError(f"{path}: does not match {schema.__name__}: {err}") from None


def write(frame: pl.DataFrame, path: str | Path, schema: type[TableSchema], record: dict) -> None:
    """Validate, then write Parquet with the provenance record in its key-value metadata and a sidecar."""
    frame = validate(frame, schema, path)
    attach(path, record, lambda tmp, meta: frame.write_parquet(tmp, metadata=meta, statistics=False))


def read(path: str | Path, schema: Schema, *, checked_when_written: bool = False) -> pl.DataFrame:
    """Read a Parquet file written by :func:`write` (see :func:`load`) and check it against
    ``schema`` (a table schema, or a function that makes it when it is needed).

    ``checked_when_written`` says that ``schema`` is the one the writer checked the file against (a
    task's datasets: the task fixes their schema). Then a file whose bytes still have the SHA-256 its
    provenance sidecar recorded is the file that passed that check and is not checked again. A file
    without a sidecar (made by hand) is always checked."""
    frame, recorded = _load(path)
    if recorded and checked_when_written:
        return frame
    return validate(frame, schema if isinstance(schema, type) else schema(), path)


def load(path: str | Path) -> pl.DataFrame:
    """Read a Parquet file, without a schema check (see :func:`read`). A file with a provenance
    sidecar must still have the SHA-256 recorded there; a missing, changed or unreadable file is a
    DataError naming it."""
    return _load(path)[0]


def _load(path: str | Path) -> tuple[pl.DataFrame, bool]:
    """The frame in ``path``, and whether its bytes are those its sidecar recorded (False: none)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such dataset file")
    try:
        data, recorded = read_checked(path, DataError)
    except OSError as err:
        raise DataError(f"{path}: cannot read ({os_error(err)})") from None
    try:
        return pl.read_parquet(io.BytesIO(data)), recorded
    except BaseException as err:  # polars raises several types, and panics
        if not library_failure(err):
            raise
        raise DataError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err})") from None
