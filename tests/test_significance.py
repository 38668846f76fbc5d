"""The findings' tests over seeds (pipeline_src/reporting/significance.py): their error rates on
synthetic per-seed tables (400 random draws each: false positives at most 7%, power at least 80% for
an effect of 1.5 per-seed standard deviations with 8 seeds per run, a finding of equal runs rarely
reproduced, a reversed one contradicted), and the verdict's rules on hand-made cases."""

from __future__ import annotations

import copy

import numpy as np
import polars as pl
import pytest

from pipeline_src.reporting import findings as judged
from pipeline_src.reporting import run_findings, run_summary
from pipeline_src.reporting import significance as sig
from pipeline_src.tasks import get_task
from tests.conftest import default_config

DRAWS = 400
SEEDS = 8
SD = 0.1  # per-seed standard deviation of the synthetic tables
F1_TASK = "sparse_parity"


def rate(outcomes) -> float:
    return float(np.mean(list(outcomes)))


def draws(seed: int):
    rng = np.random.default_rng(seed)
    return (rng for _ in range(DRAWS))


@pytest.mark.parametrize("paired", [False, True])
def test_a_comparison_with_no_effect_is_significant_in_at_most_7_percent(paired):
    found = rate(sig.compare("a", "b", "cell", rng.normal(0.5, SD, SEEDS), rng.normal(0.5, SD, SEEDS),
                             paired=paired).significant for rng in draws(1))
    assert found <= 0.07, found


def test_an_effect_of_one_and_a_half_sd_with_8_seeds_is_found_in_at_least_80_percent():
    found = rate(sig.compare("a", "b", "cell", rng.normal(0.5 + 1.5 * SD, SD, SEEDS), rng.normal(0.5, SD, SEEDS),
                             paired=False).significant for rng in draws(2))
    assert found >= 0.8, found


# --- whole findings: Figure 1's F1 (two paired comparisons and one between models) on synthetic tables ---


@pytest.fixture(scope="module")
def f1_spec() -> dict:
    config = copy.deepcopy(default_config())
    config[F1_TASK]["seeds"] = list(range(SEEDS))
    spec, _ = run_findings.figure_specs(config)["F1"]
    return spec


def f1_rows(spec: dict, rng: np.random.Generator, effect: float) -> pl.DataFrame:
    """Per-seed accuracies at the longest length of every F1 cell: N(0.5, SD) each, plus ``effect``
    SDs where the claim expects more (smaller k_test, larger K_train)."""
    task, longest = get_task(F1_TASK), max(spec["lengths"])
    rows = []
    for variant in spec["runs"]:
        k_train = task.layout.params(variant)["k_train"]
        for k in spec["k_test"]:
            # the claim's order: k_test 1 above K_train 4's k_test 4, which is above K_train 2's k_test 4
            better = 2 * (k == 1) + (k == k_train == 4)
            for seed in spec["seeds"]:
                rows.append((F1_TASK, variant, judged.F1_SCHEME, seed, k, longest, "answer",
                             rng.normal(0.5 + effect * SD * better, SD)))
    return run_summary.canonical(pl.DataFrame(rows, schema=list(run_summary.SCHEMA), orient="row"))


def f1_verdicts(spec: dict, effect: float, seed: int, n: int = DRAWS) -> list[str]:
    return [judged.sparse_parity_finding(spec, f1_rows(spec, rng, effect)).verdict
            for rng, _ in zip(draws(seed), range(n))]


def test_a_finding_of_equal_runs_is_reproduced_in_at_most_7_percent(f1_spec):
    verdicts = f1_verdicts(f1_spec, 0.0, 3)
    assert rate(v == judged.REPRODUCED for v in verdicts) <= 0.07
    assert rate(v.startswith(judged.CONTRADICTED) for v in verdicts) <= 0.07


def test_a_finding_with_its_effects_reversed_is_contradicted(f1_spec):
    verdicts = f1_verdicts(f1_spec, -1.5, 4)
    assert rate(v.startswith(judged.CONTRADICTED) for v in verdicts) >= 0.8
    assert not any(v == judged.REPRODUCED for v in verdicts)


def test_a_finding_with_its_effects_is_reproduced(f1_spec):
    """Each comparison at 2 SD (the paired ones at 2 / sqrt(2) of their differences' SD): the
    finding's power over 100 draws (all three comparisons must hold)."""
    verdicts = f1_verdicts(f1_spec, 2.0, 5, n=100)
    assert rate(v == judged.REPRODUCED for v in verdicts) >= 0.8


# --- the rules on hand-made cases ---


def test_constant_sides_are_not_infinitely_significant():
    """Every seed at 1.00 against every seed at 0.96: two seeds a side cannot decide (a t-test would
    say p = 0); three can, since then no other order of the six values is as extreme."""
    assert sig.compare("a", "b", "c", [1.0, 1.0], [0.96, 0.96], paired=False).p == pytest.approx(1 / 6)
    assert sig.compare("a", "b", "c", [1.0] * 3, [0.96] * 3, paired=False).significant


@pytest.mark.parametrize("paired, seeds", [(False, 3), (True, 5)])
def test_the_fewest_seeds_that_can_decide(paired, seeds):
    assert sig.fewest_seeds(paired) == seeds
    assert sig.compare("a", "b", "c", [1.0] * seeds, [0.0] * seeds, paired=paired).significant
    assert not sig.compare("a", "b", "c", [1.0] * (seeds - 1), [0.0] * (seeds - 1), paired=paired).significant


def test_seeds_needed_follow_the_power_of_a_t_test():
    """d = 1.5: 8 seeds give power 0.886 (statsmodels), 7 give 0.837, 6 give 0.776: 7 needed."""
    a, b = np.array([1.5, 3.0, 0.0]), np.array([0.0, 1.5, -1.5])  # difference 1.5, both SDs 1.5: d = 1
    assert sig.seeds_needed(a, b, paired=False) == 14
    assert sig.seeds_needed(a * 1.5, b, paired=False) is not None
    assert sig.seeds_needed(b, a, paired=False) is None  # the wrong way round: nothing to plan


def test_the_interval_is_welchs_and_the_paired_one_pairs():
    a, b = [0.9, 0.8, 0.7, 0.85], [0.5, 0.6, 0.4, 0.55]
    from scipy import stats

    welch = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    found = sig.compare("a", "b", "c", a, b, paired=False)
    assert (found.ci_low, found.ci_high) == pytest.approx((welch.low, welch.high))
    paired = sig.compare("a", "b", "c", a, b, paired=True)
    assert paired.ci_high - paired.ci_low < found.ci_high - found.ci_low  # the pairs share each seed's level


def test_verdict_rules():
    up = sig.compare("a", "b", "c", [1.0] * 4, [0.0] * 4, paired=False)
    flat = sig.compare("a", "b", "c", [0.5, 0.6, 0.4, 0.5], [0.5, 0.55, 0.45, 0.5], paired=False)
    down = sig.compare("a", "b", "c", [0.0] * 4, [1.0] * 4, paired=False)
    assert sig.verdict([up, up]) == sig.REPRODUCED
    assert sig.verdict([up, down]).startswith(sig.CONTRADICTED)
    assert sig.verdict([up, flat]).startswith(sig.UNDECIDED)
    assert sig.verdict([up], ["x at c"]) == "undecided: no results for x at c"
    small = sig.compare("a", "b", "c", [0.6, 0.5], [0.5, 0.45], paired=False)
    assert sig.verdict([up, small]) == f"undecided: about {small.needed} seeds per run would decide at the " \
                                       "measured spread (2 now)"


def test_holm_needs_the_reverse_to_hold_over_every_comparison():
    """One comparison reversed at p = 0.0286 (4 seeds a side, exact): contradicted alone, not among
    three (Holm's first step asks for 0.05 / 3)."""
    down = sig.compare("a", "b", "c", [0.0, 0.1, 0.05, 0.02], [0.9, 1.0, 0.95, 0.92], paired=False)
    assert down.p_reverse == pytest.approx(1 / 70)
    flat = sig.compare("a", "b", "c", [0.5, 0.6, 0.4, 0.5], [0.5, 0.55, 0.45, 0.5], paired=False)
    assert sig.verdict([down]).startswith(sig.CONTRADICTED)
    assert sig.verdict([down, flat, flat, flat, flat]).startswith(sig.UNDECIDED)


def test_contradicting_agrees_with_statsmodels_holm():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(6)
    for _ in range(10):  # statsmodels' Holm collects garbage on each call: 0.1 to 0.6 s in the suite
        m = int(rng.integers(1, 12))
        comparisons = [sig.Comparison("a", "b", "c", (0.0,), (1.0,), False, 0.5, float(p), 0.0, 0.0, None)
                       for p in rng.uniform(0, 0.1, m) ** rng.uniform(1, 3)]
        holm = multipletests([c.p_reverse for c in comparisons], alpha=sig.ALPHA, method="holm")[0]
        found = sig.contradicting(comparisons)
        assert (found is not None) == holm.any()
        if found is not None:
            assert found.p_reverse == min(c.p_reverse for c in comparisons)


def test_a_difference_the_wrong_way_round_plans_the_seeds_that_would_contradict():
    """Two seeds a side, PPC below a baseline on both: undecided, with the seeds at which the reverse
    would pass Holm's first step (alpha / 3 for three comparisons: 4 seeds a side, 1 / C(8, 4))."""
    up = sig.compare("a", "b", "c", [1.0] * 4, [0.0] * 4, paired=False)
    below = sig.compare("ppc", "rope", "length 9", [0.96, 0.96], [1.0, 1.0], paired=False)
    assert sig.verdict([up, up, below]) == ("undecided: ppc below rope at length 9, not significantly; about 4 "
                                            "seeds per run would show it significant")


@pytest.mark.parametrize("paired", [False, True])
def test_one_seed_is_never_significant_and_says_so(paired):
    found = sig.compare("a", "b", "c", [1.0], [0.0], paired=paired)
    assert not found.significant and found.p_reverse == 1.0 and "too few to test" in str(found)
    assert sig.verdict([found]).startswith(sig.UNDECIDED)
