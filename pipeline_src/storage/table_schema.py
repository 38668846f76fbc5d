"""Table schemas declared without pandera: :class:`TableSchema`, :class:`Field`, :func:`dataframe_check`.

A schema is a subclass of :class:`TableSchema`. Its annotated attributes are its columns, each a
polars dtype, and ``= Field(...)`` gives a column its checks; its methods marked with
:func:`dataframe_check` check the whole frame (each returns a one-column boolean LazyFrame from
``data.lazyframe``). A subclass adds columns and checks to its base's; private names (``_vocab_size``)
are parameters the checks read, not columns. Every schema is strict (a frame has exactly its columns)
and never coerces a dtype; ``class Config: unique = [...]`` names columns that are unique together.

:func:`.frame_check.passes` runs every check of a schema in one polars query. Where that does not
pass, :meth:`TableSchema.pandera` makes the same schema as a pandera model, which decides and says
why (:func:`pipeline_src.datasets.validate`). So pandera, which takes longer to import than a small
job runs, is imported only for a frame that may be wrong.

A module with ``from __future__ import annotations`` may declare schemas too: a column's string
annotation is then read in the module's namespace (``pl.Int32`` with polars imported at its top).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import polars as pl


@dataclass(frozen=True)
class Field:
    """A column's checks: its bounds (``ge``, ``le``), its allowed values (``isin``), whether it may
    hold nulls (``nullable``: in a float column NaN counts as null) and whether its values are unique."""

    ge: Any = None
    le: Any = None
    isin: list | None = None
    nullable: bool = False
    unique: bool = False

    def bounds(self) -> dict[str, Any]:
        """The value checks given (``ge``, ``le``, ``isin``), in pandera's order of them."""
        return {name: getattr(self, name) for name in ("ge", "le", "isin") if getattr(self, name) is not None}


class Column(NamedTuple):
    dtype: pl.DataType
    field: Field


class FrameData(NamedTuple):
    """What a :func:`dataframe_check` is given: the frame, as pandera gives it (``data.lazyframe``)."""

    lazyframe: pl.LazyFrame


def dataframe_check(check: Callable) -> Callable:
    """Mark ``check(cls, data) -> pl.LazyFrame`` (one boolean column, a null counting as a pass) as
    a check of the whole frame of its schema and of every subclass (``cls`` is the subclass)."""
    check.is_dataframe_check = True
    return check


class TableSchema:
    """The base of every table schema (see the module's docstring). Not a schema by itself."""

    _columns: dict[str, Column] = {}
    _checks: dict[str, Callable] = {}
    _unique: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        columns = dict(cls._columns)
        for name, dtype in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_"):
                continue
            if name in vars(TableSchema):
                raise TypeError(f"{cls.__name__}.{name}: a column cannot be named as a method of TableSchema")
            if isinstance(dtype, str):  # a module with ``from __future__ import annotations``
                dtype = _evaluated(cls, name, dtype)
            if not (isinstance(dtype, pl.DataType) or isinstance(dtype, type) and issubclass(dtype, pl.DataType)):
                raise TypeError(f"{cls.__name__}.{name}: annotate a column with a polars dtype, not {dtype!r}")
            field = cls.__dict__.get(name, Field())
            if not isinstance(field, Field):
                raise TypeError(f"{cls.__name__}.{name}: a column's value must be a Field, not {field!r}")
            columns[name] = Column(dtype, field)
        cls._columns = columns
        own = {name: value for name, value in cls.__dict__.items() if getattr(value, "is_dataframe_check", False)}
        # a class's own checks first, then its bases' (pandera's order: the first failing one is named)
        cls._checks = {**own, **{name: check for name, check in cls._checks.items() if name not in own}}
        config = {key: value for key, value in vars(cls.__dict__.get("Config", object)).items()
                  if not key.startswith("__")}
        if set(config) - {"unique"}:
            raise TypeError(f"{cls.__name__}.Config: only 'unique' is set (every schema is strict, none coerces), "
                            f"not {sorted(set(config) - {'unique'})}")
        if "unique" in config:
            cls._unique = tuple(config["unique"])

    @classmethod
    def columns(cls) -> dict[str, Column]:
        """Column name -> its dtype and checks, in table order."""
        return dict(cls._columns)

    @classmethod
    def checks(cls) -> dict[str, Callable]:
        """Check name -> the whole-frame check (called as ``check(cls, FrameData(lazyframe))``)."""
        return dict(cls._checks)

    @classmethod
    def unique(cls) -> tuple[str, ...]:
        """The columns that are unique together (none: empty)."""
        return cls._unique

    @classmethod
    def validate(cls, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` checked by pandera (its errors, pandera's); see :func:`pipeline_src.datasets.validate`
        for the check a pipeline runs."""
        return cls.pandera().validate(frame)

    @classmethod
    def pandera(cls):
        """This schema as a pandera (polars) model of the same name: the same columns, dtypes, checks and
        uniqueness, strict and not coercing. Made on first use (it imports pandera)."""
        return _pandera_model(cls)


def _evaluated(cls: type, name: str, annotation: str):
    """The dtype a string annotation names, in the namespace of the class's module (as pandera reads it)."""
    try:
        return eval(annotation, vars(sys.modules[cls.__module__]), dict(vars(cls)))  # noqa: S307 (the class's own source)
    except Exception as err:
        raise TypeError(f"{cls.__name__}.{name}: annotation {annotation!r} names no dtype here ({err})") from None


@functools.cache
def _pandera_model(schema: type[TableSchema]):
    import pandera.polars as pa

    def bound(check: Callable) -> Callable:
        @functools.wraps(check)
        def run(_model, data):
            return check(schema, data)
        return pa.dataframe_check(run)

    columns = schema.columns()
    config = type("Config", (), {"strict": True, "coerce": False,
                                 **({"unique": list(schema.unique())} if schema.unique() else {})})
    namespace = {"__annotations__": {name: column.dtype for name, column in columns.items()},
                 "__module__": schema.__module__, "__doc__": schema.__doc__, "Config": config,
                 **{name: pa.Field(**column.field.bounds(), nullable=column.field.nullable, unique=column.field.unique)
                    for name, column in columns.items()},
                 **{name: bound(check) for name, check in schema.checks().items()}}
    return type(schema.__name__, (pa.DataFrameModel,), namespace)
