"""A claim that one side is above another, judged by tests over seeds (:mod:`.significance`): unpaired
permutation tests where the sides are different models, sign-flip tests where they are the same models in
two cells. Corrected by Holm over the comparisons (``holm``: reproduced when every comparison is
significant, contradicted when one is significant the other way after Holm's correction) or by a bound
over the lengths (``over lengths``: a comparison holds where its p at some judged length is at most alpha /
(lengths judged)); gated, where the claim says so, on some run having fitted the training lengths."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from . import claim_runs, significance, verdicts
from .claim_file import Claim
from .claim_runs import Pair
from .finding import Finding, undecided
from .fit_gate import FITS, some_run_fits
from .scope import metric_described, scope
from .seed_summary import TaskResults

CORRECTIONS = {
    "holm": (f"Each comparison: a one-sided permutation test over seeds at alpha {significance.ALPHA:g}; reproduced "
             "when every comparison is significant, contradicted when one is significant the other way after "
             "Holm's correction, else undecided."),
    "over lengths": (f"A comparison holds when its one-sided permutation p at some judged length is at most "
                     f"{significance.ALPHA:g} / (lengths judged); reproduced when every comparison holds, "
                     "contradicted when one is significant the other way after Holm's correction over every "
                     "comparison at every length, else undecided."),
}


class Comparisons:
    """The comparisons of one claim, made on ``runs`` (a side naming its config files: on that config's
    runs, ``sides``) as its rules ask for them."""

    def __init__(self, runs: TaskResults, sides: dict[tuple[str, ...], TaskResults] | None = None) -> None:
        self.runs = runs
        self.sides = sides or {}
        self.made: list[significance.Comparison] = []
        self.missing: list[str] = []

    def add(self, pair: Pair, length: int | None) -> None:
        """Test ``pair``'s better side above its worse at ``length`` (paired: the same models, seed by seed)."""
        cell = pair.cell.format(length=length)
        a, b = (self.sides.get(side.config, self.runs).per_seed(side.variant, side.scheme, length, side.k)
                for side in (pair.better, pair.worse))
        if pair.paired:
            seeds = sorted(set(a) & set(b))
            a, b = {seed: a[seed] for seed in seeds}, {seed: b[seed] for seed in seeds}
        absent = [side.name for side, values in ((pair.better, a), (pair.worse, b)) if not values]
        if absent:
            self.missing.append(f"{absent[0]} at {cell}")
            return
        made = significance.compare(pair.better.name, pair.worse.name, cell, list(a.values()), list(b.values()),
                                    paired=pair.paired)
        self.made.append(replace(made, part=pair.part))


def numbers(tests: list, missing: list[str]) -> str:
    shown = [str(test) for test in tests] + [f"{absent}: no results" for absent in missing]
    return "; ".join(shown) + "." if shown else "nothing to compare."


def finding_over_seeds(claim: Claim, spec: dict, rows: pl.DataFrame, sides: dict | None = None) -> Finding:
    """``claim`` judged on the runs of the figure ``spec`` among the run-summary ``rows``; a claim whose
    sides name their config files, each side on its own config's runs (``sides``: its ``config`` -> a
    :class:`.across.SideRuns`, the figure spec of that config and the rows of its runs)."""
    text = claim.claim(spec["task"])
    judged = scope(claim, spec, rows)
    runs = judged.runs
    specs = {config: side.spec for config, side in (sides or {}).items()}
    planned = [pair for rule in claim.compare for pair in claim_runs.pairs(rule, spec, specs)]
    variants = [cell.variant for pair in planned for cell in (pair.better, pair.worse)]
    criterion = (f"{metric_described(runs, variants or list(spec['runs']))} {judged.described}: "
                 + " ".join(rule.says for rule in claim.compare) + " " + CORRECTIONS[claim.correction])
    gate_named = {run: claim_runs.RUN_NAME.format(scheme=run[1], variant=run[0]) for run in claim_runs.configured(spec)}
    if claim.gate == "some run fits":
        criterion += (f" If no run's mean reaches {FITS:g} at length {runs.in_training()} (the longest evaluated "
                      "within the training lengths), nothing was learned: undecided.")
    why = judged.nothing(claim)
    if why:
        return Finding(claim.name, text, criterion, f"nothing judged: {why}.", undecided(f"no results: {why}"))
    empty = claim_runs.empty_side(claim, spec, specs)
    if empty:
        return Finding(claim.name, text, criterion, "nothing to compare.",
                       undecided(f"no results: the config trains no {empty} to compare"))
    prefix = ""
    if claim.gate == "some run fits":
        prefix, fits = some_run_fits(runs, gate_named)
        if not fits:
            return Finding(claim.name, text, criterion, f"{prefix} No run fits the training lengths.",
                           undecided("nothing learned at the training length"))
        prefix += " "
    made, missing = [], []
    by_config = {config: scope(claim, side.spec, side.rows).runs for config, side in (sides or {}).items()}
    for length in judged.lengths:
        tests = Comparisons(runs, by_config)
        for pair in planned:
            tests.add(pair, length)
        made += tests.made
        missing += tests.missing
    if claim.correction == "holm":
        made = significance.sharpened_all(made)
        verdict = verdicts.comparisons_verdict(made, missing)
    else:
        family: dict[str, list[significance.Comparison]] = {}
        for test in made:
            family.setdefault(f"{test.better} vs {test.worse}", []).append(test)
        family = significance.sharpened_across(family)
        made = [test for tests in family.values() for test in tests]
        verdict = verdicts.verdict_across(family, missing)
    shown = shown_beyond(claim, spec, runs) if claim.shown else ""
    return Finding(claim.name, text, criterion, prefix + numbers(made, missing) + shown, verdict, tuple(made))


def shown_beyond(claim: Claim, spec: dict, runs: TaskResults) -> str:
    """Each compared run's mean (and seeds' range) at the claim's ``shown`` length: shown, not judged."""
    length = runs.beyond(claim.shown)
    if length is None:
        return f" {claim.shown:g}x: not evaluated."
    values = ", ".join(f"{cell.name} "
                       f"{stat if (stat := runs.at(cell.variant, cell.scheme, length)) is not None else 'no results'}"
                       for cell in claim_runs.shown(claim, spec))
    return f" Shown, not judged: length {length} ({claim.shown:g}x): {values}."
