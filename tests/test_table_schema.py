"""Table schemas declared without pandera (``storage.table_schema``): a subclass's columns and checks,
the pandera model made from a schema, the errors of a declaration it cannot take, and a valid table
checked and written without pandera imported."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

from pipeline_src.storage.table_schema import Field, TableSchema, dataframe_check
from tests.conftest import REPO


class Base(TableSchema):
    a: pl.Int32 = Field(ge=1)
    b: pl.String = Field(isin=["x", "y"], nullable=True)

    @dataframe_check
    def a_small(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("a") < cls._bound)

    _bound = 10


class Child(Base):
    c: pl.List(pl.Int32)

    class Config:
        unique = ["a", "b"]

    _bound = 5

    @dataframe_check
    def c_long(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("c").list.len() >= 1)


def frame(**columns) -> pl.DataFrame:
    return pl.DataFrame({"a": pl.Series([1, 2], dtype=pl.Int32), "b": ["x", None],
                         "c": pl.Series([[1], [2, 3]], dtype=pl.List(pl.Int32)), **columns})


def test_a_subclass_has_its_bases_columns_and_checks_own_first():
    assert list(Child.columns()) == ["a", "b", "c"] and list(Base.columns()) == ["a", "b"]
    assert list(Child.checks()) == ["c_long", "a_small"] and Child.unique() == ("a", "b") and Base.unique() == ()
    model = Child.pandera().to_schema()
    assert model.name == "Child" and model.strict is True and model.coerce is False and model.unique == ["a", "b"]
    columns = [(name, col.nullable, [check.name for check in col.checks]) for name, col in model.columns.items()]
    assert columns == [("a", False, ["greater_than_or_equal_to"]), ("b", True, ["isin"]), ("c", False, [])]
    assert [check.name for check in model.checks] == ["c_long", "a_small"]


def test_the_pandera_model_runs_the_checks_with_the_schemas_own_parameters():
    from pipeline_src import datasets

    datasets.validate(frame(), Child, "ok.parquet")
    for bad, named in ((frame(a=pl.Series([1, 7], dtype=pl.Int32)), "a_small"),  # < 10 but not < 5
                       (frame(b=["x", "z"]), "isin"),
                       (frame(c=pl.Series([[1], []], dtype=pl.List(pl.Int32))), "c_long"),
                       (frame(a=pl.Series([1, 1], dtype=pl.Int32), b=["x", "x"]), "unique")):
        with pytest.raises(datasets.DataError, match=named):
            datasets.validate(bad, Child, "bad.parquet")


def test_a_declaration_it_cannot_take_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"Strict\.Config: only 'unique'.*\['strict'\]"):
        type("Strict", (TableSchema,), {"Config": type("Config", (), {"strict": False})})
    with pytest.raises(TypeError, match=r"Named\.unique: a column cannot be named as a method"):
        type("Named", (TableSchema,), {"__annotations__": {"unique": pl.Int64}})
    with pytest.raises(TypeError, match=r"Odd\.a: annotate a column with a polars dtype"):
        type("Odd", (TableSchema,), {"__annotations__": {"a": int}})
    with pytest.raises(TypeError, match=r"Late\.a: annotation 'pl\.Nothing' names no dtype"):
        type("Late", (TableSchema,), {"__annotations__": {"a": "pl.Nothing"}, "__module__": __name__})
    assert list(type("Read", (TableSchema,), {"__annotations__": {"a": "pl.Int64"}, "__module__": __name__})
                .columns().values()) == [(pl.Int64, Field())]  # a string annotation, read in the module


@pytest.mark.e2e  # a fresh interpreter
def test_a_valid_table_is_checked_and_written_without_pandera(tmp_path):
    code = ("import sys\nfrom pipeline_src import datasets\nfrom pipeline_src.tasks import get_task\n"
            "from tests.helpers import small_frame\n"
            f"datasets.write(small_frame('variable_assignment'), {str(tmp_path / 'data.parquet')!r},"
            " get_task('variable_assignment').schema, {})\n"
            "print('pandera' in sys.modules, 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
