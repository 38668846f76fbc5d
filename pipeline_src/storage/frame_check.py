"""A pandera (polars) schema's checks of a frame run as one polars query: :func:`passes`.

pandera runs each check of a schema as queries of its own (a dtype, a null count, a uniqueness test
and every ``Check``, each collected apart, some twice), and at our frames' sizes polars' cost is per
query: a task dataset's dozen checks take some 25 ms, nearly all of it overhead. :func:`passes` builds
the same checks (the same check functions, the same treatment of nulls and NaNs) and collects them all
at once. It only ever says yes where pandera would: on anything it does not model (coercion, a
regex or grouped column, a check that warns instead of failing, a column set that is not the
schema's) it says no, and so does it on any failure, leaving pandera to decide and to word the error
(:func:`pipeline_src.datasets.validate` calls pandera exactly then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pandera.polars as pa

FLOATS = (pl.Float32, pl.Float64)  # where pandera counts a NaN as a null


def passes(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> bool:
    """Whether ``frame`` passes every check of ``model``: True only where pandera's ``validate``
    would return it unchanged; False where it would not, or where this cannot tell."""
    try:
        queries = _queries(frame, model.to_schema())
        return queries is not None and all(found.item() is True for found in pl.collect_all(queries))
    except Exception:  # a schema or check this does not model, or one that fails to run: pandera decides
        return False


def _queries(frame: pl.DataFrame, schema) -> list[pl.LazyFrame] | None:
    """One single-boolean query per check of ``schema`` on ``frame``; None where a check already fails
    (a dtype, a multi-column uniqueness) or is beyond what :func:`passes` models."""
    from pandera.api.polars.types import PolarsData

    if (schema.coerce or schema.ordered or schema.parsers or getattr(schema, "add_missing_columns", False)
            or getattr(schema, "drop_invalid_rows", False) or set(frame.columns) != set(schema.columns)):
        return None
    lazy, queries = frame.lazy(), []
    for name, column in schema.columns.items():
        if (column.coerce or column.regex or column.parsers or not column.required
                or getattr(column, "drop_invalid_rows", False)):
            return None
        dtype = frame.schema[name]
        if column.dtype is not None and not column.dtype.check(dtype, PolarsData(lazy.select(name), name)):
            return None
        if not column.nullable:
            present = pl.col(name).is_not_null()
            queries.append(lazy.select((present & pl.col(name).is_not_nan() if dtype in FLOATS else present).all()))
        if column.unique:
            queries.append(lazy.select(pl.col(name).is_duplicated().any().not_()))
        queries += [_passed(check, lazy, name) for check in column.checks]
    if schema.unique:
        subsets = [schema.unique] if all(isinstance(name, str) for name in schema.unique) else schema.unique
        if any(frame.select(subset).is_duplicated().any() for subset in subsets):
            return None
    queries += [_passed(check, lazy, None) for check in schema.checks]
    return queries


def _passed(check, lazy: pl.LazyFrame, key: str | None) -> pl.LazyFrame:
    """The query of whether ``check`` passes on ``lazy`` (column ``key``, or the frame): pandera's
    own backend applies the check function; a null outcome passes only where the check ignores
    nulls, as pandera's postprocessing has it."""
    from pandera.api.polars.types import PolarsData
    from pandera.constants import CHECK_OUTPUT_KEY

    if check.raise_warning or check.groupby is not None:
        raise ValueError("a check pandera runs otherwise")
    builtin = getattr(check._check_fn, "__name__", None)  # as Check.__call__ does before applying
    if builtin is not None and check.is_builtin_check(builtin):
        check._check_fn = check.get_builtin_check_fn(builtin)
    backend = check.get_backend(lazy)(check)
    out = backend.apply(PolarsData(backend.preprocess(lazy, key), key or "*"))
    if isinstance(out, bool):
        return pl.LazyFrame({CHECK_OUTPUT_KEY: [out]})
    outcome = pl.col(CHECK_OUTPUT_KEY)
    outcome = outcome | outcome.is_null() if check.ignore_na else outcome.fill_null(False)
    return out.select(outcome.all())
