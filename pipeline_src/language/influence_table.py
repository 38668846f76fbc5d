"""The table of the influential-token analysis (Figure 4), without the model: the schema of its
per-target table (``influence.parquet``); the analysis' parameters are
:class:`.influence_config.InfluenceConfig`.

The analysis itself (:mod:`.influence`) runs the model and imports torch; reading its table needs
neither, and neither do the statistics the figures and ``lengthgen findings`` compute from it
(:mod:`pipeline_src.language.influence_summary`).

(No ``from __future__ import annotations``: pandera evaluates the schema's field annotations.)
"""

import pandera.polars as pa
import polars as pl

from .influence_config import InfluenceConfig

KEY_TOKEN_GAIN = 2.0  # Fang et al. 2024: L_short - L_long > 2 ...
KEY_TOKEN_LONG_LOSS = 2.0  # ... and L_long < 2


# --- schema -------------------------------------------------------------------------------------


def _finite_elements(column: str) -> pl.Expr:
    return pl.col(column).list.eval(pl.element().is_finite().fill_null(False)).list.all()


class InfluenceSchema(pa.DataFrameModel):
    """One analysed target per row. ``_context``, ``_far`` and ``_k_max`` are set by
    :func:`influence_schema`; ``sparse_loss[k-1]`` is L_short,sparse(J_k) and ``chosen`` lists
    the far positions (0..far-1) in pick order."""

    doc: pl.Int64 = pa.Field(ge=0)
    t: pl.Int32 = pa.Field(ge=1)
    target: pl.Int32 = pa.Field(ge=0)
    long_loss: pl.Float64 = pa.Field(ge=0.0)
    short_loss: pl.Float64 = pa.Field(ge=0.0)
    sparse_loss: pl.List(pl.Float64)
    chosen: pl.List(pl.Int32)
    key_token: pl.Boolean
    random_loss: pl.List(pl.Float64)
    other_loss: pl.List(pl.Float64)
    other_doc: pl.Int64 = pa.Field(ge=0)
    other_t: pl.Int32 = pa.Field(ge=1)

    _context = 1
    _far = 1
    _k_max = 1

    class Config:
        strict = True
        coerce = False
        unique = ["doc", "t"]

    @pa.dataframe_check
    def target_has_full_context(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("t") >= cls._context)

    @pa.dataframe_check
    def losses_are_finite(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("long_loss").is_finite() & pl.col("short_loss").is_finite() & _finite_elements("sparse_loss")
            & _finite_elements("random_loss") & _finite_elements("other_loss"))

    @pa.dataframe_check
    def k_max_losses_and_picks(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.all_horizontal(
            pl.col(column).list.len() == cls._k_max for column in ("sparse_loss", "chosen", "random_loss", "other_loss")))

    @pa.dataframe_check
    def other_target_is_from_another_document(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("other_doc") != pl.col("doc")) & (pl.col("other_t") >= cls._context))

    @pa.dataframe_check
    def chosen_are_distinct_far_positions(cls, data) -> pl.LazyFrame:
        in_far = pl.col("chosen").list.eval(pl.element().is_between(0, cls._far - 1).fill_null(False)).list.all()
        return data.lazyframe.select(in_far & (pl.col("chosen").list.n_unique() == pl.col("chosen").list.len()))

    @pa.dataframe_check
    def key_token_follows_losses(cls, data) -> pl.LazyFrame:
        rule = ((pl.col("short_loss") - pl.col("long_loss") > KEY_TOKEN_GAIN)
                & (pl.col("long_loss") < KEY_TOKEN_LONG_LOSS))
        return data.lazyframe.select(pl.col("key_token") == rule)


def influence_schema(cfg: InfluenceConfig) -> type[InfluenceSchema]:
    """:class:`InfluenceSchema` for the context, far range and k_max of ``cfg``."""
    name = f"InfluenceSchema_{cfg.context}_{cfg.local}_{cfg.k_max}"
    return type(name, (InfluenceSchema,), {"_context": cfg.context, "_far": cfg.far, "_k_max": cfg.k_max})
