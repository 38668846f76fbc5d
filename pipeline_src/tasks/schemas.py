"""pandera (polars) schemas of the task datasets, checked on every write and read.

(No ``from __future__ import annotations`` here: pandera evaluates the field annotations.)
"""

import pandera.polars as pa
import polars as pl

from .sparse_parity import VOCAB


class SparseParitySchema(pa.DataFrameModel):
    """One sample of D^sp(l, k) per row (SPEC 2.1)."""

    k: pl.Int32 = pa.Field(ge=1)
    l: pl.Int32 = pa.Field(ge=1)
    length: pl.Int32 = pa.Field(ge=2)
    prompt: pl.List(pl.Int32)
    response: pl.List(pl.Int32)
    prompt_pos: pl.List(pl.Int32)
    response_pos: pl.List(pl.Int32)
    answer: pl.Int32 = pa.Field(isin=[0, 1])

    class Config:
        strict = True
        coerce = False

    @pa.dataframe_check
    def k_at_most_l(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("k") <= pl.col("l"))

    @pa.dataframe_check
    def length_is_2l(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("length") == 2 * pl.col("l"))

    @pa.dataframe_check
    def prompt_has_2l_plus_2_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("prompt").list.len() == pl.col("length") + 2)
            & (pl.col("prompt_pos").list.len() == pl.col("prompt").list.len()))

    @pa.dataframe_check
    def tokens_in_vocabulary(cls, data) -> pl.LazyFrame:
        size = len(VOCAB)
        return data.lazyframe.select(
            pl.col("prompt").list.eval(pl.element().is_between(0, size - 1)).list.all()
            & pl.col("response").list.eval(pl.element().is_between(0, size - 1)).list.all())

    @pa.dataframe_check
    def one_response_token(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("response").list.len() == 1) & (pl.col("response_pos").list.len() == 1))
