"""The schema of an evaluation result of one trained model, in long format: one row per
(cell, metric) with the count of correct samples, the accuracy and its 95% Wilson interval.

A cell is keyed by its task's ``cell_columns``. Every table has ``k`` and ``length``: ``k`` is null
for tasks whose cells have no k_test. A task's other cell columns (e.g. ``depth`` of a task keyed by
(depth, length)) follow ``length``, in the task's order, each Int32 and never null: the schema of a
task's tables is :func:`accuracy_schema` of its cell columns (:class:`AccuracySchema` itself for
the tasks keyed by k and length only), and :func:`read` checks a file against the schema of the task
it names. ``k_train`` is null for runs trained without one. ``metric`` is ``exact_match`` (the
whole response), ``answer`` (the answer token), ``position_match`` (predicted position IDs, only
for schemes that predict them) or ``token_accuracy`` (response tokens right under teacher forcing;
its ``n`` counts the cell's response tokens, not its samples, and its interval treats the tokens
as independent, so it is narrower than the evidence warrants).
``correct``, ``accuracy`` and the interval are null, all four together, where the model's training
diverged (nothing to decode).
"""

import functools
from pathlib import Path

import polars as pl

from ..storage.table_schema import Field, TableSchema, dataframe_check
from .metrics import METRICS

KEY_COLUMNS = ("k", "length")  # the cell columns every table has


class RunCellSchema(TableSchema):
    """The columns every table about a trained model starts with: its run (:func:`run_columns`) and
    the cell keys every task has."""

    task: pl.String
    variant: pl.String
    scheme: pl.String
    k_train: pl.Int32 = Field(ge=1, nullable=True)
    seed: pl.Int64
    k: pl.Int32 = Field(ge=1, nullable=True)
    length: pl.Int32 = Field(ge=1)


class AccuracySchema(RunCellSchema):
    metric: pl.String = Field(isin=METRICS)
    n: pl.Int64 = Field(ge=1)
    correct: pl.Int64 = Field(ge=0, nullable=True)
    accuracy: pl.Float64 = Field(ge=0.0, le=1.0, nullable=True)
    ci_low: pl.Float64 = Field(ge=0.0, le=1.0, nullable=True)
    ci_high: pl.Float64 = Field(ge=0.0, le=1.0, nullable=True)

    @dataframe_check
    def correct_at_most_n(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("correct") <= pl.col("n")).fill_null(True))

    @dataframe_check
    def unscored_rows_are_null_throughout(cls, data) -> pl.LazyFrame:
        scored = [pl.col(name).is_null() for name in ("correct", "accuracy", "ci_low", "ci_high")]
        return data.lazyframe.select(pl.all_horizontal(scored) | ~pl.any_horizontal(scored))


COLUMNS = tuple(AccuracySchema.columns())


def run_columns(description: dict) -> list[pl.Expr]:
    """The columns naming a trained model's run (task, variant, scheme, k_train, seed), as constant
    expressions from its ``model.json`` description: the first columns of every table about it."""
    return [pl.lit(description["task"]).alias("task"), pl.lit(description["variant"]).alias("variant"),
            pl.lit(description["scheme"]).alias("scheme"),
            pl.lit(description["k_train"], dtype=pl.Int32).alias("k_train"),
            pl.lit(description["seed"], dtype=pl.Int64).alias("seed")]


def extra_cell_columns(cell_columns: tuple[str, ...]) -> tuple[str, ...]:
    """The cell columns of a task beyond ``k`` and ``length``, in the task's order."""
    return tuple(column for column in cell_columns if column not in KEY_COLUMNS)


def table_cell_columns(cell_columns: tuple[str, ...]) -> tuple[str, ...]:
    """The key columns of the tables of a task keyed by ``cell_columns``, in table order."""
    return (*KEY_COLUMNS, *extra_cell_columns(cell_columns))


@functools.cache
def accuracy_schema(cell_columns: tuple[str, ...]) -> type[AccuracySchema]:
    """The schema of the tables of a task keyed by ``cell_columns``: :class:`AccuracySchema` plus an
    Int32 column per extra cell column. A cell column that names another column of the table is an
    error."""
    return with_cell_columns(AccuracySchema, cell_columns)


def with_cell_columns(base: type[TableSchema], cell_columns: tuple[str, ...]) -> type[TableSchema]:
    """``base`` (a table keyed by ``k`` and ``length``) plus an Int32 column per cell column of
    ``cell_columns`` beyond those. A cell column that names another column of ``base`` is an error."""
    extra = extra_cell_columns(cell_columns)
    clash = [column for column in extra if column in base.columns()]
    if clash:
        raise ValueError(f"cell columns {clash} name columns every {base.__name__} table has; rename them")
    if not extra:
        return base
    namespace = {"__annotations__": dict.fromkeys(extra, pl.Int32), "__module__": base.__module__,
                 **{column: Field() for column in extra}}
    return type(f"{base.__name__}_{'_'.join(extra)}", (base,), namespace)


def read(path: str | Path) -> pl.DataFrame:
    """The accuracy table at ``path``, checked against the schema of the task it names (a file naming
    no registered task, or tasks keyed differently, is a DataError naming it)."""
    return read_accuracy([path])


def _loaded(path: str | Path) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The table at ``path``, unchecked, and the cell columns beyond ``k`` and ``length`` of the tasks
    it names (a DataError where it names no registered task, or tasks keyed differently)."""
    from .. import datasets
    from ..tasks import TASKS

    frame = datasets.load(path)
    names = frame["task"].unique().sort().to_list() if "task" in frame.columns else []
    unknown = [name for name in names if name not in TASKS]
    if unknown:
        raise datasets.DataError(f"{path}: names task {unknown[0]!r}, not one of {sorted(TASKS)}")
    keys = {extra_cell_columns(TASKS[name].cell_columns) for name in names}
    if len(keys) > 1:
        raise datasets.DataError(f"{path}: holds tasks {names} keyed by different cell columns")
    return frame, keys.pop() if keys else ()


def _check(tables: list[tuple[str | Path, pl.DataFrame]], schema: type[TableSchema]) -> None:
    """Check ``tables`` (path, frame) against ``schema`` in one pass over them all (every check of the
    schema is row by row, so the pass fails exactly when some table would alone); where it fails,
    each table alone, so the error names the file at fault."""
    from .. import datasets

    if len(tables) > 1:
        try:
            datasets.validate(pl.concat([frame for _, frame in tables]), schema, f"{len(tables)} tables")
            return
        except (datasets.DataError, pl.exceptions.PolarsError):  # some table differs: find it below
            pass
    for path, frame in tables:
        datasets.validate(frame, schema, path)


def cell_columns(frame: pl.DataFrame) -> list[str]:
    """The cell columns of accuracy rows ``frame`` (of one task or several): ``k``, ``length``, then
    the columns of its tasks beyond those every table has."""
    return [*KEY_COLUMNS, *(column for column in frame.columns if column not in COLUMNS)]


def read_accuracy(paths: list[Path], metric: str | None = None) -> pl.DataFrame:
    """The evaluation results of ``paths`` in one frame, in their order (each checked against its
    task's schema: the tables of tasks keyed alike in one pass, see :func:`_check`; a cell
    column of some of the tasks only is null in the others' rows); only ``metric``'s rows if given."""
    loaded = [_loaded(path) for path in paths]
    for keys in dict.fromkeys(keys for _, keys in loaded):
        _check([(path, frame) for path, (frame, same) in zip(paths, loaded, strict=False) if same == keys],
               accuracy_schema(KEY_COLUMNS + keys))
    frame = pl.concat([frame for frame, _ in loaded], how="diagonal")
    return frame if metric is None else frame.filter(pl.col("metric") == metric)
