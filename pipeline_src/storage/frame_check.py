"""Every check of a table schema (:mod:`.table_schema`) on a frame, as one polars query: :func:`passes`.

pandera runs each check as queries of its own (a dtype, a null count, a uniqueness test and every
check, each collected apart, some twice), and at our frames' sizes polars' cost is per query: a task
dataset's dozen checks take some 25 ms that way, nearly all of it overhead, besides the second
pandera takes to import. :func:`passes` runs a schema's checks as pandera's polars backend states
them for the schema's pandera model (:meth:`.TableSchema.pandera`), without making it: a bound as
``pl.col(c).ge(v)``, ``le`` and ``is_in`` alike; a null outcome of a check passes (pandera's
``ignore_na``); a non-nullable column holds no null, nor NaN in a float column; a dtype is the
declared one exactly. It says yes only where pandera would, and no on any failure and on anything
it does not model (a check that returns several columns), leaving pandera to decide and to word
the error (:func:`pipeline_src.datasets.validate` calls pandera exactly then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from .table_schema import FrameData

if TYPE_CHECKING:
    from .table_schema import TableSchema

FLOATS = (pl.Float32, pl.Float64)  # where pandera counts a NaN as a null
BOUNDS = {"ge": pl.Expr.ge, "le": pl.Expr.le, "isin": pl.Expr.is_in}  # pandera's builtin polars checks


def passes(frame: pl.DataFrame, schema: type[TableSchema]) -> bool:
    """Whether ``frame`` passes every check of ``schema``: True only where pandera's ``validate`` of
    its model would return it unchanged; False where it would not, or where this cannot tell."""
    try:
        queries = _queries(frame, schema)
        return queries is not None and all(found.item() is True for found in pl.collect_all(queries))
    except Exception:  # a check that fails to run: pandera decides
        return False


def _queries(frame: pl.DataFrame, schema: type[TableSchema]) -> list[pl.LazyFrame] | None:
    """One single-boolean query per check of ``schema`` on ``frame``; None where a check already fails
    (the column set, a dtype, a multi-column uniqueness) or is beyond what :func:`passes` models."""
    columns = schema.columns()
    if set(frame.columns) != set(columns):
        return None
    lazy, queries = frame.lazy(), []
    for name, (dtype, field) in columns.items():
        found = frame.schema[name]
        if found != dtype:
            return None
        if not field.nullable:
            present = pl.col(name).is_not_null()
            queries.append(lazy.select((present & pl.col(name).is_not_nan() if found in FLOATS else present).all()))
        if field.unique:
            queries.append(lazy.select(pl.col(name).is_duplicated().any().not_()))
        queries += [_passed(lazy.select(BOUNDS[check](pl.col(name), value))) for check, value in field.bounds().items()]
    if schema.unique() and frame.select(schema.unique()).is_duplicated().any():
        return None
    for check in schema.checks().values():
        out = check(schema, FrameData(lazy))
        if len(out.collect_schema()) != 1:
            return None
        queries.append(_passed(out))
    return queries


def _passed(out: pl.LazyFrame) -> pl.LazyFrame:
    """Whether the one boolean column of ``out`` holds no False (a null outcome passes)."""
    outcome = pl.first()
    return out.select((outcome | outcome.is_null()).all())
