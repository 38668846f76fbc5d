"""Tests of an ordered trend over several cells, for F1r (docs/findings.md, "F1 across the paper's
range"): does accuracy fall as k_test grows (one model's cells: Page's L test, seeds as blocks), and
rise as K_train grows (different models: the Jonckheere-Terpstra statistic with a permutation p)?

Each returns a :class:`Trend`: the one-sided p for the predicted order and for its reverse (which
decides a contradiction), with the groups' means to show beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JT_RESAMPLES = 9_999  # permutations of the Jonckheere-Terpstra test (exact where fewer are distinct)
JT_SEED = 0  # their random generator's seed: a p is a pure function of the values


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

    def __str__(self) -> str:
        groups = " < ".join(f"{label} {mean:.2f}" for label, mean in zip(self.labels, self.means))
        return f"{self.cell}: {groups}; {self.test} p = {self.p:.3g} (reverse {self.p_reverse:.3g}, {self.seeds} seeds)"


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


def jonckheere(cell: str, labels: list[str], groups: list[np.ndarray]) -> Trend:
    """The Jonckheere-Terpstra test that values rise from the first of ``groups`` (independent
    models, one value per seed) to the last: a one-sided permutation p (``scipy.stats.permutation_test``,
    the values shuffled between groups, :data:`JT_RESAMPLES` permutations drawn with :data:`JT_SEED`,
    exact where fewer are distinct), and the same for the reverse order."""
    from scipy.stats import permutation_test

    groups = [np.asarray(group, dtype=float) for group in groups]

    def p_value(alternative: str) -> float:
        return float(permutation_test(groups, jonckheere_statistic, permutation_type="independent",
                                      vectorized=True, n_resamples=JT_RESAMPLES, alternative=alternative,
                                      rng=np.random.default_rng(JT_SEED)).pvalue)

    return Trend("Jonckheere-Terpstra", cell, tuple(labels), tuple(float(group.mean()) for group in groups),
                 min(len(group) for group in groups), p_value("greater"), p_value("less"))
