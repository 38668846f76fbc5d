"""The forecast judged across models (docs/mechanism.md, "The forecast"): from each model's predicted
and measured reach and its forecast and measured mass at 4x the longest training length
(:func:`pipeline_src.evaluation.forecast.reaches`), both parts of the criterion fixed before the runs:

* (a) the predicted reach ranks the measured one: Spearman's rho >= :data:`RHO` and its one-sided p
  <= :data:`~.significance.ALPHA` (``scipy.stats.spearmanr``, ties at their mean rank, its p from the
  t distribution of n - 2 degrees of freedom);
* (b) the forecast mass at 4x is within :data:`MASS_ERROR` of the measured one for at least half the
  models that were evaluated there.

Both holding reproduce the claim, either failing contradicts it. Fewer than :data:`FEWEST` models,
or every model at one reach (no ranking to compare), leave it undecided, as does (b) with no model
evaluated at 4x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ..evaluation.forecast import FAR
from .finding import NO_RESULTS, Finding, undecided
from .significance import ALPHA
from .stability import Stability, each_seed_left_out
from .verdicts import CONTRADICTED, REPRODUCED, UNDECIDED

RHO = 0.7
MASS_ERROR = 0.15
FEWEST = 4  # the fewest models whose ranks can give a one-sided p below ALPHA (1 / 4! = 0.042)


@dataclass(frozen=True)
class ForecastVerdict:
    """The two parts' numbers and the verdict they give."""

    models: int
    rho: float  # NaN where every predicted or every measured reach is one value
    p: float
    close: int  # models whose forecast mass at FAR x T is within MASS_ERROR of the measured one
    far: int  # models evaluated at FAR x T

    @property
    def ranks(self) -> bool | None:
        """Part (a): None where it cannot be judged."""
        if self.models < FEWEST or math.isnan(self.rho):
            return None
        return self.rho >= RHO and self.p <= ALPHA

    @property
    def masses(self) -> bool | None:
        """Part (b): None where no model was evaluated at FAR x T."""
        return None if self.far == 0 else 2 * self.close >= self.far

    @property
    def word(self) -> str:
        parts = (self.ranks, self.masses)
        if False in parts:
            return CONTRADICTED
        return REPRODUCED if None not in parts else UNDECIDED

    @property
    def deciding(self) -> str:
        """The numbers of the parts that decide the verdict: both parts of a reproduction, each failing part
        of a contradiction, each part that cannot be judged of an undecided one."""
        ranks = (f"(a) {self.models} models, fewer than {FEWEST}" if self.models < FEWEST else
                 "(a) rho undefined" if math.isnan(self.rho) else f"(a) rho = {self.rho:.2f}, p = {self.p:.2g}")
        masses = f"(b) {self.close} of {self.far} within {MASS_ERROR}" if self.far else "(b) no model at 4x"
        parts = ((ranks, self.ranks), (masses, self.masses))
        wanted = {REPRODUCED: (True,), CONTRADICTED: (False,)}.get(self.word, (None,))
        return "; ".join(words for words, holds in parts if holds in wanted)

    def __str__(self) -> str:
        rho = "rho undefined" if math.isnan(self.rho) else f"rho = {self.rho:.2f}, p = {self.p:.2g}"
        return (f"{self.word}: (a) {rho} over {self.models} models; "
                f"(b) {self.close} of {self.far} within {MASS_ERROR} at {FAR}x")


def judged(reaches: pl.DataFrame) -> ForecastVerdict:
    """The criterion over the models of ``reaches`` (columns predicted_reach, measured_reach,
    predicted_far, measured_far)."""
    from scipy.stats import spearmanr

    predicted, measured = reaches["predicted_reach"].to_numpy(), reaches["measured_reach"].to_numpy()
    constant = len(set(predicted.tolist())) < 2 or len(set(measured.tolist())) < 2
    if reaches.height < FEWEST or constant:
        rho = p = math.nan
    else:
        found = spearmanr(predicted, measured, alternative="greater")
        rho, p = float(found.statistic), float(found.pvalue)
    far = reaches.drop_nulls(["predicted_far", "measured_far"])
    close = far.filter((pl.col("predicted_far") - pl.col("measured_far")).abs() <= MASS_ERROR).height
    return ForecastVerdict(reaches.height, rho, p, close, far.height)


def _mine(claim, rows: pl.DataFrame) -> pl.DataFrame:
    """The forecast rows among ``rows`` of ``claim``'s tasks and seeds."""
    from .figure_rows import FORECAST

    seeds = pl.col("seed") >= claim.seeds_from if claim.seeds_from is not None else pl.lit(True)
    return rows.filter(pl.col("metric").str.starts_with(FORECAST) & pl.col("task").is_in(claim.tasks) & seeds)


def finding(claim, spec: dict, rows: pl.DataFrame) -> Finding:
    """The forecast claim ``claim`` judged from the forecast figure's spec ``spec`` and the run-summary
    ``rows`` (:func:`.figure_rows.forecast_rows`): over the models of its tasks, of its seeds, once every
    one of its tasks has some (withheld until then, as a run in sittings adds up)."""
    from .figure_rows import FORECAST, FORECAST_COLUMNS

    criterion = (f"across the models of {', '.join(claim.tasks)} at k_test = K_train: the predicted reach ranks the "
                 f"measured one (Spearman's rho >= {RHO}, one-sided p <= {ALPHA}) and the forecast mass at {FAR}x T "
                 f"is within {MASS_ERROR} of the measured one for at least half the models evaluated there.")
    mine = _mine(claim, rows)
    if mine.is_empty():
        why = "no forecast rows" + (f" of seeds from {claim.seeds_from}" if claim.seeds_from is not None else "")
        return Finding(claim.name, claim.claim(), criterion, why, undecided(f"{NO_RESULTS}{why}"),
                       deciding="no results")
    reaches = (mine.with_columns(pl.col("metric").str.strip_prefix(FORECAST))
               .pivot("metric", index=["task", "variant", "scheme", "seed", "k"], values="value"))
    counts = dict(reaches.group_by("task", maintain_order=True).len().iter_rows())
    per_task = ", ".join(f"{task} {counts[task]}" for task in claim.tasks if task in counts)
    missing = [task for task in claim.tasks if task not in counts]
    if missing:  # judged once whole: a sitting's models of some tasks decide nothing
        why = f"withheld: {len(counts)} of {len(claim.tasks)} tasks in ({per_task}; none yet of {', '.join(missing)})"
        return Finding(claim.name, claim.claim(), criterion, why, undecided(why), deciding="withheld")
    found = judged(reaches.select(*FORECAST_COLUMNS))
    numbers = f"{found.models} models ({per_task}): {str(found).split(': ', 1)[1]}"
    verdict = found.word if found.word != UNDECIDED else undecided(numbers)
    return Finding(claim.name, claim.claim(), criterion, numbers, verdict, deciding=found.deciding)


def weighed(claim, spec: dict, rows: pl.DataFrame, word: str) -> Stability | None:
    """The stability of the forecast's verdict ``word``: judged again with each seed of its models left out
    of every task in turn (:mod:`.stability`); None where it decides nothing or fewer than three seeds are
    judged."""
    seeds = sorted(set(_mine(claim, rows)["seed"].to_list()))
    return each_seed_left_out(seeds, word, lambda seed: finding(claim, spec, rows.filter(pl.col("seed") != seed)).word)
