"""The schemas of the mechanism tables of one trained model (:mod:`.mechanism`).

Each table starts like an accuracy table: the run (task, variant, scheme, k_train, seed) and the
cell keys (``k``, null for tasks without k_test, ``length``, then a task's other cell columns).

* ``attention``: one row per (cell, layer, head). ``queries``: the response tokens with a non-empty
  dependency set, over which the means are taken (0, and the means null, where none has one);
  ``dependency_mass``: mean attention mass on the dependency set; ``uniform_mass``: what uniform
  attention would put there; ``entropy``: mean attention entropy in nats; ``margin`` and
  ``margin_sd``: the mean and standard deviation of logit(mass) - logit(uniform) (:mod:`.mechanism`).
* ``flips``: one row per cell. ``samples`` probed; ``relevant_flips``: how many changed their
  watched prediction when a relevant token changed; ``irrelevant_samples`` (those with an
  irrelevant token to change) and ``irrelevant_flips``; the two rates (null where nothing was
  probed).
* ``first_errors``: one row per analysed sample: its ``row`` in the evaluation file, its
  ``response_length`` and the index of the first response token predicted wrong (``first_error``,
  null when none is); of that, ``first_token_error`` and ``first_position_error`` (a scheme with a
  position head; null otherwise) say which kind: the first wrong token and the first wrong position
  ID, each under teacher forcing, the earlier of them ``first_error``; ``depth``, the sample's depth
  where the task's frames have one (variable assignment: the hops of its query chain), else null.
"""

import functools
from pathlib import Path

import polars as pl

from ..planning.paths import MECHANISM_FILES
from ..storage.table_schema import Field, TableSchema, dataframe_check
from .accuracy_schema import KEY_COLUMNS, RunCellSchema, with_cell_columns

TABLES = tuple(MECHANISM_FILES)

# Each table's own columns after the run and cell keys, with their dtypes (the flip rates follow).
COLUMNS = {
    "attention": {"layer": pl.Int32, "head": pl.Int32, "queries": pl.Int64, "dependency_mass": pl.Float64,
                  "uniform_mass": pl.Float64, "entropy": pl.Float64, "margin": pl.Float64, "margin_sd": pl.Float64},
    "flips": {"samples": pl.Int64, "relevant_flips": pl.Int64, "irrelevant_samples": pl.Int64,
              "irrelevant_flips": pl.Int64},
    "first_errors": {"row": pl.Int64, "response_length": pl.Int64, "first_error": pl.Int64,
                     "first_token_error": pl.Int64, "first_position_error": pl.Int64, "depth": pl.Int64},
}


class AttentionSchema(RunCellSchema):
    layer: pl.Int32 = Field(ge=0)
    head: pl.Int32 = Field(ge=0)
    queries: pl.Int64 = Field(ge=0)
    dependency_mass: pl.Float64 = Field(ge=0.0, le=1.0 + 1e-6, nullable=True)
    uniform_mass: pl.Float64 = Field(ge=0.0, le=1.0 + 1e-6, nullable=True)
    entropy: pl.Float64 = Field(ge=-1e-9, nullable=True)
    margin: pl.Float64 = Field(nullable=True)
    margin_sd: pl.Float64 = Field(ge=0.0, nullable=True)

    @dataframe_check
    def means_only_over_queries(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("queries") > 0) == pl.col("dependency_mass").is_not_null())


class FlipsSchema(RunCellSchema):
    samples: pl.Int64 = Field(ge=0)
    relevant_flips: pl.Int64 = Field(ge=0)
    irrelevant_samples: pl.Int64 = Field(ge=0)
    irrelevant_flips: pl.Int64 = Field(ge=0)
    relevant_flip_rate: pl.Float64 = Field(ge=0.0, le=1.0, nullable=True)
    irrelevant_flip_rate: pl.Float64 = Field(ge=0.0, le=1.0, nullable=True)

    @dataframe_check
    def flips_at_most_samples(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("relevant_flips") <= pl.col("samples"))
                                     & (pl.col("irrelevant_flips") <= pl.col("irrelevant_samples"))
                                     & (pl.col("irrelevant_samples") <= pl.col("samples")))


class FirstErrorsSchema(RunCellSchema):
    row: pl.Int64 = Field(ge=0)
    response_length: pl.Int64 = Field(ge=1)
    first_error: pl.Int64 = Field(ge=0, nullable=True)
    first_token_error: pl.Int64 = Field(ge=0, nullable=True)
    first_position_error: pl.Int64 = Field(ge=0, nullable=True)
    depth: pl.Int64 = Field(ge=1, nullable=True)

    @dataframe_check
    def error_inside_the_response(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("first_error") < pl.col("response_length")).fill_null(True))

    @dataframe_check
    def first_error_is_the_earlier_kind(cls, data) -> pl.LazyFrame:
        earliest = pl.min_horizontal("first_token_error", "first_position_error")
        return data.lazyframe.select((pl.col("first_error") == earliest).fill_null(
            pl.col("first_error").is_null() & earliest.is_null()))


SCHEMAS = {"attention": AttentionSchema, "flips": FlipsSchema, "first_errors": FirstErrorsSchema}


@functools.cache
def mechanism_schema(name: str, cell_columns: tuple[str, ...]) -> type[TableSchema]:
    """The schema of table ``name`` of a task keyed by ``cell_columns``."""
    return with_cell_columns(SCHEMAS[name], cell_columns)


def table_paths(out_dir) -> dict[str, Path]:
    """The mechanism tables of one model in the folder ``out_dir``, by name."""
    return {name: Path(out_dir) / file for name, file in MECHANISM_FILES.items()}


def read(path, name: str, cell_columns: tuple[str, ...] = KEY_COLUMNS) -> pl.DataFrame:
    """Mechanism table ``name`` at ``path`` of a task keyed by ``cell_columns``: checked against its
    schema, unless it still has the bytes that passed that check when they were written."""
    from .. import datasets

    return datasets.read(path, mechanism_schema(name, cell_columns), checked_when_written=True)
