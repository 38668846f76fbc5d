"""pandera schema of an evaluation result: one row per (k_test, length) cell of one trained model.

(No ``from __future__ import annotations`` here: pandera evaluates the field annotations.)
"""

import pandera.polars as pa
import polars as pl


class AccuracySchema(pa.DataFrameModel):
    task: pl.String
    scheme: pl.String
    k_train: pl.Int32 = pa.Field(ge=1)
    seed: pl.Int64
    k: pl.Int32 = pa.Field(ge=1)
    length: pl.Int32 = pa.Field(ge=1)
    n: pl.Int64 = pa.Field(ge=1)
    correct: pl.Int64 = pa.Field(ge=0)
    accuracy: pl.Float64 = pa.Field(ge=0.0, le=1.0)
    ci_low: pl.Float64 = pa.Field(ge=0.0, le=1.0)
    ci_high: pl.Float64 = pa.Field(ge=0.0, le=1.0)

    class Config:
        strict = True
        coerce = False

    @pa.dataframe_check
    def correct_at_most_n(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("correct") <= pl.col("n"))
