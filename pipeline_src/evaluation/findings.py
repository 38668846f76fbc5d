"""The paper's four findings, each judged from a run's result tables by a stated criterion
(``lengthgen findings``; the README's section "The paper's findings").

F1 to F3 read the accuracy tables of the tasks of the paper's Figures 1 to 3 (the tasks whose
figures are ``figure1`` to ``figure3``), through :class:`.seed_summary.TaskResults`: each run's
headline metric, its mean over seeds and the seeds' spread (max minus min). Run A is *above* run B
at a cell when A's mean exceeds B's by more than the larger of the two spreads (one seed each:
spread 0, any difference counts). Lengths come from the config: the training length is the longest
of the task's training range, "1.5x" (or "2x") the shortest evaluated length at least 1.5 (2) times
it. F4 reads the influential-token table of the natural-language analysis and compares the median
fraction of the long-context gain recovered by the target's own far tokens with that recovered by
another document's, chosen alike (:func:`.influence_table.recovered_gain`, as Figure 4 draws them).

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

from ..bookkeeping import config as jobs
from ..bookkeeping import paths
from ..language import config as language_config
from ..schemes import get_scheme
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


def not_configured(name: str, why: str, task: str = "") -> Finding:
    """The row of a finding the config runs nothing for."""
    return Finding(name, claim(name, task), "-", why, NO_RESULTS)


def sparse_parity_finding(config: dict, results: Path) -> Finding:
    """F1: at the longest evaluated length, (a) every K_train's accuracy falls with k_test and (b) a
    larger K_train lifts the k_test only it was trained on."""
    task = jobs.FIGURES["figure1"]
    if task not in jobs.tasks(config) or F1_SCHEME not in config[task]["schemes"]:
        return not_configured("F1", f"the config trains no {F1_SCHEME} model of {task}", task)
    runs = TaskResults(config, task, results)
    longest = runs.lengths[-1]
    k_train = {variant: runs.task.layout.params(variant)["k_train"] for variant in jobs.variants(config, task)}
    k_test = sorted(config[task]["eval"]["k_test"])
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


def parity_finding(config: dict, results: Path) -> Finding:
    """F2: with a scratchpad, every coupled scheme (coupling, PPC) is above every other scheme at
    1.5x the training length."""
    task = jobs.FIGURES["figure2"]
    if task not in jobs.tasks(config) or SCRATCHPAD not in config[task]["runs"]:
        return not_configured("F2", f"the config trains no {task} model with a scratchpad", task)
    runs = TaskResults(config, task, results)
    schemes = config[task]["runs"][SCRATCHPAD]
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


def assignment_finding(config: dict, results: Path) -> Finding:
    """F3: PPC with a scratchpad is above every non-coupled run at 1.5x the training length (the
    paper's panels: a random absolute shift with a scratchpad, RoPE + PoSE with and without)."""
    task = jobs.FIGURES["figure3"]
    if task not in jobs.tasks(config):
        return not_configured("F3", f"the config trains no {task} model", task)
    runs = TaskResults(config, task, results)
    configured = [(variant, scheme) for variant, schemes in jobs.variants(config, task).items() for scheme in schemes]
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


def language_finding(config: dict, results: Path) -> Finding:
    """F4: the fraction of the long-context gain recovered at k from the target's own far tokens,
    against the same from another document's far tokens chosen alike (the selection's null)."""
    from ..language.influence_table import InfluenceConfig, influence_schema, recovered_gain
    from ..storage import datasets

    if not language_config.enabled(config):
        return not_configured("F4", "the config runs no natural-language analysis")
    spec = language_config.figure_spec(config, language_config.FIGURES[0])
    k = min(F4_K, spec["k_max"])
    criterion = (f"median fraction of the gain L_short - L_long recovered by k = {k} far tokens, over targets "
                 f"gaining more than {spec['gain_threshold']:g} nats, with its 95% bootstrap interval: the "
                 "target's own far tokens' lower bound above the upper bound of another document's far tokens, "
                 "chosen the same way: reproduced; the reverse: not reproduced; overlapping: not at this scale.")
    path = paths.under(results, paths.INFLUENCE)
    if not path.is_file():
        return Finding("F4", claim("F4"), criterion, f"no {path}", NO_RESULTS)
    frame = datasets.read(path, influence_schema(InfluenceConfig(context=spec["context"], local=spec["local"],
                                                                 k_max=spec["k_max"])))
    own, other = (recovered_gain(frame, gain_threshold=spec["gain_threshold"], n_boot=spec["n_boot"],
                                 seed=spec["seed"], column=column).row(k - 1, named=True)
                  for column in ("sparse_loss", "other_loss"))
    targets = f"{own['n_targets']} of {frame.height} targets gain more than {spec['gain_threshold']:g} nats"
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


FINDINGS = (sparse_parity_finding, parity_finding, assignment_finding, language_finding)


def findings(config: dict, results: str | Path = paths.RESULTS) -> list[Finding]:
    """The four findings judged from the tables of ``config``'s runs under the folder ``results``."""
    return [judge(config, Path(results)) for judge in FINDINGS]


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


def report(results: Path, configfiles: tuple[Path, ...], markdown_file: Path | None) -> str:
    """``lengthgen findings``: the findings of the config (``config/config.yaml`` with each of
    ``configfiles`` merged over it) judged from ``results``, as text; also written to
    ``markdown_file`` as a Markdown table if given."""
    from ..bookkeeping.status import load_config
    from ..storage.atomic import write_text

    rows = findings(load_config(configfiles), results)
    if markdown_file is not None:
        write_text(markdown_file, as_markdown(rows) + "\n")
    return as_text(rows)
