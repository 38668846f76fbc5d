"""Tests of an ordered trend over several cells, for F1r (docs/findings.md, "F1 across the paper's
range"): does accuracy fall as k_test grows (one model's cells: Page's L test, seeds as blocks), and
rise as K_train grows (different models: the Jonckheere-Terpstra statistic with a permutation p)?

Each returns a :class:`Trend`: the one-sided p for the predicted order and for its reverse (which
decides a contradiction), with the groups' means to show beside it.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from .monte_carlo import MORE, ROUNDS, shown_p, straddles

JT_RESAMPLES = 9_999  # permutations of the Jonckheere-Terpstra test (exact where fewer are distinct) ...
JT_MOST_RESAMPLES = JT_RESAMPLES * MORE ** ROUNDS  # ... more while its Monte Carlo interval holds a threshold
JT_BATCH = 20_000  # permutations scored at once (memory only)
JT_SEED = 0  # their random generator's seed: a p is a pure function of the values (and the thresholds)


@dataclass(frozen=True)
class Trend:
    """One trend test at one cell: ``labels`` (the groups, in the predicted order of rising accuracy),
    each group's mean, the test's ``p`` for that order and ``p_reverse`` for the opposite one."""

    test: str
    cell: str
    labels: tuple[str, ...]
    means: tuple[float, ...]
    seeds: int  # blocks (Page) or the smallest group (Jonckheere-Terpstra)
    p: float
    p_reverse: float
    part: str = ""  # the claim's part its rule belongs to ("": none named)
    draws: tuple[int, int] = (0, 0)  # permutations drawn for p and p_reverse where more than JT_RESAMPLES, else 0

    def __str__(self) -> str:
        groups = " < ".join(f"{label} {mean:.2f}" for label, mean in zip(self.labels, self.means, strict=False))
        return (f"{self.cell}: {groups}; {self.test} p = {shown_p(self.p, self.draws[0])} (reverse "
                f"{shown_p(self.p_reverse, self.draws[1])}, {self.seeds} seeds)")


def page(cell: str, labels: list[str], blocks: np.ndarray) -> Trend:
    """Page's L test that accuracy rises from the first column of ``blocks`` [seeds, groups] to the
    last (the groups in the predicted order), each row one model's cells (``scipy.stats.page_trend_test``,
    exact where scipy computes it so); the reverse test reads the columns backwards."""
    from scipy.stats import page_trend_test

    blocks = np.asarray(blocks, dtype=float)
    forward = page_trend_test(blocks).pvalue
    backward = page_trend_test(blocks[:, ::-1]).pvalue
    return Trend("Page's L", cell, tuple(labels), tuple(blocks.mean(axis=0)), len(blocks), float(forward),
                 float(backward))


def jonckheere_statistic(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
    """The Jonckheere-Terpstra statistic of ``groups`` in their predicted order of rising values: over
    every pair of groups (i < j), the pairs of values with the later group's larger, ties counting one
    half. Vectorised over leading axes (scipy's permutation_test passes batches)."""
    groups = [np.moveaxis(np.asarray(group, dtype=float), axis, -1) for group in groups]
    total = 0.0
    for i, low in enumerate(groups):
        for high in groups[i + 1:]:
            difference = high[..., None, :] - low[..., :, None]
            total = total + (difference > 0).sum(axis=(-1, -2)) + 0.5 * (difference == 0).sum(axis=(-1, -2))
    return np.asarray(total)


def jonckheere(cell: str, labels: list[str], groups: list[np.ndarray], thresholds: tuple[float, ...] = ()) -> Trend:
    """The Jonckheere-Terpstra test that values rise from the first of ``groups`` (independent
    models, one value per seed) to the last: a one-sided permutation p, the values shuffled between
    groups, :data:`JT_RESAMPLES` permutations drawn with :data:`JT_SEED` (``scipy.stats.permutation_test``'s
    p to the bit, and its enumeration where fewer are distinct), and the same for the reverse order, from
    the same permutations. Monte Carlo error never decides: while a drawn p's Monte Carlo interval holds
    one of the ``thresholds`` it is compared with, it is drawn again with more permutations, up to
    :data:`JT_MOST_RESAMPLES` (:mod:`.monte_carlo`)."""
    values = tuple(tuple(float(value) for value in group) for group in groups)
    (p, draws), (p_reverse, draws_reverse) = _p_values(values, tuple(thresholds))
    return Trend("Jonckheere-Terpstra", cell, tuple(labels), tuple(float(np.mean(group)) for group in values),
                 min(len(group) for group in values), p, p_reverse, draws=(draws, draws_reverse))


ALTERNATIVES = ("greater", "less")  # the predicted order, then its reverse


@functools.lru_cache(maxsize=4096)  # a leave-one-seed-out recomputation meets the same groups again
def _p_values(values: tuple[tuple[float, ...], ...], thresholds: tuple[float, ...]) -> tuple[tuple[float, int], ...]:
    """For each of :data:`ALTERNATIVES`, (p, the permutations drawn where more than :data:`JT_RESAMPLES`,
    else 0) of :func:`jonckheere`: both read one null distribution a round."""
    found: dict[str, tuple[float, int]] = {}
    resamples, distinct, observed = JT_RESAMPLES, _distinct_partitions(values), jonckheere_statistic(*values)
    null = _DrawnNull(values)  # each round's permutations begin with the last round's
    while len(found) < len(ALTERNATIVES):
        if distinct <= resamples:  # scipy enumerates them: its own computation
            for alternative in ALTERNATIVES:
                found.setdefault(alternative, _enumerated(values, alternative, resamples))
            break
        drawn = null.first(resamples)
        for alternative in ALTERNATIVES:
            if alternative in found:
                continue
            p = _drawn_p(drawn, observed, alternative)
            if resamples >= JT_MOST_RESAMPLES or not straddles(p, resamples, thresholds):
                found[alternative] = p, 0 if resamples == JT_RESAMPLES else resamples
        resamples *= MORE
    return tuple(found[alternative] for alternative in ALTERNATIVES)


def _distinct_partitions(values: tuple[tuple[float, ...], ...]) -> int:
    """The ways to deal the pooled values into groups of these sizes (scipy enumerates them when no
    more than the permutations asked for)."""
    totals = list(itertools.accumulate(len(group) for group in values))  # values in the first j groups
    return math.prod(math.comb(total, before) for total, before in zip(totals[1:], totals[:-1], strict=True))


def _enumerated(values, alternative: str, resamples: int) -> tuple[float, int]:
    """scipy's own p where it enumerates every distinct partition."""
    from scipy.stats import permutation_test

    found = permutation_test([np.asarray(group, dtype=float) for group in values], jonckheere_statistic,
                             permutation_type="independent", vectorized=True, n_resamples=resamples,
                             alternative=alternative, batch=JT_BATCH, rng=np.random.default_rng(JT_SEED))
    return float(found.pvalue), 0


class _DrawnNull:
    """The statistic under permutations of the pooled values drawn with :data:`JT_SEED`, the very
    permutations scipy's ``permutation_test`` draws one call of ``Generator.permutation`` at a time
    (``Generator.permuted`` over rows of a batch consumes the stream row by row alike, so batches may
    end anywhere), scored :data:`JT_BATCH` at a time. Asked for more, it draws on from where it
    stopped: the first n of a longer draw are the n of a shorter one."""

    def __init__(self, values: tuple[tuple[float, ...], ...]):
        _, ranks = np.unique(np.concatenate(values), return_inverse=True)  # the same order and ties, as small ints
        self._ranks = ranks.astype(np.int8 if len(ranks) <= np.iinfo(np.int8).max else np.int16)
        self._edges = list(itertools.accumulate((len(group) for group in values), initial=0))
        self._rng, self._scored = np.random.default_rng(JT_SEED), []

    def first(self, resamples: int) -> np.ndarray:
        """The statistic under the first ``resamples`` permutations."""
        drawn = sum(map(len, self._scored))
        while drawn < resamples:
            rows = min(JT_BATCH, resamples - drawn)
            order = self._rng.permuted(np.tile(np.arange(len(self._ranks)), (rows, 1)), axis=1)
            shuffled, edges = self._ranks[order], self._edges
            self._scored.append(_counted_statistic([shuffled[:, low:high]
                                                    for low, high in zip(edges[:-1], edges[1:], strict=True)]))
            drawn += rows
        return np.concatenate(self._scored)[:resamples]


def _counted_statistic(groups: list[np.ndarray]) -> np.ndarray:
    """:func:`jonckheere_statistic` of integer ``groups`` [permutations, values]: twice the statistic is,
    over each group against all later ones, the pairs plus the sum of the signs of their differences
    (+1 where the later value is larger, 0 for a tie); the same numbers exactly, three times as fast."""
    twice = 0
    for i, low in enumerate(groups[:-1]):
        high = np.concatenate(groups[i + 1:], axis=-1)
        signs = high[..., None, :] - low[..., :, None]  # small integers: no overflow below 128 distinct values
        np.sign(signs, out=signs)
        twice = twice + signs.sum(axis=(-1, -2), dtype=np.int64) + low.shape[-1] * high.shape[-1]
    return twice / 2


def _drawn_p(null: np.ndarray, observed: np.ndarray, alternative: str) -> float:
    """A drawn permutation p as scipy computes it: (the null's values as or more extreme, within its
    relative tolerance of 100 eps, + 1) / (permutations + 1)."""
    gamma = np.abs(np.finfo(np.float64).eps * 100 * observed)
    extreme = null >= observed - gamma if alternative == "greater" else null <= observed + gamma
    return float(np.clip((np.count_nonzero(extreme) + 1) / (len(null) + 1), 0.0, 1.0))
