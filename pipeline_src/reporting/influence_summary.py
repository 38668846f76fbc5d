"""The summary statistics of the influence table that Figure 4, our PoSE figure and
``lengthgen findings`` read: per target and k, the fraction of the long-context gain that k
influential far tokens (or a null baseline's k tokens) recover; its median over targets with a
bootstrap interval (:func:`recovered_gain`); and the k a target needs to recover a given fraction
(:func:`tokens_needed`).

They read the table only (no torch, no model), and the analysis that writes the table does not import
them: editing a statistic redraws the figures and reruns no language model.
"""

import numpy as np
import polars as pl

from ..language.influence_config import InfluenceError

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
