"""Parquet schemas of the language-model evaluations (Figure 4, our PoSE comparison).
"""

import polars as pl

from ..storage.table_schema import Field, TableSchema


class LossByPositionSchema(TableSchema):
    """Mean next-token loss of one model per position over held-out windows: ``position`` is the
    position ID of the last token read (0..eval_length-1); the loss is that of the token after it,
    predicted from ``position + 1`` tokens of the same document."""

    model: pl.String
    scheme: pl.String
    train_context: pl.Int64 = Field(ge=1)
    position: pl.Int32 = Field(ge=0)
    windows: pl.Int64 = Field(ge=1)
    loss: pl.Float64 = Field(ge=0.0)
    loss_se: pl.Float64 = Field(ge=0.0, nullable=True)  # null with a single window

    class Config:
        unique = ["model", "position"]


class TargetLossSchema(TableSchema):
    """One model's losses on the analysed targets (the same draw as the influence analysis):
    ``long_loss`` given all Lbar tokens before the target, ``short_loss`` given the last L only
    (at their original position IDs)."""

    model: pl.String
    doc: pl.Int64 = Field(ge=0)
    t: pl.Int32 = Field(ge=1)
    long_loss: pl.Float64 = Field(ge=0.0)
    short_loss: pl.Float64 = Field(ge=0.0)

    class Config:
        unique = ["model", "doc", "t"]
