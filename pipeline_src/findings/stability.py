"""How stable a decided verdict is. Over seeds: the claim judged again with each of its judged seeds left
out in turn (the seed's models dropped from the figure's runs), "holds in j of n leave-one-seed-out".
Over targets (Figure 4's): judged again on :data:`TARGET_RESAMPLES` bootstrap resamples of its gaining
targets, "holds in x% of resamples", or, where fewer than :data:`FEW_TARGETS` gain, with each left out in
turn. A verdict that holds in fewer than all but one leave-one-out recomputations, or in fewer than
:data:`FRAGILE_SHARE` of its resamples, is fragile: a seed or a few targets carry it (the tables mark it,
:data:`FRAGILE`). The verdict itself is the claim's, on every seed and target; this weighs it.
Every p the recomputed verdicts rest on is computed as the claim's are (a permutation p near its
threshold drawn with more permutations: :mod:`.monte_carlo`), so Monte Carlo error does not move
the count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import polars as pl

from . import judge_targets, run_summary
from .claim_file import Claim
from .finding import FRAGILE
from .verdicts import CONTRADICTED, REPRODUCED

TARGET_RESAMPLES = 200  # bootstrap resamples of the gaining targets a verdict over targets is judged again on
TARGET_SEED = 0  # their random generator's seed
FEW_TARGETS = 20  # fewer gaining targets than this: each left out in turn instead
FRAGILE_SHARE = 0.8  # a verdict holding in fewer of its resamples than this share is fragile

FRAGILE_NOTE = (f"{FRAGILE} fragile: holds in fewer than all but one leave-one-out recomputations (holds j/n: "
                "each of n seeds, or of a few targets, left out in turn), or in under "
                f"{FRAGILE_SHARE:.0%} of bootstrap resamples of its targets.")


@dataclass(frozen=True)
class Stability:
    """In how many of the leave-one-seed-out verdicts the verdict holds, and the seeds whose leaving out undoes it."""

    holds: int
    of: int
    undone_by: tuple[int, ...]
    unit: str = "seed"  # what is left out: "seed" or "target"

    @property
    def fragile(self) -> bool:
        return self.holds < self.of - 1

    def __str__(self) -> str:
        return f"holds {self.holds}/{self.of}"

    def sentence(self) -> str:
        undone = (f"; leaving out {self.unit} {', '.join(map(str, self.undone_by))} undoes it" if self.undone_by
                  else "")
        return (f"holds in {self.holds} of {self.of} leave-one-{self.unit}-out{undone}"
                + (" (fragile)" if self.fragile else ""))


@dataclass(frozen=True)
class Resampled:
    """In how many bootstrap resamples of its ``targets`` gaining targets a verdict over targets holds."""

    holds: int
    of: int
    targets: int

    @property
    def fragile(self) -> bool:
        return self.holds < FRAGILE_SHARE * self.of

    def __str__(self) -> str:
        return f"holds {self.holds / self.of:.0%} of {self.of} resamples"

    def sentence(self) -> str:
        return (f"holds in {self.holds} of {self.of} bootstrap resamples of its {self.targets} gaining targets "
                f"({self.holds / self.of:.0%})" + (" (fragile)" if self.fragile else ""))


def weighed(claim: Claim, spec: dict, rows: pl.DataFrame, word: str,
            judge: Callable[[Claim, dict, pl.DataFrame], object]) -> Stability | Resampled | None:
    """The stability of ``claim``'s verdict ``word``: over its targets for a claim over targets, else
    leave-one-seed-out (None: nothing to weigh)."""
    if claim.kind == "targets":
        return over_targets(claim, spec, rows, word)
    return leave_one_seed_out(claim, spec, rows, word, judge)


def over_targets(claim: Claim, spec: dict, rows: pl.DataFrame, word: str) -> Stability | Resampled | None:
    """The stability of the verdict ``word`` of Figure 4's ``claim`` over its gaining targets' fractions
    among ``rows``: in how many of :data:`TARGET_RESAMPLES` bootstrap resamples of them its rule gives
    ``word`` again, or, with fewer than :data:`FEW_TARGETS`, in how many of the recomputations with each left
    out (None: a verdict that decides nothing, no per-target fractions)."""
    if word not in (REPRODUCED, CONTRADICTED) or "k_max" not in spec:
        return None
    pairs = run_summary.paired(rows, run_summary.f4_k(spec))
    rule = claim.compare[0]
    better, worse = pairs[rule.better.variant].to_numpy(), pairs[rule.worse.variant].to_numpy()
    if len(better) < 2:
        return None
    again = rule_of(claim, spec)
    if len(better) < FEW_TARGETS:
        kept = ~np.eye(len(better), dtype=bool)  # row i: every target but the i-th
        shape = (len(better), len(better) - 1)
        left = again(np.broadcast_to(better, kept.shape)[kept].reshape(shape),
                     np.broadcast_to(worse, kept.shape)[kept].reshape(shape))
        targets = pairs["target"].to_list()
        undone = tuple(targets[i] for i, found in enumerate(left) if found != word)
        return Stability(len(better) - len(undone), len(better), undone, unit="target")
    resamples = np.random.default_rng(TARGET_SEED).integers(0, len(better), size=(TARGET_RESAMPLES, len(better)))
    return Resampled(sum(found == word for found in again(better[resamples], worse[resamples])), TARGET_RESAMPLES,
                     len(better))


def rule_of(claim: Claim, spec: dict) -> Callable[[np.ndarray, np.ndarray], list[str | None]]:
    """``claim``'s verdict rule on each row of the better and worse side's per-target fractions (one
    recomputation a row): the two medians' bootstrap intervals (the figure's ``n_boot`` and ``seed``) or
    the paired signed-rank test."""
    from ..language.influence_summary import median_interval

    if claim.compare[0].test == "intervals":
        def bounds(values: np.ndarray) -> tuple[float, float]:
            _, low, high = median_interval(values, n_boot=spec["n_boot"], seed=spec["seed"])
            return float(low), float(high)
        return lambda better, worse: [judge_targets.intervals_word(bounds(b), bounds(w))
                                      for b, w in zip(better, worse, strict=True)]
    return judge_targets.signed_rank_words


def leave_one_seed_out(claim: Claim, spec: dict, rows: pl.DataFrame, word: str,
                       judge: Callable[[Claim, dict, pl.DataFrame], object]) -> Stability | None:
    """The :class:`Stability` of ``claim``'s verdict ``word`` on the figure ``spec``'s runs in ``rows``, each
    recomputation by ``judge`` (the claim's judge over seeds); None where there is nothing to weigh: a
    verdict that decides nothing, a claim over targets or across configs, fewer than three seeds judged."""
    if word not in (REPRODUCED, CONTRADICTED) or claim.kind == "targets" or claim.across or "task" not in spec:
        return None
    seeds = [seed for seed in spec["seeds"] if claim.seeds_from is None or seed >= claim.seeds_from]

    def without(seed: int) -> str:
        fewer = {**spec, "seeds": [other for other in spec["seeds"] if other != seed]}
        return judge(claim, fewer, rows.filter(~((pl.col("task") == spec["task"]) & (pl.col("seed") == seed)))).word
    return each_seed_left_out(seeds, word, without)


def each_seed_left_out(seeds: list[int], word: str, without: Callable[[int], str]) -> Stability | None:
    """The :class:`Stability` of the verdict ``word`` over ``seeds``, ``without(seed)`` the verdict with that
    seed left out; None where there is nothing to weigh: a verdict that decides nothing, fewer than three seeds."""
    if word not in (REPRODUCED, CONTRADICTED) or len(seeds) < 3:
        return None
    undone = tuple(seed for seed in seeds if without(seed) != word)
    return Stability(len(seeds) - len(undone), len(seeds), undone)
