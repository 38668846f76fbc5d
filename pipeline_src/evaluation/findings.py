"""The paper's four findings, each judged by a stated criterion from the figure it is drawn in: the
figure's spec (:data:`FINDING_FIGURE` names each finding's figure) and the run-summary rows of the tables
the figure is drawn from (:mod:`.run_summary`). Each figure's caption states its finding so
(:func:`caption`); ``lengthgen findings`` judges all four (:mod:`.run_findings`; the README's section
"The paper's findings").

F1 to F3 read the accuracy rows of the tasks of the paper's Figures 1 to 3 through
:class:`.seed_summary.TaskResults`: each run's headline metric, its mean over seeds and the seeds'
spread (max minus min). Run A is *above* run B at a cell when A's mean exceeds B's by more than the
larger of the two spreads (one seed each: spread 0, any difference counts). Lengths come from the
figure spec: the training length is the longest of the task's training range, "1.5x" (or "2x") the
shortest evaluated length at least 1.5 (2) times it. F4 compares the median fraction of the
long-context gain recovered by the target's own far tokens with that recovered by another
document's, chosen alike (:func:`.influence_summary.recovered_gain`, as Figure 4 draws them).

A finding's criterion has parts; each holds, fails or cannot be judged (its tables missing, or no
evaluated length where it looks). Verdict: ``reproduced`` (every part holds), ``partly`` (some part
holds), ``not reproduced`` (no part holds, some fails), ``no results`` (no part can be judged); and
``not at this scale`` where the runs cannot decide the claim either way (F3: no run fits its
training lengths; F4: the two intervals overlap).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import polars as pl

from ..schemes import get_scheme
from . import run_summary
from .seed_summary import SeedStat, TaskResults

REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly", "not reproduced"
NOT_AT_THIS_SCALE, NO_RESULTS = "not at this scale", "no results"
COLUMNS = ("finding", "claim", "criterion", "numbers", "verdict")
SCRATCHPAD = "scratchpad"  # the variant whose response works step by step
F1_SCHEME = "rope_pose"  # the paper's Figure 1 trains RoPE with PoSE
BEYOND, ALSO_SHOWN = 1.5, 2.0  # F2 and F3 judge at 1.5x the training length, and show 2x
FITS = 0.9  # a run fits its training lengths: headline metric at least this at the training length
SEEDS_NOTE = " Numbers: mean over seeds, in brackets the seeds' range where they differ."
F4_K = 4  # F4 judges the fraction recovered at this k (or the largest k analysed, if smaller)
CLAIMS = {  # each finding's claim, in a few words ({task}: the task it is judged on)
    "F1": ("{task}, RoPE + PoSE: the fewer relevant bits (k_test), the further a model generalizes in length; a "
           "larger K_train extends this to larger k_test"),
    "F2": ("{task} with a scratchpad: position coupling, and PPC without oracle IDs, generalize beyond the training "
           "length; RoPE, PoSE, absolute and no positions do not"),
    "F3": ("{task}: PPC with a scratchpad generalizes in length; a random absolute shift with a scratchpad and "
           "RoPE + PoSE with or without a scratchpad do not (the paper's panels a to d)"),
    "F4": "in real text, a few far tokens recover most of what the whole far context gives a prediction",
}
FINDING_FIGURE = {"F1": "figure1", "F2": "figure2", "F3": "figure3", "F4": "figure4"}  # the figure each is drawn in
NOT_CONFIGURED = {  # why a finding has no results when its figure's spec does not run what it compares
    "F1": f"the config trains no {F1_SCHEME} model of {{task}}",
    "F2": f"the config trains no {{task}} model with a {SCRATCHPAD}",
    "F3": "the config trains no {task} model",
    "F4": "the config runs no natural-language analysis",
}


@dataclass(frozen=True)
class Finding:
    """One row of the findings table."""

    finding: str
    claim: str
    criterion: str
    numbers: str
    verdict: str


def verdict(parts: list[bool | None]) -> str:
    """The verdict of a criterion whose parts hold (True), fail (False) or cannot be judged (None)."""
    judged = [part for part in parts if part is not None]
    if not judged:
        return NO_RESULTS
    if len(judged) == len(parts) and all(judged):
        return REPRODUCED
    return PARTLY if any(judged) else NOT_REPRODUCED


def outcome(part: bool | None) -> str:
    return {True: "holds", False: "fails", None: "not judged"}[part]


def compared(name: str, stat: SeedStat | None) -> str:
    return f"{name} {stat if stat is not None else 'no results'}"


def claim(name: str, task: str = "") -> str:
    return CLAIMS[name].format(task=task)


def not_configured(name: str, task: str = "") -> Finding:
    """The row of a finding the config runs nothing for (``task``: the task of its figure)."""
    return Finding(name, claim(name, task), "-", NOT_CONFIGURED[name].format(task=task), NO_RESULTS)


def sparse_parity_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F1: at the longest evaluated length, (a) every K_train's accuracy falls with k_test and (b) a
    larger K_train lifts the k_test only it was trained on."""
    task = spec["task"]
    if not any(F1_SCHEME in schemes for schemes in spec["runs"].values()):
        return not_configured("F1", task)
    runs = TaskResults(spec, rows)
    longest = runs.lengths[-1]
    k_train = {variant: runs.task.layout.params(variant)["k_train"]
               for variant, schemes in spec["runs"].items() if F1_SCHEME in schemes}
    k_test = sorted(spec["k_test"])
    metric = runs.metric(next(iter(k_train)))
    criterion = (f"accuracy ({metric}) of {F1_SCHEME} at length {longest} (the longest evaluated). (a) For every "
                 "K_train, the smallest k_test is above the largest k_test <= K_train by more than the seeds' spread, "
                 "and no k_test is above the next smaller one by more than the spread. (b) For each pair of "
                 "neighbouring K_train, at the largest k_test between them (smaller K_train < k_test <= larger "
                 "K_train), the larger K_train's model is above the smaller's by more than the spread. "
                 "Both: reproduced; one: partly." + SEEDS_NOTE)
    falls, shown_a = [], []
    for variant, K in k_train.items():
        stats = [(k, runs.at(variant, F1_SCHEME, longest, k)) for k in k_test if k <= K]
        shown_a.append(f"K_train {K}: " + ", ".join(compared(f"k_test {k}", stat) for k, stat in stats))
        stats = [(k, stat) for k, stat in stats if stat is not None]
        if len(stats) >= 2:
            rises = any(larger.above(smaller) for (_, smaller), (_, larger) in pairwise(stats))
            falls.append(stats[0][1].above(stats[-1][1]) and not rises)
    part_a = all(falls) if falls else None
    lifts, shown_b = [], []
    ordered = sorted(k_train.items(), key=lambda item: item[1])
    for (low_variant, low_k), (high_variant, high_k) in pairwise(ordered):
        between = [k for k in k_test if low_k < k <= high_k]
        if not between:
            shown_b.append(f"no k_test in ({low_k}, {high_k}]")
            continue
        low, high = (runs.at(variant, F1_SCHEME, longest, between[-1]) for variant in (low_variant, high_variant))
        shown_b.append(f"k_test {between[-1]}: " + compared(f"K_train {high_k}", high) + " vs "
                       + compared(f"K_train {low_k}", low))
        if low is not None and high is not None:
            lifts.append(high.above(low))
    part_b = all(lifts) if lifts else None
    if len(ordered) < 2:
        shown_b.append("one K_train only")
    numbers = (f"(a) {'; '.join(shown_a)}: {outcome(part_a)}. (b) {'; '.join(shown_b)}: {outcome(part_b)}.")
    return Finding("F1", claim("F1", task), criterion, numbers, verdict([part_a, part_b]))


def run_name(variant: str, scheme: str) -> str:
    return f"{scheme} ({variant})"


def at_lengths(runs: TaskResults, compared_runs: list[tuple[str, str]], lengths: dict[str, int | None],
               name=run_name) -> str:
    """Each run's number at each of ``lengths`` (label -> length), the runs called ``name(variant, scheme)``."""
    parts = []
    for label, length in lengths.items():
        if length is None:
            parts.append(f"{label}: not evaluated")
            continue
        values = ", ".join(compared(name(*run), runs.at(*run, length)) for run in compared_runs)
        parts.append(f"length {length} ({label}): {values}")
    return "; ".join(parts)


def beats_every(runs: TaskResults, run: tuple[str, str], baselines: list[tuple[str, str]],
                length: int | None) -> list[bool | None]:
    """For each baseline: whether ``run`` is above it at ``length`` (None: either has no result)."""
    mine = runs.at(*run, length)
    return [None if mine is None or (theirs := runs.at(*baseline, length)) is None else mine.above(theirs)
            for baseline in baselines]


def judged_lengths(runs: TaskResults) -> dict[str, int | None]:
    return {f"{BEYOND:g}x {runs.train_max}": runs.beyond(BEYOND), f"{ALSO_SHOWN:g}x": runs.beyond(ALSO_SHOWN)}


def parity_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F2: with a scratchpad, every coupled scheme (coupling, PPC) is above every other scheme at
    1.5x the training length."""
    task = spec["task"]
    if SCRATCHPAD not in spec["runs"]:
        return not_configured("F2", task)
    runs = TaskResults(spec, rows)
    schemes = spec["runs"][SCRATCHPAD]
    coupled = [(SCRATCHPAD, s) for s in schemes if get_scheme(s).coupled]
    others = [(SCRATCHPAD, s) for s in schemes if not get_scheme(s).coupled]
    lengths = judged_lengths(runs)
    criterion = (f"accuracy ({runs.metric(SCRATCHPAD)}) at length {runs.beyond(BEYOND)} (the first evaluated "
                 f"length >= {BEYOND:g}x the training length {runs.train_max}): each coupled scheme "
                 f"({', '.join(s for _, s in coupled) or 'none configured'}) above every other scheme "
                 f"({', '.join(s for _, s in others) or 'none configured'}) by more than the seeds' spread. "
                 "Every coupled scheme: reproduced; some: partly. The 2x numbers are shown, not judged." + SEEDS_NOTE)
    parts = [all_hold(beats_every(runs, run, others, runs.beyond(BEYOND))) for run in coupled]
    held = "; ".join(f"{scheme}: {outcome(part)}" for (_, scheme), part in zip(coupled, parts))
    numbers = f"{at_lengths(runs, coupled + others, lengths, name=lambda _, scheme: scheme)}. {held}."
    return Finding("F2", claim("F2", task), criterion, numbers, verdict(parts) if others else NO_RESULTS)


def all_hold(comparisons: list[bool | None]) -> bool | None:
    """One part made of comparisons that must all hold, judged on those that can be (None: none can)."""
    judged = [comparison for comparison in comparisons if comparison is not None]
    return all(judged) if judged else None


def assignment_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F3: PPC with a scratchpad is above every non-coupled run at 1.5x the training length (the
    paper's panels: a random absolute shift with a scratchpad, RoPE + PoSE with and without)."""
    task = spec["task"]
    runs = TaskResults(spec, rows)
    configured = [(variant, scheme) for variant, schemes in spec["runs"].items() for scheme in schemes]
    predicting = [run for run in configured if run[0] == SCRATCHPAD and get_scheme(run[1]).predicts_positions]
    baselines = [run for run in configured if not get_scheme(run[1]).coupled]
    fit_length = runs.in_training()
    criterion = (f"accuracy ({runs.metric(SCRATCHPAD)} with a scratchpad, {runs.metric('direct')} without)"
                 f" at length {runs.beyond(BEYOND)} (the first evaluated length >= "
                 f"{BEYOND:g}x the training length {runs.train_max}): PPC with a scratchpad "
                 f"({', '.join(run_name(*run) for run in predicting) or 'none configured'}) above every "
                 f"non-coupled run ({', '.join(run_name(*run) for run in baselines) or 'none configured'}) by more "
                 f"than the seeds' spread. All: reproduced; some: partly. If no run reaches {FITS:g} at length "
                 f"{fit_length} (the longest evaluated within the training lengths), nothing was learned: not at "
                 "this scale." + SEEDS_NOTE)
    fit = {run: runs.at(*run, fit_length) for run in configured}
    in_training = ", ".join(compared(run_name(*run), stat) for run, stat in fit.items())
    numbers = f"length {fit_length} (training): {in_training}. " + at_lengths(runs, predicting + baselines,
                                                                              judged_lengths(runs))
    scored = [stat for stat in fit.values() if stat is not None]
    if scored and all(stat.mean < FITS for stat in scored):
        return Finding("F3", claim("F3", task), criterion, f"{numbers}. No run fits the training lengths.",
                       NOT_AT_THIS_SCALE)
    parts = [part for run in predicting for part in beats_every(runs, run, baselines, runs.beyond(BEYOND))]
    pairs = [f"{run_name(*run)} vs {run_name(*baseline)}" for run in predicting for baseline in baselines]
    held = "; ".join(f"{pair}: {outcome(part)}" for pair, part in zip(pairs, parts))
    return Finding("F3", claim("F3", task), criterion, f"{numbers}. {held}." if held else f"{numbers}.",
                   verdict(parts))


def language_finding(spec: dict, rows: pl.DataFrame) -> Finding:
    """F4: the fraction of the long-context gain recovered at k from the target's own far tokens,
    against the same from another document's far tokens chosen alike (the selection's null)."""
    k = min(F4_K, spec["k_max"])
    criterion = (f"median fraction of the gain L_short - L_long recovered by k = {k} far tokens, over targets "
                 f"gaining more than {spec['gain_threshold']:g} nats, with its 95% bootstrap interval: the "
                 "target's own far tokens' lower bound above the upper bound of another document's far tokens, "
                 "chosen the same way: reproduced; the reverse: not reproduced; overlapping: not at this scale.")
    analysed = run_summary.targets(rows)
    if analysed is None:
        return Finding("F4", claim("F4"), criterion, "no influence table", NO_RESULTS)
    own, other = (run_summary.gain(rows, variant, k) for variant in (run_summary.OWN, run_summary.OTHER))
    if not own or not other:
        return Finding("F4", claim("F4"), criterion, f"no numbers at k = {k}", NO_RESULTS)
    targets = f"{own['n_targets']:.0f} of {analysed} targets gain more than {spec['gain_threshold']:g} nats"
    if own["n_targets"] == 0:
        return Finding("F4", claim("F4"), criterion, f"{targets}: nothing to recover", NOT_AT_THIS_SCALE)
    numbers = f"{targets}; at k = {k}: own far tokens {interval(own)}, another document's {interval(other)}"
    if own["ci_low"] > other["ci_high"]:
        found = REPRODUCED
    else:
        found = NOT_REPRODUCED if own["ci_high"] < other["ci_low"] else NOT_AT_THIS_SCALE
    return Finding("F4", claim("F4"), criterion, numbers, found)


def interval(row: dict) -> str:
    return f"{row['median']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


JUDGES = {"F1": sparse_parity_finding, "F2": parity_finding, "F3": assignment_finding, "F4": language_finding}


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


def as_markdown(rows: list[Finding]) -> str:
    """The findings as a Markdown table, one row per finding (no trailing newline)."""
    from .tables import markdown

    frame = pl.DataFrame([[getattr(row, column) for column in COLUMNS] for row in rows], schema=list(COLUMNS),
                         orient="row")
    return markdown(frame)


def as_text(rows: list[Finding], width: int = 100) -> str:
    """The findings for a terminal: per finding its verdict, then claim, criterion and numbers, wrapped."""
    lines = []
    for row in rows:
        lines.append(f"{row.finding}: {row.verdict}")
        for label in COLUMNS[1:4]:
            lines += textwrap.wrap(getattr(row, label), width, initial_indent=f"  {label:<10} ",
                                   subsequent_indent=" " * 13)
    return "\n".join(lines)
