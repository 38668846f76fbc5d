"""The summary statistics of the influence table that Figure 4, our PoSE figure and
``lengthgen findings`` read: per target and k, the fraction of the long-context gain that k
influential far tokens (or a null baseline's k tokens) recover; its median over targets with a
bootstrap interval (:func:`recovered_gain`); the k a target needs to recover a given fraction
(:func:`tokens_needed`); and, for F4' (a paired test per target), each gaining target's own and other
fractions at one k (:func:`paired_fractions`) and the median of their difference with its bootstrap
interval (:func:`paired_difference`).

They read the table only (no torch, no model), and the analysis that writes the table does not import
them: editing a statistic redraws the figures and reruns no language model.
"""

import numpy as np
import polars as pl

from ..config.influence_config import SCREENED_OUT, InfluenceError

LOSS_COLUMNS = ("sparse_loss", "random_loss", "other_loss")  # the selection and its two null baselines


def gain_fractions(frame: pl.DataFrame, column: str = "sparse_loss") -> np.ndarray:
    """(L_short - L(k)) / (L_short - L_long) per target and k: float64 [n, k_max], where L(k) is
    ``column``: the influential tokens' loss (``sparse_loss``) or a baseline's. Undefined (inf or
    nan) where the gain is zero; select targets with a positive gain first (none screened out: a
    screened analysis has no loss at k for them)."""
    if column not in LOSS_COLUMNS:
        raise InfluenceError(f"no loss column {column!r}; known: {LOSS_COLUMNS}")
    if SCREENED_OUT in frame.columns and frame[SCREENED_OUT].any():
        raise InfluenceError(f"{frame[SCREENED_OUT].sum()} of the targets summarised were screened out by the "
                             "analysis (they gain too little to be analysed): summarise at a gain threshold no lower "
                             "than the analysis's screening threshold (its screen_gain)")
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
        median, low, high = median_interval(fractions, n_boot=n_boot, seed=seed, level=level)
    return pl.DataFrame({
        "k": pl.Series(range(1, k_max + 1), dtype=pl.Int32),
        "n_targets": pl.Series([n] * k_max, dtype=pl.Int64),
        "median": pl.Series(median, dtype=pl.Float64),
        "ci_low": pl.Series(low, dtype=pl.Float64),
        "ci_high": pl.Series(high, dtype=pl.Float64),
    })


def paired_fractions(frame: pl.DataFrame, *, gain_threshold: float, k: int) -> pl.DataFrame:
    """F4''s per-target numbers: for each target whose gain L_short - L_long (measured before any far
    token is selected, so the same targets for both sides) exceeds ``gain_threshold``, the fraction of
    that gain recovered at ``k`` by its own influential far tokens (``own``, ``sparse_loss``) and by
    another document's far tokens chosen alike (``other``, ``other_loss``). Columns ``target`` (the
    target's row in the influence table, from 0), ``own``, ``other``; in table order."""
    if not gain_threshold >= 0:
        raise InfluenceError(f"gain_threshold must be >= 0 (the fractions divide by the gain), got {gain_threshold}")
    k_max = _float_matrix(frame["sparse_loss"]).shape[1]
    if not 1 <= k <= k_max:
        raise InfluenceError(f"k must lie in 1..{k_max} (the table's k_max), got {k}")
    gaining = (frame["short_loss"] - frame["long_loss"]).to_numpy() > gain_threshold
    chosen = frame.filter(pl.Series(gaining))

    def at_k(column: str) -> np.ndarray:
        return gain_fractions(chosen, column)[:, k - 1] if chosen.height else np.empty(0)  # none: no lists to size
    return pl.DataFrame({
        "target": pl.Series(np.flatnonzero(gaining), dtype=pl.Int64),
        "own": pl.Series(at_k("sparse_loss"), dtype=pl.Float64),
        "other": pl.Series(at_k("other_loss"), dtype=pl.Float64),
    })


def median_interval(values: np.ndarray, *, n_boot: int, seed: int, level: float = 0.95):
    """The median over targets (the first axis of ``values``; one column per k where 2-D) with its percentile
    bootstrap interval at ``level``: ``n_boot`` resamples of the targets drawn with ``seed``, the same for
    every column. (median, low, high), each a column's value or, for 1-D ``values``, a float."""
    n = len(values)
    resamples = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boot = np.median(values[resamples], axis=1)  # [n_boot, ...]
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return np.median(values, axis=0), low, high


def paired_difference(own: np.ndarray, other: np.ndarray, *, n_boot: int, seed: int,
                      level: float = 0.95) -> tuple[float, float, float]:
    """The median over targets of ``own - other`` (each target's two fractions), with its percentile
    bootstrap interval at ``level``: ``n_boot`` resamples of the targets drawn with ``seed`` exactly as
    :func:`recovered_gain` draws them (so the same resamples as F4's two intervals). NaNs where there
    are no targets."""
    if n_boot < 1:
        raise InfluenceError(f"n_boot must be >= 1, got {n_boot}")
    differences = np.asarray(own, dtype=np.float64) - np.asarray(other, dtype=np.float64)
    if len(differences) == 0:
        return np.nan, np.nan, np.nan
    return tuple(float(value) for value in median_interval(differences, n_boot=n_boot, seed=seed, level=level))
