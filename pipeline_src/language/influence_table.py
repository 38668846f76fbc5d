"""The tables of the influential-token analysis (SPEC 6), without the model: its parameters
(:class:`InfluenceConfig`), the schema of its per-target table (``influence.parquet``) and the
summary the figures and ``lengthgen findings`` read from it (the median fraction of the
long-context gain recovered at each k, with a bootstrap interval).

The analysis itself (:mod:`.influence`, which runs the model and imports torch) re-exports every
name of this module; reading and summarising its table needs neither torch nor the model.

(No ``from __future__ import annotations``: pandera evaluates the schema's field annotations.)
"""

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandera.polars as pa
import polars as pl

SELECTIONS = ("greedy", "topk")
KEY_TOKEN_GAIN = 2.0  # Fang et al. 2024: L_short - L_long > 2 ...
KEY_TOKEN_LONG_LOSS = 2.0  # ... and L_long < 2


class InfluenceError(ValueError):
    """Targets or inputs the influential-token analysis cannot work with."""


# --- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class InfluenceConfig:
    """Parameters of the analysis; validated on construction (errors name the field). The defaults
    are config/config.yaml's (language; tests/test_defaults.py holds them equal)."""

    context: int = 128  # Lbar: tokens before each target
    local: int = 64  # L: the local window, the last L of those tokens
    k_max: int = 8  # influential tokens chosen per target
    selection: str = "greedy"  # "greedy" or "topk"
    n_targets: int = 128  # targets drawn from the held-out documents
    seed: int = 0  # seed of the target draw
    batch_size: int = 64  # sequences per model forward (memory ~ batch_size * Lbar * vocab floats)
    null_draws: int = 4  # random draws of k far tokens per target (the random baseline)

    def __post_init__(self) -> None:
        def require(ok: bool, field: str, why: str) -> None:
            if not ok:
                raise InfluenceError(f"InfluenceConfig.{field}={getattr(self, field)!r}: {why}")

        for name in ("context", "local", "k_max", "n_targets", "batch_size", "null_draws"):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value > 0, name,
                    "must be a positive int")
        require(isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0, "seed",
                "must be a non-negative int")
        require(self.local < self.context, "local",
                f"the local window L must be shorter than the context Lbar={self.context} "
                "(there must be far tokens to choose from)")
        require(self.k_max <= self.far, "k_max",
                f"cannot choose more than the {self.far} far tokens (Lbar - L = {self.context} - {self.local})")
        require(self.selection in SELECTIONS, "selection", f"must be one of {SELECTIONS}")

    @property
    def far(self) -> int:
        """Number of far tokens, Lbar - L: the positions 0..far-1 that can be chosen."""
        return self.context - self.local

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "InfluenceConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise InfluenceError(f"unknown InfluenceConfig field {key!r}; known: {sorted(known)}")
        return cls(**d)


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


# --- summary for the figure ---------------------------------------------------------------------


LOSS_COLUMNS = ("sparse_loss", "random_loss", "other_loss")  # the selection and its two null baselines


def gain_fractions(frame: pl.DataFrame, column: str = "sparse_loss") -> np.ndarray:
    """(L_short - L(k)) / (L_short - L_long) per target and k: float64 [n, k_max], where L(k) is
    ``column``: the influential tokens' loss (``sparse_loss``) or a baseline's. Undefined (inf or
    nan) where the gain is zero; select targets with a positive gain first."""
    if column not in LOSS_COLUMNS:
        raise InfluenceError(f"no loss column {column!r}; known: {LOSS_COLUMNS}")
    short = frame["short_loss"].to_numpy()[:, None]
    gain = short - frame["long_loss"].to_numpy()[:, None]
    sparse = _float_matrix(frame[column])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (short - sparse) / gain


def tokens_needed(frame: pl.DataFrame, fraction: float = 0.8) -> np.ndarray:
    """Per target, the smallest k whose influential tokens recover at least ``fraction`` of the
    long-context gain: int64 [n] in 1..k_max, or k_max + 1 where even k_max tokens fall short.
    Meaningful for targets with a positive gain (select them first)."""
    if not 0.0 < fraction <= 1.0:
        raise InfluenceError(f"fraction must lie in (0, 1], got {fraction}")
    reached = gain_fractions(frame) >= fraction  # nan (zero gain) compares False
    k_max = reached.shape[1]
    return np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, k_max + 1).astype(np.int64)


def _float_matrix(series: pl.Series) -> np.ndarray:
    """A List(Float64) column whose lists all have one length -> float64 [rows, length]."""
    lengths = sorted(set(series.list.len().to_list()))
    if len(lengths) > 1:
        raise InfluenceError(f"{series.name} lists differ in length: {lengths}")
    width = lengths[0] if lengths else 0
    return series.explode().to_numpy().astype(np.float64).reshape(len(series), width)


def recovered_gain(frame: pl.DataFrame, *, gain_threshold: float, n_boot: int = 1000,
                   seed: int = 0, level: float = 0.95, column: str = "sparse_loss") -> pl.DataFrame:
    """Median fraction of the long-context gain that k influential tokens recover, per k (with
    ``column``, that a baseline's k tokens recover: the same targets and resamples).

    Only targets with L_short - L_long > ``gain_threshold`` count. The interval is a percentile
    bootstrap over targets (``n_boot`` resamples drawn with ``seed``; the same resamples for every
    k). Returns one row per k = 1..k_max: ``k``, ``n_targets``, ``median``, ``ci_low``,
    ``ci_high``; with no target above the threshold, ``n_targets`` is 0 and the rest NaN.
    """
    if n_boot < 1:
        raise InfluenceError(f"n_boot must be >= 1, got {n_boot}")
    if not gain_threshold >= 0:
        raise InfluenceError(f"gain_threshold must be >= 0 (the fractions divide by the gain), "
                             f"got {gain_threshold}")
    if not 0.0 < level < 1.0:
        raise InfluenceError(f"level must lie in (0, 1), got {level}")
    if frame.height == 0:
        raise InfluenceError("no analysed targets to summarise")
    gain = (frame["short_loss"] - frame["long_loss"]).to_numpy()
    fractions = gain_fractions(frame.filter(pl.Series(gain > gain_threshold)), column)
    n, k_max = fractions.shape[0], _float_matrix(frame["sparse_loss"]).shape[1]
    if n == 0:
        median = low = high = np.full(k_max, np.nan)
    else:
        median = np.median(fractions, axis=0)
        resamples = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        boot = np.stack([np.median(fractions[resamples, k], axis=1) for k in range(k_max)], axis=1)
        low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return pl.DataFrame({
        "k": pl.Series(range(1, k_max + 1), dtype=pl.Int32),
        "n_targets": pl.Series([n] * k_max, dtype=pl.Int64),
        "median": pl.Series(median, dtype=pl.Float64),
        "ci_low": pl.Series(low, dtype=pl.Float64),
        "ci_high": pl.Series(high, dtype=pl.Float64),
    })
