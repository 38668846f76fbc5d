"""The verdicts of a finding (``reproduced``, ``contradicted``, ``undecided: <why>``) and the rule that
gives one from the finding's comparisons over seeds, each a test of :mod:`.significance`
(:func:`comparisons_verdict`; :func:`verdict_across` for comparisons that hold at some judged cell).
:func:`.judge.judge` judges every claim; the trends and targets claims word their verdicts with
these words by their own rules (:mod:`.judge_trends`, :mod:`.judge_targets`).
"""

from __future__ import annotations

import numpy as np

from .significance import ALPHA, Comparison, seeds_needed

REPRODUCED, CONTRADICTED, UNDECIDED = "reproduced", "contradicted", "undecided"


def contradicting(comparisons: list[Comparison]) -> Comparison | None:
    """The comparison significant the other way after Holm's correction over ``comparisons``, the
    most significant where several are (None: none is). Holm's step-down rejects some hypothesis
    exactly when its first step does: the smallest p at most :data:`.significance.ALPHA` / m for m comparisons
    (``tests/test_significance.py`` holds this equal to statsmodels' ``multipletests``)."""
    if not comparisons:
        return None
    first = min(comparisons, key=lambda c: c.p_reverse)
    return first if first.p_reverse <= ALPHA / len(comparisons) else None


def contradicted_or_missing(comparisons: list[Comparison], missing: list[str] = ()) -> str | None:
    """The verdict that needs no look at the claimed direction: contradicted (Holm over
    ``comparisons``), no results (``missing``), nothing to compare; None otherwise."""
    against = contradicting(comparisons)
    if against is not None:
        return f"{CONTRADICTED}: {against.better} below {against.worse} at {against.cell}"
    if missing:
        return f"{UNDECIDED}: no results for {missing[0]}"
    if not comparisons:
        return f"{UNDECIDED}: nothing to compare"
    return None


def comparisons_verdict(comparisons: list[Comparison], missing: list[str] = ()) -> str:
    """A finding's verdict from its comparisons (``missing``: those that could not be made, each
    saying why)."""
    settled = contradicted_or_missing(comparisons, missing)
    if settled:
        return settled
    open_ = [c for c in comparisons if not c.significant]
    if not open_:
        return REPRODUCED
    reversed_ = [c for c in open_ if c.difference < 0]
    if reversed_:  # the way to a decision is a contradiction: Holm's first step, at ALPHA / m
        c = max(reversed_, key=lambda c: -c.difference)
        n = seeds_needed(np.asarray(c.b), np.asarray(c.a), c.paired, ALPHA / len(comparisons))
        plan = f"; about {n} seeds per run would show it significant" if n else ""
        return f"{UNDECIDED}: {c.better} below {c.worse} at {c.cell}, not significantly{plan}"
    unplanned = [c for c in open_ if c.needed is None]
    if unplanned:
        c = unplanned[0]
        return f"{UNDECIDED}: {c.better} vs {c.worse} at {c.cell}: {c.why_no_plan()}"
    now, c = max(max(len(c.a), len(c.b)) for c in open_), max(open_, key=lambda c: c.needed)  # the one needing most
    named = f"{c.better} vs {c.worse} at {c.cell}: p = {c.p:.3g}"
    if c.needed > now:
        return (f"{UNDECIDED}: {named}; about {c.needed} seeds per run would decide at the spread of the {now} seeds "
                "per run judged here")
    return (f"{UNDECIDED}: {named}, not significant with {now} seeds per run, though the measured spread plans "
            f"{c.needed}: more seeds would decide")


def verdict_across(family: dict[str, list[Comparison]], missing: list[str] = ()) -> str:
    """The verdict of a finding whose every comparison (``family``: its name -> its tests, one per
    judged cell, e.g. per length) holds where it holds at some cell: its smallest p at most
    :data:`.significance.ALPHA` / m over its m cells (Holm's first step over the cells, all that "at some cell"
    needs). ``reproduced`` when every comparison holds; ``contradicted`` when some test is
    significant the other way after Holm's correction over every test of the family; else
    ``undecided`` with the comparison that does not hold and needs the most seeds to hold at its best cell
    at the measured spread (every open one would then hold), or the first that no number of seeds would
    make hold, and why."""
    settled = contradicted_or_missing([test for tests in family.values() for test in tests], missing)
    if settled:
        return settled
    open_ = []
    for tests in family.values():
        best, level = min(tests, key=lambda c: c.p), ALPHA / len(tests)
        if best.p > level:
            open_.append((best, len(tests), seeds_needed(np.asarray(best.a), np.asarray(best.b), best.paired, level)))
    if not open_:
        return REPRODUCED
    unplanned = [item for item in open_ if item[2] is None]
    best, cells, needed = unplanned[0] if unplanned else max(open_, key=lambda item: item[2])
    seeds = max(len(best.a), len(best.b))
    plan = (f"; about {needed} seeds per run would decide at the spread of the {seeds} seeds per run judged here"
            if needed else f"; no number of seeds decides at the measured spread: {best.why_no_plan()}")
    return (f"{UNDECIDED}: {best.better} vs {best.worse}: smallest p {best.p:.3g} (at {best.cell}), above "
            f"{ALPHA:g} / {cells}{plan}")
