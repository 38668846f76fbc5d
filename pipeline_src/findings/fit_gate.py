"""The fit gate: whether a model learned what it was trained on, from its own evaluation table.

A model fits its training lengths when its headline metric reaches :data:`FITS` at the longest
evaluated length within them (F3's gate, and F1r's per K_train). A model of a task trained on k ~
Unif{1..K_train} is gated per k: every k_test <= K_train must reach it, so a run that learned k = 1 to
6 and stayed at chance on k = 7 to 12 is named for those k. Figure 1's caption, its training-curve
figure's caption and ``lengthgen status`` name such runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

FITS = 0.9  # a run fits its training lengths: headline metric at least this at the training length


@dataclass(frozen=True)
class NotLearned:
    """The k <= K_train a model did not learn, each with its accuracy, at ``length`` (the longest
    evaluated training length)."""

    length: int
    missed: tuple[tuple[int, float], ...]  # (k, accuracy), ascending k

    def describe(self) -> str:
        ks = ", ".join(f"{k} ({accuracy:.2f})" for k, accuracy in self.missed)
        return f"below {FITS:g} at length {self.length} for k = {ks}"


def not_learned(cells: pl.DataFrame, k_train: int, train_length: int) -> NotLearned | None:
    """The gate of one model of K_train ``k_train`` from its table ``cells`` (columns k, length and
    accuracy; the headline metric's rows): None where it learned every k <= K_train, or where no
    evaluated length lies within the training lengths (``train_length`` the longest)."""
    within = cells.filter(pl.col("length") <= train_length, pl.col("accuracy").is_not_null())
    if within.is_empty():
        return None
    length = within["length"].max()
    missed = within.filter(pl.col("length") == length, pl.col("k") <= k_train, pl.col("accuracy") < FITS).sort("k")
    return NotLearned(length, tuple(missed.select("k", "accuracy").iter_rows())) if len(missed) else None


def caption_note(frame: pl.DataFrame, train_length: int) -> str:
    """The sentence naming every model of ``frame`` (a figure's accuracy tables, its headline metric's
    rows; with task, scheme, variant, seed and k_train) that did not learn some k <= K_train: "" for
    none, or a table without K_train."""
    if "k_train" not in frame.columns or "k" not in frame.columns:
        return ""
    named = []
    for (scheme, k_train, seed), cells in frame.group_by(["scheme", "k_train", "seed"]):
        gate = not_learned(cells, k_train, train_length)
        if gate is not None:
            named.append((scheme, k_train, seed, gate))
    if not named:
        return ""
    runs = "; ".join(f"{scheme} K_train {k_train} seed {seed}: {gate.describe()}"
                     for scheme, k_train, seed, gate in sorted(named, key=lambda item: item[:3]))
    return f"**Not learned at the training length** (the findings' fit gate, accuracy {FITS:g}): {runs}."


def figure_note(spec: dict, inputs: list) -> str:
    """:func:`caption_note` for a task figure's ``spec`` and accuracy tables ``inputs`` ("" for a figure
    of a task without K_train: its spec has no k_test)."""
    if "k_test" not in spec:
        return ""
    from ..evaluation.accuracy_schema import read_accuracy
    from ..tasks import get_task

    task = get_task(spec["task"])
    headline = {variant: task.headline_metric(variant) for variant in spec["runs"]}
    frame = read_accuracy(inputs)
    return caption_note(frame.filter(pl.col("metric") == pl.col("variant").replace_strict(headline)),
                        spec["train_lengths"][1])


def some_run_fits(runs, names: dict[tuple[str, str], str]) -> tuple[str, bool]:
    """A claim's gate "some run fits": each run's mean (``names``: (variant, scheme) -> its name) at the
    longest evaluated training length of ``runs`` (a :class:`.seed_summary.TaskResults`) as a sentence,
    and whether some run reaches :data:`FITS` there (or none has a value)."""
    length = runs.in_training()
    fit = {run: runs.at(*run, length) for run in names}
    shown = ", ".join(f"{names[run]} {stat if stat is not None else 'no results'}" for run, stat in fit.items())
    scored = [stat for stat in fit.values() if stat is not None]
    return f"Length {length} (training): {shown}.", not scored or any(stat.mean >= FITS for stat in scored)


def k_train_not_learned(runs, trained: list[tuple[int, str, str]], k_test: list[int]) -> str:
    """A claim's gate "every K_train fits": the K_train of ``trained`` ((K_train, variant, scheme)) whose
    seeds' mean at the longest evaluated training length of ``runs`` is below :data:`FITS` at some k_test
    <= K_train, with those k and means ("" when every K_train learned)."""
    length = runs.in_training()
    named = []
    for K, variant, scheme in trained:
        means = {k: runs.at(variant, scheme, length, k) for k in k_test if k <= K}
        missed = [f"k = {k}: {stat.mean:.2f}" if stat else f"k = {k}: no results"
                  for k, stat in means.items() if stat is None or stat.mean < FITS]
        if missed:
            named.append(f"K_train {K} ({', '.join(missed)})")
    return f"at length {length}, " + "; ".join(named) if named else ""
