"""The paper's four findings, each judged by a stated test from the figure it is drawn in: the
figure's spec (:data:`FINDING_FIGURE` names each finding's figure) and the run-summary rows of the tables
the figure is drawn from (:mod:`.run_summary`). Each figure's caption states its finding so
(:func:`caption`); ``lengthgen findings`` judges all four
(:mod:`pipeline_src.runs.run_findings`; the README's section "The paper's findings";
docs/findings.md).

F1 to F3 read each run's headline metric seed by seed through :class:`.seed_summary.TaskResults`
and make the comparisons their claim implies, each a one-sided test over seeds
(:mod:`.significance`): different models compared as two groups of seeds, one model's two cells
(two k_test of one K_train) seed by seed. A finding is ``reproduced`` when every comparison is
significant in the claimed direction, ``contradicted`` when one is significant the other way (after
Holm's correction over the finding's comparisons), else ``undecided`` with the reason: the seeds per
run that would decide at the measured spread, a difference the wrong way round, nothing learned at
the training length (F3), or a run with no results. Lengths come from the figure spec: the
training length is the longest of the task's training range, "1.5x" (or "2x") the shortest
evaluated length at least 1.5 (2) times it.

F4 compares the median fraction of the long-context gain recovered by the target's own far tokens
with that recovered by another document's, chosen alike
(:func:`pipeline_src.language.influence_summary.recovered_gain`, as Figure 4 draws them): its unit
is the target, and its test the two bootstrap intervals. F4'
(beside it, as F1' beside F1) pairs the two per target: each gaining target's own fraction minus the
other document's, one-sided Wilcoxon signed-rank tests (:func:`.significance.signed_rank`).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import polars as pl

from ..schemes import get_scheme
from . import f1_range
from . import run_summary
from . import significance
from .fit_gate import FITS
from .seed_summary import SeedStat, TaskResults

REPRODUCED, CONTRADICTED, UNDECIDED = significance.REPRODUCED, significance.CONTRADICTED, significance.UNDECIDED
COLUMNS = ("finding", "claim", "criterion", "numbers", "verdict")
SCRATCHPAD = "scratchpad"  # the variant whose response works step by step
F1_SCHEME = "rope_pose"  # the paper's Figure 1 trains RoPE with PoSE
BEYOND, ALSO_SHOWN = 1.5, 2.0  # F2 and F3 judge at 1.5x the training length, and show 2x
ACROSS = (2.0, 8.0)  # F1' judges every evaluated length from 2x to 8x the training length
# F1' judges seeds from this one on: F1's verdicts before it was written saw seeds 0 to 4 on CPUs
# and 0 to 7 on a GPU (docs/findings.md, "Criteria written before their runs")
F1_FRESH_FROM = 8
TESTED = (f" Each comparison: a one-sided permutation test over seeds at alpha {significance.ALPHA:g}; reproduced "
          "when every comparison is significant, contradicted when one is significant the other way after Holm's "
          "correction, else undecided.")
CLAIMS = {  # each finding's claim, in a few words ({task}: the task it is judged on)
    "F1": ("{task}, RoPE + PoSE: the fewer relevant bits (k_test), the further a model generalizes in length; a "
           "larger K_train extends this to larger k_test"),
    "F1'": ("{task}, RoPE + PoSE, judged across lengths on fresh seeds: the fewer relevant bits (k_test), the "
            "further a model generalizes in length; a larger K_train extends this to larger k_test"),
    "F1r": ("{task}, RoPE + PoSE, across the paper's range (K_train 4 to 12, k_test 4 to 16) on fresh seeds: "
            "accuracy falls with k_test; a larger K_train carries it to larger k_test"),
    "F2": ("{task} with a scratchpad: position coupling, and PPC without oracle IDs, generalize beyond the training "
           "length; RoPE, PoSE, absolute and no positions do not"),
    "F3": ("{task}: PPC with a scratchpad generalizes in length; a random absolute shift with a scratchpad and "
           "RoPE + PoSE with or without a scratchpad do not (the paper's panels a to d)"),
    "F4": "in real text, a few far tokens recover most of what the whole far context gives a prediction",
    "F4'": ("in real text, judged target by target against another document's far tokens: a few far tokens "
            "recover most of what the whole far context gives a prediction"),
}
FINDING_FIGURE = {"F1": "figure1", "F1'": "figure1", "F1r": "figure1", "F2": "figure2", "F3": "figure3", "F4": "figure4",
                  "F4'": "figure4"}  # the figure each is drawn in (the first of a figure states it in its caption)
NOT_CONFIGURED_CRITERION = "-"  # the criterion column of a finding the config runs nothing for
NOT_CONFIGURED = {  # why a finding has no results when its figure's spec does not run what it compares
    "F1": f"the config trains no {F1_SCHEME} model of {{task}}",
    "F1'": f"the config trains no {F1_SCHEME} model of {{task}}",
    "F1r": f"the config trains no {F1_SCHEME} model of {{task}}",
    "F2": f"the config trains no {{task}} model with a {SCRATCHPAD}",
    "F3": "the config trains no {task} model",
    "F4": "the config runs no natural-language analysis",
    "F4'": "the config runs no natural-language analysis",
}


@dataclass(frozen=True)
class Finding:
    """One row of the findings table, with the comparisons it was judged by (none for F4)."""

    finding: str
    claim: str
    criterion: str
    numbers: str
    verdict: str
    comparisons: tuple[significance.Comparison, ...] = field(default=(), compare=False)


def claim(name: str, task: str = "") -> str:
    return CLAIMS[name].format(task=task)


def undecided(why: str) -> str:
    return f"{UNDECIDED}: {why}"


def not_configured(name: str, task: str = "") -> Finding:
    """The row of a finding the config runs nothing for (``task``: the task of its figure)."""
    why = NOT_CONFIGURED[name].format(task=task)
    return Finding(name, claim(name, task), NOT_CONFIGURED_CRITERION, why, undecided(f"no results: {why}"))


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run's cell, called ``name``."""

    name: str
    variant: str
    scheme: str
    length: int | None
    k: int | None = None


class Comparisons:
    """The comparisons of one finding, made on ``runs`` as the criterion asks for them."""

    def __init__(self, runs: TaskResults) -> None:
        self.runs = runs
        self.made: list[significance.Comparison] = []
        self.missing: list[str] = []

    def add(self, better: Side, worse: Side, cell: str, *, paired: bool = False) -> None:
        """Test ``better`` above ``worse`` at ``cell`` (``paired``: the same models, seed by seed)."""
        a, b = (self.runs.per_seed(side.variant, side.scheme, side.length, side.k) for side in (better, worse))
        if paired:
            seeds = sorted(set(a) & set(b))
            a, b = {seed: a[seed] for seed in seeds}, {seed: b[seed] for seed in seeds}
        absent = [side.name for side, values in ((better, a), (worse, b)) if not values]
        if absent:
            self.missing.append(f"{absent[0]} at {cell}")
            return
        self.made.append(significance.compare(better.name, worse.name, cell, list(a.values()), list(b.values()),
                                              paired=paired))

    def numbers(self) -> str:
        shown = [str(c) for c in self.made] + [f"{missing}: no results" for missing in self.missing]
        return "; ".join(shown) + "." if shown else "nothing to compare."

    def verdict(self) -> str:
        return significance.verdict(self.made, self.missing)


def sparse_parity_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F1: at the longest evaluated length, (a) every K_train's model is more accurate at the
    smallest k_test than at the largest k_test it was trained on, and (b) a larger K_train's model
    is more accurate than the smaller's at the largest k_test only the larger was trained on."""
    task = spec["task"]
    if not any(F1_SCHEME in schemes for schemes in spec["runs"].values()):
        return not_configured("F1", task)
    runs = TaskResults(spec, rows)
    longest = runs.lengths[-1]
    criterion = (f"accuracy ({runs.metric(next(iter(spec['runs'])))}) of {F1_SCHEME} at length {longest} (the "
                 f"longest evaluated). {F1_COMPARISONS}" + TESTED)
    tests = Comparisons(runs)
    sparse_parity_comparisons(spec, tests, longest)
    return Finding("F1", claim("F1", task), criterion, tests.numbers(), tests.verdict(), tuple(tests.made))


F1_COMPARISONS = ("(a) For every K_train, its models at the smallest k_test above themselves at the largest k_test "
                  "<= K_train (seed by seed). (b) For each pair of neighbouring K_train, at the largest k_test "
                  "between them (smaller K_train < k_test <= larger K_train), the larger K_train's models above the "
                  "smaller's.")


def sparse_parity_comparisons(spec: dict, tests: Comparisons, length: int) -> None:
    """F1's comparisons (a) and (b) at ``length``, added to ``tests``."""
    k_train = sorted(((variant, tests.runs.task.layout.params(variant)["k_train"])
                      for variant, schemes in spec["runs"].items() if F1_SCHEME in schemes), key=lambda item: item[1])
    k_test = sorted(spec["k_test"])
    cell = f"length {length}"
    for variant, K in k_train:
        trained = [k for k in k_test if k <= K]
        if len(trained) >= 2:
            low, high = trained[0], trained[-1]
            tests.add(Side(f"K_train {K} k_test {low}", variant, F1_SCHEME, length, low),
                      Side(f"k_test {high}", variant, F1_SCHEME, length, high), cell, paired=True)
    for (low_variant, low_k), (high_variant, high_k) in pairwise(k_train):
        between = [k for k in k_test if low_k < k <= high_k]
        if between:
            tests.add(Side(f"K_train {high_k}", high_variant, F1_SCHEME, length, between[-1]),
                      Side(f"K_train {low_k}", low_variant, F1_SCHEME, length, between[-1]),
                      f"{cell}, k_test {between[-1]}")


def sparse_parity_across_lengths(spec: dict, rows: pl.DataFrame) -> Finding:
    """F1' (written 2026-11-28, before any run judged it): F1's comparisons at every evaluated length
    from :data:`ACROSS` times the training length, each holding where it holds at some length after
    Holm's correction over the lengths (:func:`.significance.verdict_across`); judged only on the
    seeds no earlier F1 verdict had seen (:data:`F1_FRESH_FROM` on)."""
    task = spec["task"]
    if not any(F1_SCHEME in schemes for schemes in spec["runs"].values()):
        return not_configured("F1'", task)
    fresh = [seed for seed in spec["seeds"] if seed >= F1_FRESH_FROM]
    runs = TaskResults({**spec, "seeds": fresh}, rows)
    low, high = (factor * runs.train_max for factor in ACROSS)
    lengths = [length for length in runs.lengths if low <= length <= high]
    criterion = (f"accuracy ({runs.metric(next(iter(spec['runs'])))}) of {F1_SCHEME} at each evaluated length from "
                 f"{low:g} to {high:g} ({ACROSS[0]:g}x to {ACROSS[1]:g}x the training length {runs.train_max}: "
                 f"{', '.join(map(str, lengths)) or 'none evaluated'}), on seeds {F1_FRESH_FROM} and up only (those no "
                 f"F1 verdict saw before this criterion was written). {F1_COMPARISONS} A comparison holds when its "
                 "one-sided permutation p at some judged length is at most 0.05 / (lengths judged); reproduced when "
                 "every comparison holds, contradicted when one is significant the other way after Holm's correction "
                 "over every comparison at every length, else undecided.")
    if not fresh or not lengths:
        why = (f"no seed from {F1_FRESH_FROM} on (seeds 0 to {F1_FRESH_FROM - 1} were seen by earlier F1 verdicts)"
               if not fresh else "no evaluated length in the judged range")
        return Finding("F1'", claim("F1'", task), criterion, f"nothing judged: {why}.", undecided(f"no results: {why}"))
    family: dict[str, list[significance.Comparison]] = {}
    missing = []
    for length in lengths:
        tests = Comparisons(runs)
        sparse_parity_comparisons(spec, tests, length)
        for test in tests.made:
            family.setdefault(f"{test.better} vs {test.worse}", []).append(test)
        missing += tests.missing
    numbers = "; ".join(str(test) for tests in family.values() for test in tests)
    numbers = "; ".join([numbers] * bool(numbers) + [f"{absent}: no results" for absent in missing]) + "."
    return Finding("F1'", claim("F1'", task), criterion, numbers, significance.verdict_across(family, missing),
                   tuple(test for tests in family.values() for test in tests))


def sparse_parity_range(spec: dict, rows: pl.DataFrame) -> Finding:
    """F1r (written 2026-11-28, before any model it judges was trained): trends over k_test and
    K_train across the paper's range (:mod:`.f1_range`)."""
    from . import f1_range

    if not any(F1_SCHEME in schemes for schemes in spec["runs"].values()):
        return not_configured("F1r", spec["task"])
    criterion, numbers, verdict = f1_range.judge(spec, rows, F1_SCHEME, ACROSS)
    return Finding("F1r", claim("F1r", spec["task"]), criterion, numbers, verdict)


def run_name(variant: str, scheme: str) -> str:
    return f"{scheme} ({variant})"


def compared(name: str, stat: SeedStat | None) -> str:
    return f"{name} {stat if stat is not None else 'no results'}"


def beyond_length(runs: TaskResults) -> tuple[int | None, str]:
    """The length F2 and F3 judge at (1.5x the training length) and how the comparisons name it."""
    length = runs.beyond(BEYOND)
    return length, f"length {length}"


def shown_at_2x(runs: TaskResults, shown: list[tuple[str, str]], name=run_name) -> str:
    """Each run's mean (and seeds' range) at 2x the training length: shown, not judged."""
    length = runs.beyond(ALSO_SHOWN)
    if length is None:
        return f" {ALSO_SHOWN:g}x: not evaluated."
    values = ", ".join(compared(name(*run), runs.at(*run, length)) for run in shown)
    return f" Shown, not judged: length {length} ({ALSO_SHOWN:g}x): {values}."


def parity_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F2: with a scratchpad, every coupled scheme (coupling, PPC) is above every other scheme at
    1.5x the training length."""
    task = spec["task"]
    if SCRATCHPAD not in spec["runs"]:
        return not_configured("F2", task)
    runs = TaskResults(spec, rows)
    schemes = spec["runs"][SCRATCHPAD]
    coupled = [s for s in schemes if get_scheme(s).coupled]
    others = [s for s in schemes if not get_scheme(s).coupled]
    length, cell = beyond_length(runs)
    criterion = (f"accuracy ({runs.metric(SCRATCHPAD)}) at length {length} (the first evaluated length >= "
                 f"{BEYOND:g}x the training length {runs.train_max}): each coupled scheme "
                 f"({', '.join(coupled) or 'none configured'}) above every other scheme "
                 f"({', '.join(others) or 'none configured'})." + TESTED)
    if not coupled or not others:
        return Finding("F2", claim("F2", task), criterion, "nothing to compare.",
                       undecided("no results: the config trains no coupled and uncoupled schemes to compare"))
    tests = Comparisons(runs)
    for mine in coupled:
        for theirs in others:
            tests.add(Side(mine, SCRATCHPAD, mine, length), Side(theirs, SCRATCHPAD, theirs, length), cell)
    shown = [(SCRATCHPAD, s) for s in coupled + others]
    numbers = tests.numbers() + shown_at_2x(runs, shown, name=lambda _, scheme: scheme)
    return Finding("F2", claim("F2", task), criterion, numbers, tests.verdict(), tuple(tests.made))


def assignment_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F3: PPC with a scratchpad is above every non-coupled run at 1.5x the training length (the
    paper's panels: a random absolute shift with a scratchpad, RoPE + PoSE with and without)."""
    task = spec["task"]
    runs = TaskResults(spec, rows)
    configured = [(variant, scheme) for variant, schemes in spec["runs"].items() for scheme in schemes]
    predicting = [run for run in configured if run[0] == SCRATCHPAD and get_scheme(run[1]).predicts_positions]
    baselines = [run for run in configured if not get_scheme(run[1]).coupled]
    fit_length = runs.in_training()
    length, cell = beyond_length(runs)
    criterion = (f"accuracy ({runs.metric(SCRATCHPAD)} with a scratchpad, {runs.metric('direct')} without)"
                 f" at length {length} (the first evaluated length >= {BEYOND:g}x the training length "
                 f"{runs.train_max}): PPC with a scratchpad "
                 f"({', '.join(run_name(*run) for run in predicting) or 'none configured'}) above every "
                 f"non-coupled run ({', '.join(run_name(*run) for run in baselines) or 'none configured'})."
                 + TESTED + f" If no run's mean reaches {FITS:g} at length {fit_length} (the longest evaluated "
                 "within the training lengths), nothing was learned: undecided.")
    fit = {run: runs.at(*run, fit_length) for run in configured}
    in_training = ", ".join(compared(run_name(*run), stat) for run, stat in fit.items())
    trained = f"Length {fit_length} (training): {in_training}."
    scored = [stat for stat in fit.values() if stat is not None]
    if scored and all(stat.mean < FITS for stat in scored):
        return Finding("F3", claim("F3", task), criterion, f"{trained} No run fits the training lengths.",
                       undecided("nothing learned at the training length"))
    tests = Comparisons(runs)
    for run in predicting:
        for baseline in baselines:
            tests.add(Side(run_name(*run), *run, length), Side(run_name(*baseline), *baseline, length), cell)
    numbers = f"{trained} {tests.numbers()}" + shown_at_2x(runs, predicting + baselines)
    return Finding("F3", claim("F3", task), criterion, numbers, tests.verdict(), tuple(tests.made))


def language_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F4: the fraction of the long-context gain recovered at k from the target's own far tokens,
    against the same from another document's far tokens chosen alike (the selection's null)."""
    k = run_summary.f4_k(spec)
    criterion = (f"median fraction of the gain L_short - L_long recovered by k = {k} far tokens, over targets "
                 f"gaining more than {spec['gain_threshold']:g} nats, with its 95% bootstrap interval: the "
                 "target's own far tokens' lower bound above the upper bound of another document's far tokens, "
                 "chosen the same way: reproduced; the reverse: contradicted; overlapping: undecided.")
    analysed = run_summary.targets(rows)
    if analysed is None:
        return Finding("F4", claim("F4"), criterion, "no influence table", undecided("no results: no influence table"))
    own, other = (run_summary.gain(rows, variant, k) for variant in (run_summary.OWN, run_summary.OTHER))
    if not own or not other:
        return Finding("F4", claim("F4"), criterion, f"no numbers at k = {k}",
                       undecided(f"no results: no numbers at k = {k}"))
    targets = f"{own['n_targets']:.0f} of {analysed} targets gain more than {spec['gain_threshold']:g} nats"
    if own["n_targets"] == 0:
        return Finding("F4", claim("F4"), criterion, f"{targets}: nothing to recover",
                       undecided("no target gains from its far context"))
    numbers = f"{targets}; at k = {k}: own far tokens {interval(own)}, another document's {interval(other)}"
    if own["ci_low"] > other["ci_high"]:
        found = REPRODUCED
    elif own["ci_high"] < other["ci_low"]:
        found = CONTRADICTED
    else:
        found = undecided(f"the two intervals overlap ({own['n_targets']:.0f} targets); "
                          + targets_needed(own, other, analysed))
    return Finding("F4", claim("F4"), criterion, numbers, found)


NO_PER_TARGET = "the summary holds no per-target fractions (made before F4')"


def language_paired_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F4' (written 2026-11-28, before any run judged it): per target gaining more than the gain
    threshold (L_short - L_long, which involves no selection), its own far tokens' recovered fraction
    minus another document's at F4's k; one-sided Wilcoxon signed-rank tests over those targets."""
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
    analysed = run_summary.targets(rows)
    if analysed is None:
        return Finding("F4'", claim("F4'"), criterion, "no influence table",
                       undecided("no results: no influence table"))
    own_gain = run_summary.gain(rows, run_summary.OWN, k)
    if not own_gain:
        return Finding("F4'", claim("F4'"), criterion, f"no numbers at k = {k}",
                       undecided(f"no results: no numbers at k = {k}"))
    gaining = int(own_gain["n_targets"])
    targets = f"{gaining} of {analysed} targets gain more than {threshold:g} nats"
    if gaining == 0:
        return Finding("F4'", claim("F4'"), criterion, f"{targets}: nothing to recover",
                       undecided("no target gains from its far context"))
    pairs = run_summary.paired(rows, k)
    if pairs.height == 0:
        return Finding("F4'", claim("F4'"), criterion,
                       f"{targets}; no per-target fractions at k = {k} (a summary made before F4')",
                       undecided(f"no results: {NO_PER_TARGET}"))
    if pairs.height != gaining:
        raise run_summary.SummaryError(f"Figure 4's rows hold {pairs.height} targets' fractions at k = {k} for "
                                       f"{gaining} gaining targets; export the summary again")
    own, other = pairs[run_summary.OWN].to_numpy(), pairs[run_summary.OTHER].to_numpy()
    test = significance.signed_rank(own, other)
    median, low, high = paired_difference(own, other, n_boot=spec["n_boot"], seed=spec["seed"])
    spread = f"SD {test.sd:.2f}" if test.sd is not None else "no SD"
    numbers = (f"{targets}; at k = {k}, own minus another document's fraction per target: median {median:+.2f} "
               f"[{low:+.2f}, {high:+.2f}] (95% bootstrap), mean {test.mean:+.2f} ({spread}), own above on "
               f"{test.positive} of {test.n}; signed-rank p = {test.p:.3g} (own above), {test.p_reverse:.3g} "
               "(other above)")
    if test.p <= significance.ALPHA:
        found = f"{REPRODUCED}: own far tokens above another document's, signed-rank p = {test.p:.3g} ({gaining} targets)"
    elif test.p_reverse <= significance.ALPHA:
        found = (f"{CONTRADICTED}: another document's far tokens above the own, signed-rank p = {test.p_reverse:.3g} "
                 f"({gaining} targets)")
    else:
        found = undecided(f"not significant (p = {test.p:.3g} own above, {test.p_reverse:.3g} other above, "
                          f"{gaining} targets); " + paired_targets_needed(own - other, analysed))
    return Finding("F4'", claim("F4'"), criterion, numbers, found)


def paired_targets_needed(differences, analysed: int) -> str:
    """How many targets to analyse for F4''s signed-rank test to decide at the measured paired spread,
    whichever way the mean difference lies (:func:`.significance.pairs_needed_signed_rank`: gaining
    targets), scaled to analysed targets at the measured rate of gaining ones."""
    gaining, mean = len(differences), float(differences.mean())
    if mean == 0:
        return "the mean paired difference is zero: no number of targets would decide"
    needed = significance.pairs_needed_signed_rank(differences if mean > 0 else -differences)
    if needed is None:
        return "one gaining target measures no paired spread to plan with"
    way = "" if mean > 0 else ", the other way (own below another document's: a contradiction)"
    if needed <= gaining:
        return (f"the measured paired spread plans {needed} gaining targets, {gaining} were tested: more targets "
                f"would decide{way}")
    return (f"about {math.ceil(needed * analysed / gaining):,} analysed targets would decide{way} at the measured "
            f"paired spread ({analysed} now)")


def targets_needed(own: dict, other: dict, analysed: int) -> str:
    """How many targets to analyse for F4's two intervals to part at the measured spread, whichever
    way the medians lie: an interval's half-width shrinks as 1 / sqrt(targets gaining), so they part
    at about n (w_own + w_other)^2 / (median_own - median_other)^2 targets gaining, and the analysed
    ones gain at the measured rate. With the own far tokens' median below the other document's, the
    intervals would part the other way (a contradiction), and the answer says so."""
    difference = own["median"] - other["median"]
    if difference == 0:
        return "the two medians are equal: no number of targets would part them"
    half_widths = (own["ci_high"] - own["ci_low"]) / 2 + (other["ci_high"] - other["ci_low"]) / 2
    gaining = own["n_targets"] * (half_widths / difference) ** 2
    needed = math.ceil(gaining * analysed / own["n_targets"])
    way = "" if difference > 0 else ", the other way (the own far tokens' median is below the other document's)"
    return f"about {needed:,} analysed targets would part them at the measured spread{way} ({analysed} now)"


def interval(row: dict) -> str:
    return f"{row['median']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


JUDGES = {"F1": sparse_parity_finding, "F1'": sparse_parity_across_lengths, "F1r": sparse_parity_range,
          "F2": parity_finding, "F3": assignment_finding, "F4": language_finding, "F4'": language_paired_finding}


def judge(name: str, spec: dict | None, rows: pl.DataFrame, task: str = "") -> Finding:
    """Finding ``name`` judged from its figure's spec ``spec`` (None: the config does not draw the
    figure, whose task is ``task``) and run-summary ``rows``."""
    return not_configured(name, task) if spec is None else JUDGES[name](spec, rows)


def caption(figure: str, spec: dict, inputs: list[Path]) -> str:
    """The paragraph of ``figure``'s caption stating its finding, judged from the figure's spec and
    the tables it is drawn from (``inputs``); "" for a figure that shows no finding."""
    name = next((name for name, drawn_in in FINDING_FIGURE.items() if drawn_in == figure), None)
    if name is None:
        return ""
    row = judge(name, spec, run_summary.figure_rows(spec, inputs))
    return (f"**{row.finding}: {row.verdict}** (the paper: {row.claim}), judged from this figure's tables. "
            f"Criterion: {row.criterion} Compared: {row.numbers.rstrip('.')}.")


def as_markdown(rows: list[Finding], columns: tuple[str, ...] = COLUMNS) -> str:
    """The findings as a Markdown table of ``columns``, one row per finding (no trailing newline)."""
    from .tables import markdown

    frame = pl.DataFrame([[getattr(row, column) for column in columns] for row in rows], schema=list(columns),
                         orient="row")
    return markdown(frame)


def as_text(rows: list[Finding], width: int = 100) -> str:
    """The findings for a terminal: per finding its verdict, then claim, criterion and numbers (each
    comparison on a line of its own), wrapped."""
    lines = []
    for row in rows:
        lines.append(f"{row.finding}: {row.verdict}")
        for label in COLUMNS[1:3]:
            lines += textwrap.wrap(getattr(row, label), width, initial_indent=f"  {label:<10} ",
                                   subsequent_indent=" " * 13)
        for i, part in enumerate(row.numbers.split("; ")):
            lines += textwrap.wrap(part, width, initial_indent=f"  {'numbers' if i == 0 else '':<10} ",
                                   subsequent_indent=" " * 15)
    return "\n".join(lines)


def as_rst(rows: list[Finding]) -> list[str]:
    """The findings as reStructuredText lines for the report's landing page: per finding its verdict
    and claim, then each comparison (or the numbers compared) as a bullet."""
    lines = []
    for row in rows:
        lines += [f"- **{row.finding}: {row.verdict}** (the paper: {row.claim})", ""]
        lines += [f"  - {part.rstrip('.')}" for part in row.numbers.split("; ")] + [""]
    return lines
