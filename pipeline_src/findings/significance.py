"""Whether a run is above another, decided by a test over seeds (the verdict of a finding made of
such comparisons: :mod:`.verdicts`).

A comparison puts the run a claim expects to be better against the one it expects to be worse,
each as its per-seed values of one cell (a seed is one trained model: the unit of replication).
Its test is a one-sided permutation test of the difference of means (scipy's
``permutation_test``): ``independent`` where the two sides are different models, ``samples``
(seed by seed, the sign of each seed's difference permuted) where both sides are the same models
measured in two cells. The test assumes nothing of the values' distribution: per-seed accuracies
are bounded and often bimodal (a seed fits or it does not), and two constant sides (every seed at
1.00 against every seed at 0.96) must not count as infinitely significant, as a t-test would
count them. It is exact while the distinct permutations number at most :data:`EXACT_UP_TO` (up
to 8 seeds a side, 14 paired seeds), and otherwise draws :data:`PERMUTATIONS` at random with a fixed
seed (p then counts the observed order too, so it stays valid), so a verdict is a pure function of its
numbers. A drawn p whose Monte Carlo interval holds the threshold it is judged against is drawn again
with more permutations (:func:`sharpened`, :mod:`.monte_carlo`): Monte Carlo error never decides.

Alongside: the difference's two-sided 95% confidence interval (Welch's, or the paired t interval),
and the seeds per run a test at :data:`ALPHA` needs to detect the measured difference with power
:data:`POWER` at the measured spread (statsmodels' t-test power; never fewer than the permutation
test's own floor, :func:`fewest_seeds`).

A finding's verdict (:func:`.verdicts.comparisons_verdict`) is ``reproduced`` when every comparison is significant in
the claimed direction (an intersection-union test: each at :data:`ALPHA`, no correction),
``contradicted`` when some comparison is significant the other way after Holm's correction over
the finding's comparisons, and otherwise ``undecided: <why>``. :func:`.power.finding_power` estimates,
by simulation, how often a finding of F1's, F2's or F3's shape is judged ``reproduced`` at a given
effect and number of seeds.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from .monte_carlo import MORE, ROUNDS, shown_p, straddles

ALPHA = 0.05  # each comparison's level
LEVEL = 0.95  # the confidence interval's
POWER = 0.8  # the power the seeds a comparison needs are planned for
EXACT_UP_TO = 20_000  # distinct permutations enumerated up to this many (8 seeds a side: 12,870) ...
PERMUTATIONS = 1_999  # ... else this many drawn at random ...
MOST_PERMUTATIONS = PERMUTATIONS * MORE ** ROUNDS  # ... and more while the p's Monte Carlo interval holds its threshold
BATCH = 20_000  # drawn permutations scored at once (memory only)
RNG_SEED = 0  # the Monte Carlo permutations' seed
MOST_SEEDS = 1000  # the most seeds per run a plan considers


def fewest_seeds(paired: bool, alpha: float = ALPHA) -> int:
    """The fewest seeds per run at which the exact permutation test can reach ``alpha`` at all: its
    smallest p is 1 / C(2n, n) for two runs of n seeds, 1 / 2^n for n paired seeds."""
    smallest_p = (lambda n: 0.5 ** n) if paired else (lambda n: 1 / math.comb(2 * n, n))
    return next(n for n in range(1, 64) if smallest_p(n) <= alpha)


@dataclass(frozen=True)
class Comparison:
    """One comparison's test: ``better`` (the run the claim puts above) against ``worse`` at
    ``cell``, from their per-seed values ``a`` and ``b`` (seed-aligned where ``paired``)."""

    better: str
    worse: str
    cell: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    paired: bool
    p: float  # one-sided, in the claimed direction
    p_reverse: float  # one-sided, the other way
    ci_low: float
    ci_high: float
    needed: int | None  # seeds per run to decide at the measured spread (None: see why_no_plan)
    part: str = ""  # the claim's part its rule belongs to ("": none named)
    draws: tuple[int, int] = (0, 0)  # permutations drawn for p and p_reverse where more than PERMUTATIONS, else 0

    @property
    def difference(self) -> float:
        return float(np.mean(self.a) - np.mean(self.b))

    @property
    def significant(self) -> bool:
        return self.p <= ALPHA

    def why_no_plan(self) -> str:
        """Why no number of seeds is planned (``needed`` None)."""
        if self.difference <= 0:
            return "the measured difference is not in the claimed direction"
        if spread(np.asarray(self.a), np.asarray(self.b), self.paired) is None:
            return "one seed per run measures no spread to plan with"
        return f"the measured difference is too small for {MOST_SEEDS} seeds per run"

    def __str__(self) -> str:
        """``ppc 0.76 vs rope 0.00 at length 30 (6 and 6 seeds): +0.76 [+0.51, +1.01], p = 0.00108,
        significant``."""
        seeds = f"{len(self.a)} paired seeds" if self.paired else f"{len(self.a)} and {len(self.b)} seeds"
        if min(len(self.a), len(self.b)) < 2:
            seeds += ", too few to test"
        ci = "no interval" if math.isnan(self.ci_low) else f"[{self.ci_low:+.2f}, {self.ci_high:+.2f}]"
        outcome = "significant" if self.significant else (
            f"significant the other way (p = {shown_p(self.p_reverse, self.draws[1])})" if self.p_reverse <= ALPHA
            else "not significant")
        return (f"{self.better} {np.mean(self.a):.2f} vs {self.worse} {np.mean(self.b):.2f} at {self.cell} ({seeds}): "
                f"{self.difference:+.2f} {ci}, p = {shown_p(self.p, self.draws[0])}, {outcome}")


def compare(better: str, worse: str, cell: str, a, b, *, paired: bool) -> Comparison:
    """The test of ``better`` (values ``a``, one per seed) above ``worse`` (``b``) at ``cell``;
    ``paired``: the same models, ``a[i]`` and ``b[i]`` from one seed."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not len(a) or not len(b) or (paired and len(a) != len(b)):
        raise ValueError(f"{better} vs {worse}: {len(a)} and {len(b)} values ({'paired' if paired else 'independent'})")
    p, p_reverse = p_values(a, b, paired)
    low, high = interval(a, b, paired)
    return Comparison(better, worse, cell, tuple(a.tolist()), tuple(b.tolist()), paired, float(p), float(p_reverse),
                      low, high, seeds_needed(a, b, paired))


def distinct(a_seeds: int, b_seeds: int, paired: bool) -> int:
    """The distinct permutations of two runs' seeds: 2^n sign flips of n paired seeds, else the ways
    of choosing which of the pooled seeds are the first run's."""
    return 2 ** a_seeds if paired else math.comb(a_seeds + b_seeds, a_seeds)


def p_values(a, b, paired: bool, draws: int = PERMUTATIONS,
             exact_up_to: int = EXACT_UP_TO) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p of ``a`` above ``b`` (per-seed values on the last axis) and the other way, from one
    null distribution: the statistic is the pair (d, -d), d = mean(a) - mean(b), each tested as
    'greater' (-d greater is d less); exact where the distinct permutations number at most
    ``exact_up_to``, else from ``draws`` random ones. Leading axes hold separate tests (many draws at
    once): each is tested with the same permutations as alone (exact, or the same :data:`RNG_SEED`
    draws), so its p is the one a call with its values alone gives."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if min(a.shape[-1], b.shape[-1]) < 2:  # scipy needs two seeds a side (one against n: 1 / (n + 1) at best)
        ones = np.ones(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
        return ones, ones.copy()

    def both_ways(x, y, axis):
        d = np.mean(x, axis=axis) - np.mean(y, axis=axis)
        return np.stack([d, -d], axis=-1)
    every = distinct(a.shape[-1], b.shape[-1], paired)
    if every <= exact_up_to:
        return (_exact_paired if paired else _exact_independent)(a, b, both_ways)
    found = stats.permutation_test(
        (a, b), both_ways, vectorized=True, permutation_type="samples" if paired else "independent",
        alternative="greater", n_resamples=every if every <= exact_up_to else draws,
        batch=None if every <= exact_up_to or draws <= PERMUTATIONS else BATCH,
        rng=np.random.default_rng(RNG_SEED), axis=-1).pvalue
    return found[..., 0], found[..., 1]


@functools.lru_cache(maxsize=64)
def _partitions(a_seeds: int, b_seeds: int) -> np.ndarray:
    """Every way of splitting ``a_seeds + b_seeds`` pooled values into the two runs, per row the first run's
    positions, then the second's, each in the order scipy's exact test takes them (a set's), so that a
    mean sums its values in scipy's order and ties at the observed difference fall as scipy's fall."""
    pooled = set(range(a_seeds + b_seeds))
    return np.array([list(set(chosen)) + list(set(tuple(pooled - set(chosen))))
                     for chosen in itertools.combinations(pooled, a_seeds)], dtype=np.intp)


def _exact_independent(a: np.ndarray, b: np.ndarray, statistic) -> tuple[np.ndarray, np.ndarray]:
    """scipy's exact ``independent`` permutation p's (``alternative="greater"``, its tolerance of 100 machine
    epsilons for ties) of both components of ``statistic``, over every partition at once: scipy's own exact
    path builds its partitions anew in Python on every call, six times slower at 8 seeds a side."""
    tests = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a, b = np.broadcast_to(a, tests + a.shape[-1:]), np.broadcast_to(b, tests + b.shape[-1:])
    pooled, split = np.concatenate([a, b], axis=-1), a.shape[-1]
    shuffled = pooled[..., _partitions(split, b.shape[-1])]  # [..., partitions, values]
    observed = statistic(a, b, axis=-1)
    null = statistic(shuffled[..., :split], shuffled[..., split:], axis=-1)  # [..., partitions, 2]
    p = _share_at_least(null, observed)
    return p[..., 0], p[..., 1]


def _share_at_least(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """The exact p's ``alternative="greater"``: the share of the ``null`` statistics (axis -2) at least the
    ``observed`` one, within scipy's tolerance of 100 machine epsilons for ties."""
    tolerance = np.abs(np.finfo(np.float64).eps * 100 * observed)
    return (null >= (observed - tolerance)[..., None, :]).mean(axis=-2)


@functools.lru_cache(maxsize=16)
def _sign_flips(seeds: int) -> np.ndarray:
    """Every choice of which of ``seeds`` pairs swap their two values (rows of booleans, none swapped first)."""
    return np.array(list(itertools.product((False, True), repeat=seeds)), dtype=bool)


def _exact_paired(a: np.ndarray, b: np.ndarray, statistic) -> tuple[np.ndarray, np.ndarray]:
    """scipy's exact ``samples`` permutation p's (every seed's pair swapped or not, ``alternative="greater"``,
    the same tolerance for ties) of both components of ``statistic``, over every swap at once: scipy's own
    path batches and indexes each swap's arrays in Python, the cost of a paired test at a few seeds."""
    tests = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a, b = (np.broadcast_to(x, tests + x.shape[-1:]).reshape(-1, x.shape[-1]) for x in (a, b))
    flips = _sign_flips(a.shape[-1])
    p = np.empty((len(a), 2))
    step = max(1, 2 ** 22 // flips.size)  # tests a chunk: memory only
    for start in range(0, len(a), step):
        x, y = a[start:start + step, None, :], b[start:start + step, None, :]
        observed = statistic(x[:, 0], y[:, 0], axis=-1)
        swapped = (np.moveaxis(np.ascontiguousarray(np.moveaxis(np.where(flips, *pair), -1, 0)), 0, -1)
                   for pair in ((y, x), (x, y)))  # seeds outermost in memory: summed in scipy's order
        p[start:start + step] = _share_at_least(statistic(*swapped, axis=-1), observed)  # null: [tests, swaps, 2]
    return p[:, 0].reshape(tests), p[:, 1].reshape(tests)


def sharpened(test: Comparison, threshold: float, reverse_threshold: float) -> Comparison:
    """``test`` with its p's drawn again from :data:`~.monte_carlo.MORE` times the permutations while the
    Monte Carlo interval of its p holds ``threshold`` or that of its reverse p holds ``reverse_threshold``
    (the levels its verdict compares them with), up to :data:`MOST_PERMUTATIONS`; ``test`` itself where its
    p's are exact or lie clear of them."""
    if min(len(test.a), len(test.b)) < 2 or distinct(len(test.a), len(test.b), test.paired) <= EXACT_UP_TO:
        return test
    draws, p, p_reverse = PERMUTATIONS, test.p, test.p_reverse
    while draws < MOST_PERMUTATIONS and (straddles(p, draws, (threshold,))
                                         or straddles(p_reverse, draws, (reverse_threshold,))):
        draws *= MORE
        p, p_reverse = (float(found) for found in p_values(test.a, test.b, test.paired, draws))
    return test if draws == PERMUTATIONS else replace(test, p=p, p_reverse=p_reverse, draws=(draws, draws))


def sharpened_all(comparisons: list[Comparison]) -> list[Comparison]:
    """``comparisons`` :func:`sharpened` against the levels :func:`.verdicts.comparisons_verdict` judges
    them at: each p at :data:`ALPHA`, each reverse p at Holm's first step, ALPHA / m."""
    return [sharpened(test, ALPHA, ALPHA / len(comparisons)) for test in comparisons]


def sharpened_across(family: dict[str, list[Comparison]]) -> dict[str, list[Comparison]]:
    """``family`` :func:`sharpened` against the levels :func:`.verdicts.verdict_across` judges it at: a
    comparison's p at ALPHA / (its cells), each reverse p at ALPHA / (every test of the family)."""
    tests = sum(len(cells) for cells in family.values())
    return {name: [sharpened(test, ALPHA / len(cells), ALPHA / tests) for test in cells]
            for name, cells in family.items()}


def interval(a: np.ndarray, b: np.ndarray, paired: bool) -> tuple[float, float]:
    """The two-sided :data:`LEVEL` confidence interval of mean(a) - mean(b): Welch's, or the paired t
    interval; NaN where a side has fewer than two values. scipy's ``ttest_ind(a, b, equal_var=False)``
    and ``ttest_rel(a, b)`` intervals to the bit (``confidence_interval``: the same operations in the same
    order; tests/test_significance.py compares them), without their per-call machinery."""
    from scipy.special import stdtrit

    if min(len(a), len(b)) < 2:
        return math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        if paired:
            differences = a - b
            estimate = np.mean(differences)
            df, error = len(differences) - 1, np.sqrt(_variance(differences) / len(differences))
        else:
            estimate = np.mean(a) - np.mean(b)
            share_a, share_b = _variance(a) / len(a), _variance(b) / len(b)
            df = (share_a + share_b) ** 2 / (share_a ** 2 / (len(a) - 1) + share_b ** 2 / (len(b) - 1))
            df, error = (1.0 if np.isnan(df) else df), np.sqrt(share_a + share_b)
        tail = (1 - np.float64(LEVEL)) / 2
        low, high = (float(quantile * error + estimate) for quantile in stdtrit(df, np.array([tail, 1 - tail])))
    difference = float(np.mean(a) - np.mean(b))
    if math.isnan(low):  # no spread on either side: the interval is the difference itself
        return difference, difference
    return low, high


def _variance(values: np.ndarray) -> np.float64:
    """The sample variance (ddof 1) as scipy.stats computes it: the mean squared deviation times n / (n - 1)."""
    n = np.float64(len(values))
    return np.mean((values - np.mean(values)) ** 2) * (n / (n - 1))


def spread(a: np.ndarray, b: np.ndarray, paired: bool) -> float | None:
    """The per-seed standard deviation a power calculation plans with: of the seeds' differences
    where paired, else the two runs' pooled (None: no side has two seeds)."""
    if paired:
        return float(np.std(a - b, ddof=1)) if len(a) > 1 else None
    variances = [float(np.var(side, ddof=1)) for side in (a, b) if len(side) > 1]
    return math.sqrt(sum(variances) / len(variances)) if variances else None


def seeds_needed(a: np.ndarray, b: np.ndarray, paired: bool, alpha: float = ALPHA) -> int | None:
    """Seeds per run for a one-sided test at ``alpha`` to find the measured difference with power
    :data:`POWER`, were the per-seed spread as measured: the smallest n, from :func:`fewest_seeds`
    up, whose t-test power for the effect size d = difference / spread reaches it (statsmodels'
    ``TTestIndPower`` for two runs of n seeds, ``TTestPower`` on n paired differences). None where
    the difference is not in the claimed direction, no spread is measured, or more than
    :data:`MOST_SEEDS` would be needed."""
    difference, deviation = float(np.mean(a) - np.mean(b)), spread(a, b, paired)
    if difference <= 0 or deviation is None:
        return None
    floor = fewest_seeds(paired, alpha)
    if deviation == 0:
        return floor
    effect = difference / deviation
    if t_power(effect, MOST_SEEDS, alpha, paired) < POWER:  # power grows with n
        return None
    for start in range(floor, MOST_SEEDS + 1, 32):  # 32 at a time: the power of 1,000 sizes costs 0.1 s
        seeds = np.arange(start, min(start + 32, MOST_SEEDS + 1))
        reached = np.flatnonzero(np.asarray(t_power(effect, seeds, alpha, paired)) >= POWER)
        if len(reached):
            return int(seeds[reached[0]])
    return None


def t_power(effect: float, seeds, alpha: float, paired: bool):
    """The power of a one-sided t test at ``alpha`` to find effect size ``effect`` with ``seeds`` per run
    (an array or one number): statsmodels' ``TTestPower().power`` (``paired``: n differences) or
    ``TTestIndPower().power`` (two runs of n) with ``alternative="larger"``, to the bit (the same operations:
    1 - the noncentral t's CDF at the central t's upper ``alpha`` point; tests/test_significance.py
    compares them), without statsmodels' import and per-call machinery."""
    from scipy import special

    seeds = np.asarray(seeds)
    if paired:
        nobs, df = seeds, seeds - 1
    else:
        other = seeds * 1  # statsmodels' nobs2 = nobs1 * ratio
        nobs, df = 1.0 / (1.0 / seeds + 1.0 / other), seeds - 1 + other - 1
    critical = -special.stdtrit(df, alpha)  # scipy.stats.t.isf(alpha, df)
    return 1 - special.nctdtr(df, effect * np.sqrt(nobs), critical)


# --- F4': one paired comparison over targets (a Wilcoxon signed-rank test) ---

# The signed-rank test's asymptotic relative efficiency against the t test where the paired
# differences are normal (Hodges and Lehmann 1956): it needs 1 / (3 / pi), about 1.05 times the t
# test's units for the same power; for any distribution the efficiency is at least 0.864, and above 1
# for heavy tails.
SIGNED_RANK_ARE = 3 / math.pi


@dataclass(frozen=True)
class SignedRank:
    """One-sided Wilcoxon signed-rank tests of paired differences ``a - b`` (one pair per unit):
    ``p`` of a above b, ``p_reverse`` of b above a (scipy's ``wilcoxon`` with its defaults: zero
    differences dropped, exact null distribution up to 50 pairs without ties)."""

    n: int  # pairs
    positive: int  # pairs with a above b
    mean: float  # of a - b
    sd: float | None  # of a - b (ddof 1; None: one pair)
    p: float
    p_reverse: float


def signed_rank(a, b) -> SignedRank:
    """The paired one-sided signed-rank tests of ``a`` above ``b`` and the other way (p 1 both ways
    where every difference is zero: nothing to rank)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    p, p_reverse = signed_rank_p(a, b, "greater"), signed_rank_p(a, b, "less")
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else None
    return SignedRank(len(d), int(np.sum(d > 0)), float(np.mean(d)), sd, p, p_reverse)


def signed_rank_p(a, b, alternative: str) -> float:
    """The one-sided signed-rank p of ``a`` above ``b`` (``alternative`` "greater") or below ("less"):
    scipy's ``wilcoxon``, 1 where every difference is zero (nothing to rank)."""
    from scipy import stats

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not len(d):
        raise ValueError("a signed-rank test needs at least one pair")
    return float(stats.wilcoxon(a, b, alternative=alternative).pvalue) if np.any(d != 0) else 1.0


def signed_rank_ps(a, b, alternative: str) -> np.ndarray:
    """:func:`signed_rank_p` of each row of ``a`` against the same row of ``b`` (2-d, one test a row), each
    equal to its own call: the rows whose test scipy's ``wilcoxon`` makes asymptotic (more than 50 pairs,
    or more than 13 with a zero or tied difference: a bootstrap resample's) in one call along the rows, the
    others (its exact and permutation tests) one by one."""
    from scipy import stats

    a, b = np.atleast_2d(np.asarray(a, dtype=np.float64)), np.atleast_2d(np.asarray(b, dtype=np.float64))
    d = a - b
    if not d.shape[1]:
        raise ValueError("a signed-rank test needs at least one pair")
    magnitudes = np.sort(np.abs(d), axis=1)
    tied_or_zero = (magnitudes[:, 0] == 0) | np.any(magnitudes[:, 1:] == magnitudes[:, :-1], axis=1)
    ranked = np.any(d != 0, axis=1)
    asymptotic = ranked & ((d.shape[1] > 50) | ((d.shape[1] > 13) & tied_or_zero))
    p = np.ones(len(d))
    if asymptotic.any():
        p[asymptotic] = stats.wilcoxon(a[asymptotic], b[asymptotic], alternative=alternative, axis=1,
                                       method="asymptotic").pvalue
    for row in np.flatnonzero(ranked & ~asymptotic):
        p[row] = signed_rank_p(a[row], b[row], alternative)
    return p


def pairs_needed_signed_rank(differences, alpha: float = ALPHA) -> int | None:
    """Pairs for a one-sided signed-rank test at ``alpha`` to find the measured mean of
    ``differences`` (a - b per pair) with power :data:`POWER`, were the spread as measured: the pairs
    a one-sided paired t test needs (statsmodels' ``TTestPower`` at effect d = mean / SD), over
    :data:`SIGNED_RANK_ARE`; never below the exact test's floor (5 pairs: 1 / 2^5 <= 0.05). None where
    the mean is not above zero or one pair measures no spread."""
    from statsmodels.stats.power import TTestPower
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    d = np.asarray(differences, dtype=np.float64)
    mean = float(np.mean(d)) if len(d) else 0.0
    if mean <= 0 or len(d) < 2:
        return None
    floor, sd = fewest_seeds(True, alpha), float(np.std(d, ddof=1))
    effect = mean / sd if sd > 0 else math.inf
    analysis = TTestPower()
    if not math.isfinite(effect):
        return floor
    at_floor = float(analysis.power(effect, floor * SIGNED_RANK_ARE, alpha, alternative="larger"))
    if not at_floor < POWER:  # NaN: an effect so large that the noncentral t overflows (power 1)
        return floor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        found = float(np.squeeze(analysis.solve_power(effect_size=effect, alpha=alpha, power=POWER,
                                                      alternative="larger")))
    if not math.isfinite(found):  # statsmodels' solver failed: the normal approximation, close for many pairs
        from scipy import stats

        found = ((stats.norm.ppf(1 - alpha) + stats.norm.ppf(POWER)) / effect) ** 2
    return max(floor, math.ceil(float(found) / SIGNED_RANK_ARE))
