"""The power of a whole finding's verdict, by simulation: how often a claim of a given shape (the runs
its comparisons compare, which share seeds) is judged ``reproduced`` by the project's own tests and verdict
rule (:mod:`.significance`) when every claimed difference is a given number of per-seed standard
deviations. The shapes are derived from the shipped claims in the default config's figures
(:func:`structures`); docs/findings.md, "The power of a whole finding's verdict", tabulates them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import claim_runs
from .claim_file import Claim, load_claims
from .significance import ALPHA, PERMUTATIONS, p_values

POWER_DRAWS = 1000  # simulated findings per estimate: a standard error of at most 0.016 (at power 0.5)
POWER_SEED = 0  # the simulation's numpy seed: an estimate is a pure function of its arguments
POWER_CHUNK = 200  # draws tested at once (8 seeds a side: 1,999 permutations of 200 x 16 values, 51 MB)


@dataclass(frozen=True)
class Structure:
    """The shape of a finding for :func:`finding_power`: the runs its comparisons compare and which
    run shares its seeds with which. ``comparisons``: (better, worse, paired) per comparison, in the
    order the claim makes them; a run named in several comparisons is the same seeds in each.
    ``better``: the runs drawn a claimed difference above the others in a comparison between runs
    (N(effect, 1) per seed; every other run N(0, 1)). A paired comparison's better run is its worse
    run's models in another cell: each seed's value is its worse value plus N(effect, 1)."""

    name: str
    comparisons: tuple[tuple[str, str, bool], ...]
    better: tuple[str, ...] = ()

    @property
    def runs(self) -> tuple[str, ...]:
        """Every run compared, in the order of first mention."""
        return tuple(dict.fromkeys(run for better, worse, _ in self.comparisons for run in (better, worse)))

    def base(self, run: str) -> str | None:
        """The run whose seeds ``run`` shares, one cell lower (None: a run drawn on its own)."""
        return next((worse for better, worse, paired in self.comparisons if paired and better == run), None)


def structure(claim: Claim, spec: dict) -> Structure:
    """The shape of ``claim``'s comparisons in the figure ``spec`` (:func:`.claim_runs.pairs`): each cell a
    run ("K_train 4 k_test 4" in a K_train task, else "ppc (scratchpad)"), the better side of each
    comparison between different models drawn the claimed difference above."""
    from ..tasks import get_task

    layout = get_task(spec["task"]).layout

    def run(cell) -> str:
        if cell.k is None:
            return f"{cell.scheme} ({cell.variant})"
        return f"K_train {layout.k_train(cell.variant)} k_test {cell.k}"
    pairs = [pair for rule in claim.compare for pair in claim_runs.pairs(rule, spec)]
    comparisons = tuple((run(pair.better), run(pair.worse), pair.paired) for pair in pairs)
    return Structure(claim.name, comparisons,
                     better=tuple(dict.fromkeys(run(pair.better) for pair in pairs if not pair.paired)))


def structures(config: dict | None = None) -> dict[str, Structure]:
    """The shape of every shipped claim corrected by Holm over its comparisons between seeds (F1, F2 and F3),
    in the default config's figures (or ``config``'s): the findings whose power docs/findings.md tabulates."""
    from ..planning.load_config import load_config
    from ..planning.studies import study_of

    config = load_config([]) if config is None else config
    claims = [claim for claim in load_claims() if claim.kind == "seeds" and claim.correction == "holm"]
    return {claim.name: structure(claim, study_of(claim.figure).figure_spec(config, claim.figure)) for claim in claims}


def simulate(structure: Structure, effect: float, seeds: int, draws: int = POWER_DRAWS,
             seed: int = POWER_SEED) -> dict[str, np.ndarray]:
    """``draws`` simulated results of ``structure``'s runs, ``seeds`` per run: per run a (draws, seeds)
    array of per-seed values, SD 1, every claimed difference ``effect`` (see :class:`Structure`).
    Each run's standard normal noise is drawn in the order of :attr:`Structure.runs` from one
    generator seeded ``seed``, so two effects share their noise."""
    rng = np.random.default_rng(seed)
    noise = {run: rng.standard_normal((draws, seeds)) for run in structure.runs}
    values: dict[str, np.ndarray] = {}

    def value(run: str) -> np.ndarray:
        if run not in values:
            base = structure.base(run)
            values[run] = noise[run] + (effect + value(base) if base is not None
                                        else effect * (run in structure.better))
        return values[run]
    for run in structure.runs:
        value(run)
    return values


def reproduced_draws(structure: Structure, values: dict[str, np.ndarray]) -> np.ndarray:
    """Per draw of ``values`` (from :func:`simulate`), whether :func:`verdict` would say
    ``reproduced``: every comparison's p (:func:`p_values`, as :func:`compare` tests it, though drawn from
    :data:`PERMUTATIONS` random permutations where more than that many are distinct and never drawn again:
    a power is a mean over many draws, which a p's Monte Carlo error moves by little) at most
    :data:`ALPHA`, and no reverse p at most ALPHA / m (no contradiction, :func:`contradicting`)."""
    draws = len(next(iter(values.values())))
    reproduced = np.empty(draws, dtype=bool)
    for start in range(0, draws, POWER_CHUNK):
        chunk = slice(start, start + POWER_CHUNK)
        found = [p_values(values[better][chunk], values[worse][chunk], paired, exact_up_to=PERMUTATIONS)
                 for better, worse, paired in structure.comparisons]
        p, p_reverse = (np.stack(side, axis=-1) for side in zip(*found, strict=False))
        reproduced[chunk] = ((p <= ALPHA).all(axis=-1)
                             & ~(p_reverse.min(axis=-1) <= ALPHA / len(structure.comparisons)))
    return reproduced


def finding_power(structure: Structure, effect: float, seeds: int, draws: int = POWER_DRAWS,
                  seed: int = POWER_SEED) -> float:
    """The probability that a finding of ``structure`` is judged ``reproduced`` with ``seeds`` seeds
    per run when every claimed difference is ``effect`` per-seed standard deviations: the fraction of
    ``draws`` simulated findings (:func:`simulate`) judged so by the project's own tests and verdict
    rule (:func:`reproduced_draws`). Its Monte Carlo standard error is sqrt(power (1 - power) / draws):
    with the default 1,000 draws at most 0.016 (at power 0.5), 0.009 at power 0.9 or 0.1. Deterministic
    given ``seed``: the table in docs/findings.md ("The power of a whole finding's verdict") is these
    numbers to 2 decimals, 3 findings x 2 effects x 2 seed counts in about 5 s on a busy core."""
    return float(np.mean(reproduced_draws(structure, simulate(structure, effect, seeds, draws, seed))))
