"""How stable a decided verdict over seeds is: the claim judged again with each of its judged seeds left
out in turn (the seed's models dropped from the figure's runs), "holds in j of n leave-one-seed-out".
A verdict that holds in fewer than all but one of them is fragile: one seed's models carry it (the
tables mark it, :data:`FRAGILE`). The verdict itself is the claim's, on every seed; this weighs it.
Every p the recomputed verdicts rest on is computed as the claim's are (a permutation p near its
threshold drawn with more permutations: :func:`.trend.jonckheere`), so Monte Carlo error does not move
the count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import polars as pl

from .claim_file import Claim
from .finding import FRAGILE
from .significance import CONTRADICTED, REPRODUCED

FRAGILE_NOTE = (f"{FRAGILE} fragile: the verdict holds in fewer than all but one of its leave-one-seed-out "
                "recomputations (holds j/n: with each of its n seeds left out in turn, j keep it).")


@dataclass(frozen=True)
class Stability:
    """In how many of the leave-one-seed-out verdicts the verdict holds, and the seeds whose leaving out undoes it."""

    holds: int
    of: int
    undone_by: tuple[int, ...]

    @property
    def fragile(self) -> bool:
        return self.holds < self.of - 1

    def __str__(self) -> str:
        return f"holds {self.holds}/{self.of}"

    def sentence(self) -> str:
        undone = (f"; leaving out seed {', '.join(map(str, self.undone_by))} undoes it" if self.undone_by else "")
        return f"holds in {self.holds} of {self.of} leave-one-seed-out{undone}" + (" (fragile)" if self.fragile else "")


def leave_one_seed_out(claim: Claim, spec: dict, rows: pl.DataFrame, word: str,
                       judge: Callable[[Claim, dict, pl.DataFrame], object]) -> Stability | None:
    """The :class:`Stability` of ``claim``'s verdict ``word`` on the figure ``spec``'s runs in ``rows``, each
    recomputation by ``judge`` (the claim's judge over seeds); None where there is nothing to weigh: a
    verdict that decides nothing, a claim over targets or across configs, fewer than three seeds judged."""
    if word not in (REPRODUCED, CONTRADICTED) or claim.kind == "targets" or claim.across or "task" not in spec:
        return None
    seeds = [seed for seed in spec["seeds"] if claim.seeds_from is None or seed >= claim.seeds_from]
    if len(seeds) < 3:
        return None
    undone = []
    for seed in seeds:
        fewer = {**spec, "seeds": [other for other in spec["seeds"] if other != seed]}
        kept = rows.filter(~((pl.col("task") == spec["task"]) & (pl.col("seed") == seed)))
        if judge(claim, fewer, kept).word != word:
            undone.append(seed)
    return Stability(len(seeds) - len(undone), len(seeds), tuple(undone))
