"""A claim of ordered trends, judged over seeds (F1r: docs/findings.md, "F1 across the paper's range"):
per K_train, accuracy falls as k_test grows (one model's cells: Page's L test, each seed one block); per
k_test, accuracy rises with K_train (different models: Jonckheere-Terpstra, a permutation p). A comparison
holds when its p at some judged length is at most alpha / (lengths judged); reproduced when all hold;
contradicted when some reverse p is at most alpha / (every test made); undecided otherwise. Gated, where
the claim says so, on every K_train having learned every k_test <= K_train at the training length. Nothing
is tested before every K_train has every judged seed (seeds trained in several sittings add up first)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl

from . import claim_runs, significance, verdicts
from .claim_file import Claim
from .claim_runs import TREND_GROUPS, Groups
from .finding import Finding, undecided
from .fit_gate import FITS, k_train_not_learned
from .monte_carlo import shown_p
from .scope import scope
from .seed_summary import TaskResults
from .trend_tests import Trend, jonckheere, page

CORRECTION = ("A comparison holds when its p at some judged length is at most {alpha:g} / (lengths judged); "
              "reproduced when every comparison holds; contradicted when some test's reverse p is at most "
              "{alpha:g} / (every test made); undecided otherwise.")
GATE = (" Undecided too when some K_train's mean accuracy at the longest training length is below {fits:g} at a "
        "k_test <= K_train (not learned).")


def finding_of_trends(claim: Claim, spec: dict, rows: pl.DataFrame) -> Finding:
    """``claim`` judged on the runs of the figure ``spec`` among the run-summary ``rows``."""
    text = claim.claim(spec["task"])
    judged = scope(claim, spec, rows)
    runs = judged.runs
    trained = claim_runs.k_runs(spec, claim.compare[0].rising)
    criterion = (f"{runs.metric(next(iter(spec['runs'])))} accuracy {judged.described}. "
                 + " ".join(rule.says for rule in claim.compare) + " "
                 + CORRECTION.format(alpha=significance.ALPHA)
                 + (GATE.format(fits=FITS) if claim.gate == "every K_train fits" else ""))
    why = (judged.nothing(claim)
           or (f"fewer than {TREND_GROUPS} K_train trained" if len(trained) < TREND_GROUPS else "")
           or seeds_missing(runs, trained, judged.seeds))
    if why:
        return Finding(claim.name, text, criterion, f"nothing judged: {why}.", undecided(f"no results: {why}"))
    unlearned = (k_train_not_learned(runs, trained, sorted(spec["k_test"])) if claim.gate == "every K_train fits"
                 else "")
    family, missing = comparisons([g for rule in claim.compare for g in claim_runs.trends(rule, spec)], runs,
                                  judged.lengths)
    tests = tuple(test for trends in family.values() for test in trends)
    numbers = "; ".join([str(test) for test in tests] + [f"{absent}: no results" for absent in missing]) + "."
    if unlearned:
        return Finding(claim.name, text, criterion, numbers,
                       undecided(f"not learned at the training length: {unlearned}"), tests)
    return Finding(claim.name, text, criterion, numbers, trends_verdict(family, missing), tests)


def seeds_missing(runs: TaskResults, trained: list[tuple[int, str, str]], seeds: list[int]) -> str:
    """The K_train of ``trained`` without a value of every judged seed (a run trained in several sittings,
    not all in yet: no trend is tested before all its seeds are), with how many they have; "" if none."""
    short = [f"K_train {K} {len(have)} of {len(seeds)}" for K, variant, scheme in trained
             if len(have := runs.seeds_with(variant, scheme)) < len(seeds)]
    return f"seeds judged not all there ({', '.join(short)})" if short else ""


def comparisons(trends: list[Groups], runs: TaskResults,
                lengths: list[int]) -> tuple[dict[str, list[Trend]], list[str]]:
    """Every test of ``trends`` (its name -> one test per judged length), and the cells without results."""
    family: dict[str, list[Trend]] = {}
    missing: list[str] = []
    # the levels a p is compared with (verdict): a comparison's over its lengths, a contradiction's over every test
    thresholds = ((significance.ALPHA / len(lengths), significance.ALPHA / (len(trends) * len(lengths)))
                  if lengths else ())
    for groups in trends:
        labels = [cell.name for cell in groups.cells]
        for length in lengths:
            values = [runs.per_seed(cell.variant, cell.scheme, length, cell.k) for cell in groups.cells]
            cell = groups.cell.format(length=length)
            if groups.test == "page":  # one model's cells: the seeds that have every one are the blocks
                seeds = sorted(set.intersection(*(set(column) for column in values)))
                if len(seeds) < 2:
                    missing.append(cell)
                    continue
                test = page(cell, labels, np.array([[column[seed] for column in values] for seed in seeds]))
            else:
                if any(not group for group in values):
                    missing.append(cell)
                    continue
                test = jonckheere(cell, labels, [list(group.values()) for group in values], thresholds)
            family.setdefault(groups.name, []).append(replace(test, part=groups.part))
    return family, missing


def trends_verdict(family: dict[str, list[Trend]], missing: list[str]) -> str:
    """Reproduced, contradicted or undecided, as :data:`CORRECTION` says."""
    if missing:
        return undecided(f"no results: {missing[0]}")
    tests = [test for trends in family.values() for test in trends]
    if not tests:
        return undecided("no results: no comparison has three groups")
    reverse = min(tests, key=lambda test: test.p_reverse)
    if reverse.p_reverse <= significance.ALPHA / len(tests):
        return (f"{verdicts.CONTRADICTED}: {reverse.cell}: the reverse order, p = "
                f"{shown_p(reverse.p_reverse, reverse.draws[1])} <= {significance.ALPHA:g} / {len(tests)}")
    open_ = [name for name, trends in family.items()
             if min(test.p for test in trends) > significance.ALPHA / len(trends)]
    if not open_:
        return verdicts.REPRODUCED
    best = {name: min(family[name], key=lambda test: test.p) for name in open_}
    shown = ", ".join(f"{name} (smallest p {test.p:.3g} at {test.cell.rsplit(' at ', 1)[1]})"
                      for name, test in best.items())
    return undecided(f"{len(open_)} of {len(family)} comparisons hold neither way: {shown}")
