"""F1r: F1 judged across the paper's range of K_train (4 to 12) and k_test (4 to 16), written on
2026-11-28 before any model it judges was trained (docs/findings.md, "F1 across the paper's range").

On seeds from :data:`F1R_FRESH_FROM` on, at each evaluated length from 2x to 8x the training length:
(a) per K_train, accuracy falls as k_test grows over the k_test <= K_train (Page's L test, each seed
one block); (b) per k_test of the paper's range with at least three K_train >= k_test, accuracy rises
with K_train among them (Jonckheere-Terpstra, a permutation p). A comparison holds when its p at some
judged length is at most 0.05 / (lengths judged); reproduced when all hold; contradicted when some
reverse p is at most 0.05 / (every test made); undecided otherwise. Gated first: a K_train whose mean
accuracy at the longest training length is below 0.9 at some k_test <= K_train leaves it undecided.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from . import significance
from .fit_gate import FITS
from .seed_summary import TaskResults
from .trend import Trend, jonckheere, page

F1R_FRESH_FROM = 20  # earlier F1 verdicts saw seeds 0 to 15, the GPU's K_train 8 pilot 16 and 17
PAPER_K_TEST = (4, 16)  # (b) judges each k_test of the paper's range
SMALLEST_TREND = 3  # groups a trend needs (Page's test needs three columns)

CRITERION = (
    "(a) For every K_train, accuracy falls as k_test grows over the k_test <= K_train (at least three): "
    "Page's L test, each seed's cells one block. (b) For every k_test from {low} to {high} with at least three "
    "trained K_train >= k_test, accuracy rises with K_train among them: the Jonckheere-Terpstra statistic, a "
    "one-sided permutation p. A comparison holds when its p at some judged length is at most {alpha:g} / (lengths "
    "judged); reproduced when every comparison holds; contradicted when some test's reverse p is at most "
    "{alpha:g} / (every test made); undecided otherwise. Undecided too when some K_train's mean accuracy at the "
    "longest training length is below {fits:g} at a k_test <= K_train (not learned).")


def judge(spec: dict, rows: pl.DataFrame, scheme: str, across: tuple[float, float]) -> tuple[str, str, str]:
    """(criterion, numbers, verdict) of F1r on the ``scheme`` models of the Figure 1 ``spec`` among the
    run-summary ``rows``, at every evaluated length from ``across`` times the training length."""
    fresh = [seed for seed in spec["seeds"] if seed >= F1R_FRESH_FROM]
    runs = TaskResults({**spec, "seeds": fresh}, rows)
    low, high = (factor * runs.train_max for factor in across)
    lengths = [length for length in runs.lengths if low <= length <= high]
    k_train = sorted((runs.task.layout.params(variant)["k_train"], variant)
                     for variant, schemes in spec["runs"].items() if scheme in schemes)
    criterion = (f"answer accuracy of {scheme} at each evaluated length from {low:g} to {high:g} "
                 f"({', '.join(map(str, lengths)) or 'none evaluated'}), on seeds {F1R_FRESH_FROM} and up only. "
                 + CRITERION.format(low=PAPER_K_TEST[0], high=PAPER_K_TEST[1], alpha=significance.ALPHA, fits=FITS))
    why = nothing_to_judge(fresh, lengths, k_train)
    if why:
        return criterion, f"nothing judged: {why}.", f"{significance.UNDECIDED}: no results: {why}"
    unlearned = not_learned(runs, scheme, k_train, sorted(spec["k_test"]))
    family, missing = comparisons(runs, scheme, k_train, sorted(spec["k_test"]), lengths)
    numbers = "; ".join([str(test) for tests in family.values() for test in tests]
                        + [f"{absent}: no results" for absent in missing]) + "."
    if unlearned:
        return criterion, numbers, f"{significance.UNDECIDED}: not learned at the training length: {unlearned}"
    return criterion, numbers, verdict(family, missing)


def nothing_to_judge(fresh: list[int], lengths: list[int], k_train: list) -> str:
    """Why F1r can judge nothing ("" when it can)."""
    if not fresh:
        return f"no seed from {F1R_FRESH_FROM} on (earlier verdicts and pilots saw the seeds below)"
    if not lengths:
        return "no evaluated length in the judged range"
    if len(k_train) < SMALLEST_TREND:
        return f"fewer than {SMALLEST_TREND} K_train trained"
    return ""


def not_learned(runs: TaskResults, scheme: str, k_train: list[tuple[int, str]], k_test: list[int]) -> str:
    """The K_train whose seeds' mean accuracy at the longest evaluated training length is below the
    gate at some k_test <= K_train, with those k and means ("" when every K_train learned)."""
    length = runs.in_training()
    named = []
    for K, variant in k_train:
        means = {k: runs.at(variant, scheme, length, k) for k in k_test if k <= K}
        missed = [f"k = {k}: {stat.mean:.2f}" if stat else f"k = {k}: no results"
                  for k, stat in means.items() if stat is None or stat.mean < FITS]
        if missed:
            named.append(f"K_train {K} ({', '.join(missed)})")
    return f"at length {length}, " + "; ".join(named) if named else ""


def comparisons(runs: TaskResults, scheme: str, k_train: list[tuple[int, str]], k_test: list[int],
                lengths: list[int]) -> tuple[dict[str, list[Trend]], list[str]]:
    """Every test F1r makes, per comparison (its name -> one test per judged length), and the cells
    without results."""
    family: dict[str, list[Trend]] = {}
    missing: list[str] = []
    for K, variant in k_train:  # (a): one model's cells, seeds as blocks
        ks = [k for k in k_test if k <= K][::-1]  # predicted rising accuracy: the largest k_test first
        if len(ks) < SMALLEST_TREND:
            continue
        for length in lengths:
            columns = [runs.per_seed(variant, scheme, length, k) for k in ks]
            seeds = sorted(set.intersection(*(set(column) for column in columns)))
            cell = f"K_train {K} over k_test at length {length}"
            if len(seeds) < 2:
                missing.append(cell)
                continue
            blocks = np.array([[column[seed] for column in columns] for seed in seeds])
            family.setdefault(f"(a) K_train {K}", []).append(page(cell, [f"k_test {k}" for k in ks], blocks))
    for k in k_test:  # (b): independent models, one value per seed
        larger = [(K, variant) for K, variant in k_train if K >= k]
        if not PAPER_K_TEST[0] <= k <= PAPER_K_TEST[1] or len(larger) < SMALLEST_TREND:
            continue
        for length in lengths:
            groups = [list(runs.per_seed(variant, scheme, length, k).values()) for _, variant in larger]
            cell = f"k_test {k} over K_train at length {length}"
            if any(not group for group in groups):
                missing.append(cell)
                continue
            family.setdefault(f"(b) k_test {k}", []).append(
                jonckheere(cell, [f"K_train {K}" for K, _ in larger], groups))
    return family, missing


def verdict(family: dict[str, list[Trend]], missing: list[str]) -> str:
    """Reproduced, contradicted or undecided, as :data:`CRITERION` says."""
    if missing:
        return f"{significance.UNDECIDED}: no results: {missing[0]}"
    tests = [test for trends in family.values() for test in trends]
    if not tests:
        return f"{significance.UNDECIDED}: no results: no comparison has three groups"
    reverse = min(tests, key=lambda test: test.p_reverse)
    if reverse.p_reverse <= significance.ALPHA / len(tests):
        return (f"{significance.CONTRADICTED}: {reverse.cell}: the reverse order, p = {reverse.p_reverse:.3g} "
                f"<= {significance.ALPHA:g} / {len(tests)}")
    open_ = [name for name, trends in family.items()
             if min(test.p for test in trends) > significance.ALPHA / len(trends)]
    if not open_:
        return significance.REPRODUCED
    best = {name: min(family[name], key=lambda test: test.p) for name in open_}
    shown = ", ".join(f"{name} (smallest p {test.p:.3g} at {test.cell.rsplit(' at ', 1)[1]})"
                      for name, test in best.items())
    return f"{significance.UNDECIDED}: {len(open_)} of {len(family)} comparisons hold neither way: {shown}"
