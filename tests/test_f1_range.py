"""F1r: F1 across the paper's range (K_train 4 to 12), judged by trend tests on fresh seeds, gated on
the models having learned every k <= K_train at the training length (docs/findings.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import page_trend_test

from pipeline_src.findings import judge as judged
from pipeline_src.findings import run_summary
from pipeline_src.findings import trend_tests as trend
from pipeline_src.planning import jobs
from pipeline_src.tasks import get_task
from tests.conftest import default_config
from tests.helpers import F1_TASK, claim

K_TRAIN = [4, 6, 8, 10, 12]
K_TEST = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16]
F1R = claim("F1r")
FRESH = list(range(F1R.seeds_from, F1R.seeds_from + 8))


@pytest.fixture
def config():
    config = default_config()
    config[F1_TASK]["k_train"] = K_TRAIN
    config[F1_TASK]["eval"]["k_test"] = K_TEST
    return config


def f1r(config, value, seeds=FRESH, there=None) -> judged.Finding:
    """F1r judged from run-summary rows whose every value is ``value(K_train, k_test, length, seed)``, of the
    ``there`` seeds (default all ``seeds``) of each K_train (``there``: K_train -> seeds)."""
    config[F1_TASK]["seeds"] = seeds
    there = there or {}
    spec = jobs.figure_spec(config, "figure1")
    metric = get_task(F1_TASK).headline_metric(next(iter(spec["runs"])))
    rows = [(F1_TASK, f"k{K}", F1R.compare[0].rising.scheme, seed, k, length, metric, value(K, k, length, seed))
            for K in K_TRAIN for seed in there.get(K, seeds) for length in config[F1_TASK]["eval"]["lengths"]
            for k in K_TEST if k <= length // 2]
    return judged.judge(F1R, spec, pl.DataFrame(rows, schema=run_summary.SCHEMA, orient="row"))


def paper_like(judged_length: int, *, reverse: bool = False, unlearned: int | None = None):
    """Every model learned (0.97 at every k <= K_train in training); at ``judged_length`` accuracy falls
    with k_test and rises with K_train (falls, with ``reverse``), with a little noise per seed;
    K_train ``unlearned`` sits at chance at its largest k."""
    def value(K, k, length, seed):
        noise = 0.004 * ((seed * 7 + k * 3 + K) % 5)
        if length <= 50:
            return 0.5 if (K == unlearned and k == K) else (0.97 + noise if k <= K else 0.6)
        if length != judged_length:
            return 0.5 + noise
        sign = -1 if reverse else 1
        return 0.9 - 0.03 * k + sign * 0.02 * K + noise
    return value


def test_a_paper_like_range_is_reproduced_with_every_comparison(config):
    found = f1r(config, paper_like(200))
    assert found.verdict == judged.REPRODUCED, found.verdict
    # (a) one per K_train (each has >= 3 k_test <= K_train); (b) k_test 4, 6 and 8 have >= 3 K_train >= k_test
    for name in [f"K_train {K} over k_test at length 200" for K in K_TRAIN] + [
            f"k_test {k} over K_train at length 200" for k in (4, 6, 8)]:
        assert name in found.numbers
    assert "k_test 10 over K_train" not in found.numbers, "two K_train >= 10: no trend of three"
    assert "k_test 1 over K_train" not in found.numbers, "(b) judges the paper's k_test 4 to 16 only"


def test_the_reverse_trend_in_k_train_is_a_contradiction(config):
    found = f1r(config, paper_like(200, reverse=True))
    assert found.verdict.startswith(judged.CONTRADICTED), found.verdict
    assert "over K_train" in found.verdict


def test_no_trend_anywhere_is_undecided_naming_the_open_comparisons(config):
    found = f1r(config, paper_like(10_000))  # the judged length is none evaluated: noise only
    assert found.verdict.startswith(f"{judged.UNDECIDED}: 8 of 8 comparisons hold neither way"), found.verdict


def test_a_k_train_that_did_not_learn_leaves_it_undecided_by_name(config):
    found = f1r(config, paper_like(200, unlearned=10))
    assert found.verdict == (f"{judged.UNDECIDED}: not learned at the training length: at length 50, "
                             "K_train 10 (k = 10: 0.50)"), found.verdict


def test_only_fresh_seeds_are_judged(config):
    seen = f1r(config, paper_like(200), seeds=list(range(8)))
    assert seen.verdict == (f"{judged.UNDECIDED}: no results: no seed from {F1R.seeds_from} on "
                            "(earlier verdicts and pilots saw the seeds below)")


def test_nothing_is_tested_before_every_k_train_has_every_judged_seed(config):
    """Seeds trained in several sittings: a summary holding some of them judges no trend yet (nor the
    fit gate on a few seeds), and names the K_train short of seeds; a diverged seed (null) counts as missing."""
    first = FRESH[:2]
    found = f1r(config, paper_like(200), there={K: first for K in K_TRAIN[1:]})
    assert found.verdict == (f"{judged.UNDECIDED}: no results: seeds judged not all there (K_train 6 2 of 8, "
                             "K_train 8 2 of 8, K_train 10 2 of 8, K_train 12 2 of 8)"), found.verdict
    assert not found.comparisons and found.numbers.startswith("nothing judged")
    diverged = f1r(config, lambda K, k, length, seed: None if (K, seed) == (12, FRESH[-1]) else
                   paper_like(200, unlearned=10)(K, k, length, seed))
    assert diverged.verdict.endswith("no results: seeds judged not all there (K_train 12 7 of 8)"), diverged.verdict


def test_fewer_than_three_k_train_judge_nothing(config):
    config[F1_TASK]["k_train"] = [2, 4]
    config[F1_TASK]["seeds"] = FRESH
    spec = jobs.figure_spec(config, "figure1")
    found = judged.judge(F1R, spec, pl.DataFrame(schema=run_summary.SCHEMA))
    assert found.verdict == f"{judged.UNDECIDED}: no results: fewer than 3 K_train trained"


def test_page_reads_the_columns_in_the_predicted_order_of_rising_accuracy():
    blocks = np.array([[0.5, 0.7, 0.9], [0.6, 0.65, 0.95], [0.55, 0.8, 0.85]])
    found = trend.page("c", ["k 8", "k 4", "k 1"], blocks)
    assert found.p == page_trend_test(blocks).pvalue and found.p_reverse == page_trend_test(blocks[:, ::-1]).pvalue
    assert found.p < 0.01 < 0.99 < found.p_reverse


@pytest.mark.parametrize("sizes", [(8, 8, 8, 8, 8), (4, 5, 6)])
def test_a_drawn_jonckheere_p_is_scipys_permutation_test_p_to_the_bit(sizes):
    """The null is drawn in batches (Generator.permuted), each round drawing on from the last, but from
    scipy's very permutations: its p's, both ways, equal ``scipy.stats.permutation_test``'s, ties
    included, and a p whose Monte Carlo interval holds a threshold is drawn again from more of them,
    again scipy's p from as many."""
    from scipy.stats import permutation_test

    def scipys(alternative: str, resamples: int) -> float:
        return permutation_test([np.array(group) for group in values], trend.jonckheere_statistic,
                                permutation_type="independent", vectorized=True, n_resamples=resamples,
                                alternative=alternative, rng=np.random.default_rng(trend.JT_SEED)).pvalue

    rng = np.random.default_rng(7)
    values = tuple(tuple(np.round(rng.random(size) + 0.1 * i, 1).tolist()) for i, size in enumerate(sizes))
    (p, draws), (p_reverse, _) = trend._p_values(values, ())
    for alternative, mine in zip(trend.ALTERNATIVES, (p, p_reverse), strict=True):
        assert mine == scipys(alternative, trend.JT_RESAMPLES), alternative
    assert draws == 0
    (again, more), _ = trend._p_values(values, (p,))  # a threshold at the p itself: drawn again
    assert more >= trend.JT_RESAMPLES * 4 and again == scipys("greater", more)


def test_jonckheere_is_mann_whitney_for_two_groups_and_its_p_a_permutation_p():
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(3)
    low, high = rng.integers(0, 5, 7).astype(float), rng.integers(0, 5, 6).astype(float)
    assert trend.jonckheere_statistic(low, high) == mannwhitneyu(high, low).statistic
    ordered = [np.array([0.1, 0.2, 0.3]), np.array([0.4, 0.5, 0.6]), np.array([0.7, 0.8, 0.9])]
    found = trend.jonckheere("c", ["a", "b", "c"], ordered)
    # a perfect order of 3 groups of 3: 1 of the 9! / (3!)^3 = 1,680 distinct assignments (exact test)
    assert found.p == pytest.approx(1 / 1680) and found.p_reverse == 1.0
