"""A claim over targets (Figure 4's): the fraction of the long-context gain recovered at F4's k
(:func:`.run_summary.f4_k`) from the target's own far tokens (side ``own``) against that from another
document's far tokens, chosen alike (``other``: the selection's null).

``intervals``: the two medians over the targets gaining more than the gain threshold, each with its 95%
bootstrap interval (:func:`pipeline_src.language.influence_summary.recovered_gain`, as Figure 4 draws them):
the better side's lower bound above the worse side's upper bound reproduces, the reverse contradicts,
overlapping intervals leave it undecided. ``signed-rank``: the two paired per target, one-sided Wilcoxon
signed-rank tests of each gaining target's own fraction minus the other's (:func:`.significance.signed_rank`).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from . import run_summary, significance, summary_parts, verdicts
from .claim_file import Claim
from .finding import Finding, undecided

REPRODUCED, CONTRADICTED = verdicts.REPRODUCED, verdicts.CONTRADICTED
NO_PER_TARGET = "the summary holds no per-target fractions (made before F4')"


def finding_over_targets(claim: Claim, spec: dict, rows: pl.DataFrame) -> Finding:
    """``claim`` judged from Figure 4's spec ``spec`` and the run-summary ``rows``."""
    return (intervals if claim.compare[0].test == "intervals" else signed_rank)(claim, spec, rows)


def gaining(claim: Claim, rows: pl.DataFrame, k: int, threshold: float,
            criterion: str) -> tuple[Finding | None, int, str]:
    """The row of a claim with nothing to test (no influence table, no numbers at ``k``, no gaining
    target), else None, with the targets analysed and a sentence of those gaining."""
    def stop(numbers: str, why: str) -> tuple[Finding, int, str]:
        return Finding(claim.name, claim.claim(), criterion, numbers, undecided(why)), 0, ""

    partly = summary_parts.withheld(rows)
    if partly is not None:  # a draw in parts is judged whole or not at all
        return stop(partly, f"no results: {partly}")
    analysed = run_summary.targets(rows)
    if analysed is None:
        return stop("no influence table", "no results: no influence table")
    own = run_summary.gain(rows, claim.compare[0].better.variant, k)
    other = run_summary.gain(rows, claim.compare[0].worse.variant, k)
    if not own or not other:
        return stop(f"no numbers at k = {k}", f"no results: no numbers at k = {k}")
    targets = f"{own['n_targets']:.0f} of {analysed} targets gain more than {threshold:g} nats"
    if own["n_targets"] == 0:
        return stop(f"{targets}: nothing to recover", "no target gains from its far context")
    return None, analysed, targets


def intervals(claim: Claim, spec: dict, rows: pl.DataFrame) -> Finding:
    """Two medians with their bootstrap intervals: do they part, and which way?"""
    k, rule = run_summary.f4_k(spec), claim.compare[0]
    criterion = (f"median fraction of the gain L_short - L_long recovered by k = {k} far tokens, over targets "
                 f"gaining more than {spec['gain_threshold']:g} nats, with its 95% bootstrap interval: the "
                 "target's own far tokens' lower bound above the upper bound of another document's far tokens, "
                 "chosen the same way: reproduced; the reverse: contradicted; overlapping: undecided.")
    stopped, analysed, targets = gaining(claim, rows, k, spec["gain_threshold"], criterion)
    if stopped:
        return stopped
    own, other = (run_summary.gain(rows, side.variant, k) for side in (rule.better, rule.worse))
    numbers = (f"{targets}; at k = {k}: {rule.better.name} {interval(own)}, {rule.worse.name} {interval(other)}")
    found = intervals_word((own["ci_low"], own["ci_high"]), (other["ci_low"], other["ci_high"]))
    if found is None:
        found = undecided(f"the two intervals overlap ({own['n_targets']:.0f} targets); "
                          + targets_needed(own, other, analysed))
    return Finding(claim.name, claim.claim(), criterion, numbers, found)


def intervals_word(own: tuple[float, float], other: tuple[float, float]) -> str | None:
    """The verdict of two intervals (low, high): the own above the other's reproduces, below contradicts
    (None: they overlap)."""
    return REPRODUCED if own[0] > other[1] else CONTRADICTED if own[1] < other[0] else None


def signed_rank_word(test: significance.SignedRank) -> str | None:
    """The verdict of the paired test: own above at ALPHA reproduces, other above contradicts (None: neither)."""
    return (REPRODUCED if test.p <= significance.ALPHA else CONTRADICTED if test.p_reverse <= significance.ALPHA
            else None)


def signed_rank_word_of(own, other) -> str | None:
    """:func:`signed_rank_word` of the paired test of ``own`` against ``other``."""
    return signed_rank_words(np.atleast_2d(own), np.atleast_2d(other))[0]


def signed_rank_words(own: np.ndarray, other: np.ndarray) -> list[str | None]:
    """:func:`signed_rank_word` of each row of ``own`` against the same row of ``other`` (resamples of the
    targets), the reverse test made only where the word depends on it (own above at ALPHA reproduces
    whatever the reverse p)."""
    alpha = significance.ALPHA
    words: list[str | None] = [REPRODUCED if p <= alpha else None
                               for p in significance.signed_rank_ps(own, other, "greater")]
    rest = [row for row, word in enumerate(words) if word is None]
    if rest:
        for row, p in zip(rest, significance.signed_rank_ps(own[rest], other[rest], "less"), strict=True):
            words[row] = CONTRADICTED if p <= alpha else None
    return words


def signed_rank(claim: Claim, spec: dict, rows: pl.DataFrame) -> Finding:
    """Per gaining target (the gain L_short - L_long involves no selection) its own fraction minus another
    document's; one-sided Wilcoxon signed-rank tests over those targets."""
    from ..language.influence_summary import paired_difference

    k, threshold = run_summary.f4_k(spec), spec["gain_threshold"]
    criterion = (f"per target gaining more than {threshold:g} nats from its far context (the gain L_short - "
                 f"L_long, which involves no selection of tokens), the fraction of that gain recovered by k = {k} "
                 "of its own far tokens minus that recovered by as many of another document's far tokens, chosen "
                 "the same way; a one-sided Wilcoxon signed-rank test over those targets (scipy's wilcoxon, own "
                 "above other), with the median difference's 95% bootstrap interval: reproduced when p <= "
                 f"{significance.ALPHA:g}; contradicted when the reverse one-sided p <= {significance.ALPHA:g}; "
                 "else undecided, with the analysed targets that would decide at the measured paired spread "
                 "(paired t test power "
                 f"{significance.POWER:g} at alpha {significance.ALPHA:g}, over the signed-rank test's asymptotic "
                 "relative efficiency 3/pi, targets gaining at the measured rate).")
    stopped, analysed, targets = gaining(claim, rows, k, threshold, criterion)
    if stopped:
        return stopped
    gaining_ = int(run_summary.gain(rows, claim.compare[0].better.variant, k)["n_targets"])
    pairs = run_summary.paired(rows, k)
    if pairs.height == 0:
        return Finding(claim.name, claim.claim(), criterion,
                       f"{targets}; no per-target fractions at k = {k} (a summary made before F4')",
                       undecided(f"no results: {NO_PER_TARGET}"))
    if pairs.height != gaining_:
        raise run_summary.SummaryError(f"Figure 4's rows hold {pairs.height} targets' fractions at k = {k} for "
                                       f"{gaining_} gaining targets; export the summary again")
    own, other = pairs[run_summary.OWN].to_numpy(), pairs[run_summary.OTHER].to_numpy()
    test = significance.signed_rank(own, other)
    median, low, high = paired_difference(own, other, n_boot=spec["n_boot"], seed=spec["seed"])
    spread = f"SD {test.sd:.2f}" if test.sd is not None else "no SD"
    numbers = (f"{targets}; at k = {k}, own minus another document's fraction per target: median {median:+.2f} "
               f"[{low:+.2f}, {high:+.2f}] (95% bootstrap), mean {test.mean:+.2f} ({spread}), own above on "
               f"{test.positive} of {test.n}; signed-rank p = {test.p:.3g} (own above), {test.p_reverse:.3g} "
               "(other above)")
    word = signed_rank_word(test)
    if word == REPRODUCED:
        found = (f"{REPRODUCED}: own far tokens above another document's, signed-rank p = {test.p:.3g} "
                 f"({gaining_} targets)")
    elif word == CONTRADICTED:
        found = (f"{CONTRADICTED}: another document's far tokens above the own, signed-rank p = {test.p_reverse:.3g} "
                 f"({gaining_} targets)")
    else:
        found = undecided(f"not significant (p = {test.p:.3g} own above, {test.p_reverse:.3g} other above, "
                          f"{gaining_} targets); " + paired_targets_needed(own - other, analysed))
    return Finding(claim.name, claim.claim(), criterion, numbers, found)


def paired_targets_needed(differences, analysed: int) -> str:
    """How many targets to analyse for the signed-rank test to decide at the measured paired spread,
    whichever way the mean difference lies (:func:`.significance.pairs_needed_signed_rank`: gaining
    targets), scaled to analysed targets at the measured rate of gaining ones."""
    gaining_, mean = len(differences), float(differences.mean())
    if mean == 0:
        return "the mean paired difference is zero: no number of targets would decide"
    needed = significance.pairs_needed_signed_rank(differences if mean > 0 else -differences)
    if needed is None:
        return "one gaining target measures no paired spread to plan with"
    way = "" if mean > 0 else ", the other way (own below another document's: a contradiction)"
    if needed <= gaining_:
        return (f"the measured paired spread plans {needed} gaining targets, {gaining_} were tested: more targets "
                f"would decide{way}")
    return (f"about {math.ceil(needed * analysed / gaining_):,} analysed targets would decide{way} at the measured "
            f"paired spread ({analysed} now)")


def targets_needed(own: dict, other: dict, analysed: int) -> str:
    """How many targets to analyse for the two intervals to part at the measured spread, whichever way the
    medians lie: an interval's half-width shrinks as 1 / sqrt(targets gaining), so they part at about
    n (w_own + w_other)^2 / (median_own - median_other)^2 targets gaining, and the analysed ones gain at
    the measured rate. With the own far tokens' median below the other document's, the intervals would
    part the other way (a contradiction), and the answer says so."""
    difference = own["median"] - other["median"]
    if difference == 0:
        return "the two medians are equal: no number of targets would part them"
    half_widths = (own["ci_high"] - own["ci_low"]) / 2 + (other["ci_high"] - other["ci_low"]) / 2
    gaining_ = own["n_targets"] * (half_widths / difference) ** 2
    needed = math.ceil(gaining_ * analysed / own["n_targets"])
    way = "" if difference > 0 else ", the other way (the own far tokens' median is below the other document's)"
    return f"about {needed:,} analysed targets would part them at the measured spread{way} ({analysed} now)"


def interval(row: dict) -> str:
    return f"{row['median']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
