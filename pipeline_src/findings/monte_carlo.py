"""A permutation p drawn at random rather than enumerated, and when its Monte Carlo error could decide.

scipy's ``permutation_test`` draws a p as (hits + 1) / (draws + 1) where the distinct permutations are too
many to enumerate. Near the threshold a verdict compares it with, that draw's error could tip the verdict, so
the tests that draw (:mod:`.significance`, :mod:`.trend_tests`) draw again with four times the permutations while
the p's :data:`LEVEL` Clopper-Pearson interval holds a threshold (:func:`straddles`): the registered test,
computed more precisely. A p drawn anew is shown with its error (:func:`shown_p`)."""

from __future__ import annotations

LEVEL = 0.99  # the Monte Carlo interval's level (Clopper-Pearson)
MORE = 4  # a p whose interval holds a threshold is drawn again with this many times the permutations ...
ROUNDS = 4  # ... at most this many times


def monte_carlo_error(p: float, draws: int) -> float:
    """The standard error of a permutation p drawn from ``draws`` permutations."""
    return (p * (1 - p) / draws) ** 0.5


def shown_p(p: float, draws: int, digits: int = 3) -> str:
    """``p`` as a verdict shows it: with its Monte Carlo error where it was drawn anew with more permutations
    (``draws``), since it lay near a threshold ("0.0008 ± 0.00014 of 39,996 permutations")."""
    if not draws:
        return f"{p:.{digits}g}"
    return f"{p:.{digits}g} ± {monte_carlo_error(p, draws):.2g} of {draws:,} permutations"


def straddles(p: float, draws: int, thresholds: tuple[float, ...]) -> bool:
    """Whether the Monte Carlo interval (:data:`LEVEL`, Clopper-Pearson) of a permutation p drawn from
    ``draws`` permutations (p = (hits + 1) / (draws + 1), scipy's) holds one of ``thresholds``."""
    from scipy.stats import binomtest

    hits = round(p * (draws + 1)) - 1
    interval = binomtest(max(hits, 0), draws).proportion_ci(LEVEL)
    return any(interval.low <= threshold <= interval.high for threshold in thresholds)
