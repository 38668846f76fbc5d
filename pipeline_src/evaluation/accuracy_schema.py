"""pandera schema of an evaluation result of one trained model, in long format: one row per
(cell, metric) with the count of correct samples, the accuracy and its 95% Wilson interval.

``k`` is null for tasks whose cells have no k_test (only a length); ``k_train`` is null for runs
trained without one. ``metric`` is ``exact_match`` (the whole response), ``answer`` (the answer
token) or ``position_match`` (predicted position IDs, only for schemes that predict them).
``correct``, ``accuracy`` and the interval are null, all four together, where the model's training
diverged (nothing to decode).

(No ``from __future__ import annotations`` here: pandera evaluates the field annotations.)
"""

import pandera.polars as pa
import polars as pl

METRICS = ("exact_match", "answer", "position_match")


class AccuracySchema(pa.DataFrameModel):
    task: pl.String
    variant: pl.String
    scheme: pl.String
    k_train: pl.Int32 = pa.Field(ge=1, nullable=True)
    seed: pl.Int64
    k: pl.Int32 = pa.Field(ge=1, nullable=True)
    length: pl.Int32 = pa.Field(ge=1)
    metric: pl.String = pa.Field(isin=METRICS)
    n: pl.Int64 = pa.Field(ge=1)
    correct: pl.Int64 = pa.Field(ge=0, nullable=True)
    accuracy: pl.Float64 = pa.Field(ge=0.0, le=1.0, nullable=True)
    ci_low: pl.Float64 = pa.Field(ge=0.0, le=1.0, nullable=True)
    ci_high: pl.Float64 = pa.Field(ge=0.0, le=1.0, nullable=True)

    class Config:
        strict = True
        coerce = False

    @pa.dataframe_check
    def correct_at_most_n(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("correct") <= pl.col("n")).fill_null(True))

    @pa.dataframe_check
    def unscored_rows_are_null_throughout(cls, data) -> pl.LazyFrame:
        scored = [pl.col(name).is_null() for name in ("correct", "accuracy", "ci_low", "ci_high")]
        return data.lazyframe.select(pl.all_horizontal(scored) | ~pl.any_horizontal(scored))
