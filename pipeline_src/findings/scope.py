"""What a claim over seeds judges in a figure's spec: its seeds (all, or from N on: the seeds no earlier
verdict saw) and its lengths, as multiples of the training length (the longest of the task's training
range): the longest evaluated, the first at least a multiple of it, each between two multiples, or named
lengths. Both judges over seeds (:mod:`.judge_seeds`, :mod:`.judge_trends`) start here."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .claim_file import Claim
from .seed_summary import TaskResults


@dataclass(frozen=True)
class Scope:
    runs: TaskResults  # the spec's runs on the seeds judged
    seeds: list[int]
    lengths: list[int | None]  # None: the claim's "beyond" length is not evaluated
    described: str  # the lengths and seeds in words, for the criterion

    def nothing(self, claim: Claim) -> str:
        """Why nothing can be judged ("" when something can)."""
        if not self.seeds:
            return f"no seed from {claim.seeds_from} on ({claim.seeds_because})"
        return "" if self.lengths else "no evaluated length in the judged range"


def scope(claim: Claim, spec: dict, rows: pl.DataFrame) -> Scope:
    """The seeds and lengths ``claim`` judges in the figure ``spec`` among the run-summary ``rows``."""
    seeds = [seed for seed in spec["seeds"] if claim.seeds_from is None or seed >= claim.seeds_from]
    runs = TaskResults(spec if claim.seeds_from is None else {**spec, "seeds": seeds}, rows)
    lengths, described = judged_lengths(claim.lengths, runs)
    if claim.seeds_from is not None:
        described += f", on seeds {claim.seeds_from} and up only ({claim.seeds_because})"
    return Scope(runs, seeds, lengths, described)


def judged_lengths(chosen, runs: TaskResults) -> tuple[list[int | None], str]:
    """The lengths ``chosen`` (a claim's ``lengths``) names among the evaluated ``runs.lengths``, and in words."""
    train = runs.train_max
    if chosen == "longest":
        return [runs.lengths[-1]], f"at length {runs.lengths[-1]} (the longest evaluated)"
    if "beyond" in chosen:
        length = runs.beyond(chosen["beyond"])
        return [length], (f"at length {length} (the first evaluated length >= {chosen['beyond']:g}x the training "
                          f"length {train})")
    if "at" in chosen:
        return list(chosen["at"]), f"at lengths {', '.join(map(str, chosen['at']))}"
    low, high = chosen["from"] * train, chosen["to"] * train
    lengths = [length for length in runs.lengths if low <= length <= high]
    return lengths, (f"at each evaluated length from {low:g} to {high:g} ({chosen['from']:g}x to {chosen['to']:g}x "
                     f"the training length {train}: {', '.join(map(str, lengths)) or 'none evaluated'})")


def metric_described(runs: TaskResults, variants: list[str]) -> str:
    """The metric each variant is judged by: "accuracy (answer)", or per variant where they differ."""
    metrics = {variant: runs.metric(variant) for variant in dict.fromkeys(variants)}
    if len(set(metrics.values())) <= 1:
        return f"accuracy ({next(iter(metrics.values()), 'answer')})"
    return "accuracy (" + ", ".join(f"{metric} for {variant}" for variant, metric in metrics.items()) + ")"
