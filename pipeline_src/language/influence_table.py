"""The table of the influential-token analysis (Figure 4), without the model: the schema of its
per-target table (``influence.parquet``); the analysis' parameters are
:class:`.influence_config.InfluenceConfig`.

The analysis itself (:mod:`.influence`) runs the model and imports torch; reading its table needs
neither, and neither do the statistics the figures and ``lengthgen findings`` compute from it
(:mod:`pipeline_src.language.influence_summary`).
"""

from pathlib import Path

import polars as pl

from ..config.influence_config import SCREENED_OUT, InfluenceConfig
from ..storage.table_schema import Field, TableSchema, dataframe_check

KEY_TOKEN_GAIN = 2.0  # Fang et al. 2024: L_short - L_long > 2 ...
KEY_TOKEN_LONG_LOSS = 2.0  # ... and L_long < 2


# --- schema -------------------------------------------------------------------------------------


PER_K = ("sparse_loss", "chosen", "random_loss", "other_loss")  # one list of k_max per target


def _finite_elements(column: str) -> pl.Expr:
    """Every element finite (nulls aside: :meth:`InfluenceSchema.screened_out_rows_hold_nulls` checks them)."""
    return pl.col(column).list.eval(pl.element().is_finite().fill_null(True)).list.all()


def _screened_out(data) -> pl.Expr:
    """The ``screened_out`` column, or False for a table without one (not screened)."""
    return pl.col(SCREENED_OUT) if SCREENED_OUT in data.lazyframe.collect_schema().names() else pl.lit(False)


class InfluenceSchema(TableSchema):
    """One drawn target per row. ``_context``, ``_far`` and ``_k_max`` are set by
    :func:`influence_schema`; ``sparse_loss[k-1]`` is L_short,sparse(J_k) and ``chosen`` lists
    the far positions (0..far-1) in pick order. A screened analysis's table
    (:class:`ScreenedInfluenceSchema`) adds the column ``screened_out``; here every per-k list
    (:data:`PER_K`) holds k_max numbers."""

    doc: pl.Int64 = Field(ge=0)
    t: pl.Int32 = Field(ge=1)
    target: pl.Int32 = Field(ge=0)
    long_loss: pl.Float64 = Field(ge=0.0)
    short_loss: pl.Float64 = Field(ge=0.0)
    sparse_loss: pl.List(pl.Float64)
    chosen: pl.List(pl.Int32)
    key_token: pl.Boolean
    random_loss: pl.List(pl.Float64)
    other_loss: pl.List(pl.Float64)
    other_doc: pl.Int64 = Field(ge=0)
    other_t: pl.Int32 = Field(ge=1)

    _context = 1
    _far = 1
    _k_max = 1

    class Config:
        unique = ["doc", "t"]

    @dataframe_check
    def target_has_full_context(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("t") >= cls._context)

    @dataframe_check
    def losses_are_finite(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("long_loss").is_finite() & pl.col("short_loss").is_finite() & _finite_elements("sparse_loss")
            & _finite_elements("random_loss") & _finite_elements("other_loss"))

    @dataframe_check
    def k_max_losses_and_picks(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.all_horizontal(pl.col(column).list.len() == cls._k_max for column in PER_K))

    @dataframe_check
    def screened_out_rows_hold_nulls(cls, data) -> pl.LazyFrame:
        nulls = [pl.col(column).list.eval(pl.element().is_null()) for column in PER_K]
        return data.lazyframe.select(pl.when(_screened_out(data)).then(pl.all_horizontal(n.list.all() for n in nulls))
                                     .otherwise(~pl.any_horizontal(n.list.any() for n in nulls)))

    @dataframe_check
    def other_target_is_from_another_document(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("other_doc") != pl.col("doc")) & (pl.col("other_t") >= cls._context))

    @dataframe_check
    def chosen_are_distinct_far_positions(cls, data) -> pl.LazyFrame:
        in_far = pl.col("chosen").list.eval(pl.element().is_between(0, cls._far - 1).fill_null(False)).list.all()
        distinct = pl.col("chosen").list.n_unique() == pl.col("chosen").list.len()
        return data.lazyframe.select(_screened_out(data) | (in_far & distinct))

    @dataframe_check
    def key_token_follows_losses(cls, data) -> pl.LazyFrame:
        rule = ((pl.col("short_loss") - pl.col("long_loss") > KEY_TOKEN_GAIN)
                & (pl.col("long_loss") < KEY_TOKEN_LONG_LOSS))
        return data.lazyframe.select(pl.col("key_token") == rule)


class ScreenedInfluenceSchema(InfluenceSchema):
    """The table of a screened analysis (``InfluenceConfig.screen_gain``): one row per drawn target as
    in :class:`InfluenceSchema`, and ``screened_out``, True for the targets that gained too little to
    be analysed: they keep their L_long, L_short and other columns, and their per-k lists hold k_max
    nulls."""

    screened_out: pl.Boolean


def influence_schema(cfg: InfluenceConfig, screened: bool | None = None) -> type[InfluenceSchema]:
    """:class:`InfluenceSchema` (:class:`ScreenedInfluenceSchema` where ``screened``; None: where ``cfg``
    screens) for the context, far range and k_max of ``cfg``."""
    screened = cfg.screen_gain is not None if screened is None else screened
    name = f"{'Screened' if screened else ''}InfluenceSchema_{cfg.context}_{cfg.local}_{cfg.k_max}"
    base = ScreenedInfluenceSchema if screened else InfluenceSchema
    return type(name, (base,), {"_context": cfg.context, "_far": cfg.far, "_k_max": cfg.k_max})


def read_influence(path: Path, cfg: InfluenceConfig) -> pl.DataFrame:
    """The influence table at ``path`` (a screened analysis's or not, as its columns say), checked
    against its schema for the context, far range and k_max of ``cfg``."""
    from .. import datasets

    frame = datasets.load(path)
    return datasets.validate(frame, influence_schema(cfg, screened=SCREENED_OUT in frame.columns), path)


def screening(frame: pl.DataFrame, screen_gain: float) -> dict:
    """What the screening at ``screen_gain`` nats left out of a screened analysis's table ``frame``
    (for its provenance record): the targets drawn, those screened out and their fraction."""
    out = int(frame[SCREENED_OUT].sum())
    return {"screen_gain": screen_gain, "drawn": frame.height, "screened_out": out,
            "fraction_screened_out": out / frame.height}
