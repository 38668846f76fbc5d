"""A decided verdict weighed (pipeline_src/findings/stability.py): over seeds, the claim judged again with each
judged seed's models left out, fragile where it holds in fewer than all but one; over targets, judged again on
bootstrap resamples of its gaining targets (or each of a few left out), fragile under 80% of them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest

from pipeline_src.findings import significance
from pipeline_src.findings.claim_file import load_claims
from pipeline_src.findings.run_summary import FRACTION, LANGUAGE, OTHER, OWN, canonical
from pipeline_src.findings.stability import leave_one_seed_out, over_targets
from pipeline_src.planning.load_config import load_config
from pipeline_src.runs.run_findings import findings, summary_rows
from tests.helpers import REPO

F2 = next(claim for claim in load_claims() if claim.name == "F2")
SPEC = {"task": "parity_scratchpad", "seeds": list(range(8))}
ROWS = pl.DataFrame({"task": ["parity_scratchpad"] * 8, "seed": list(range(8))})


@dataclass
class Judged:
    word: str


def judge_carried_by(seeds: set[int]):
    """A judge whose verdict is reproduced only while every seed of ``seeds`` is among the rows."""
    return lambda claim, spec, rows: Judged("reproduced" if seeds <= set(rows["seed"].to_list()) else "undecided")


def test_a_verdict_one_seed_carries_is_fragile_and_names_that_seed():
    found = leave_one_seed_out(F2, SPEC, ROWS, "reproduced", judge_carried_by({3}))
    assert (found.holds, found.of, found.undone_by, found.fragile) == (7, 8, (3,), False)  # all but one: not fragile
    two = leave_one_seed_out(F2, SPEC, ROWS, "reproduced", judge_carried_by({3, 5}))
    assert (two.holds, two.undone_by, two.fragile) == (6, (3, 5), True)
    assert two.sentence() == "holds in 6 of 8 leave-one-seed-out; leaving out seed 3, 5 undoes it (fragile)"


def test_a_uniform_effect_holds_in_every_leave_one_seed_out_and_undecided_is_not_weighed():
    found = leave_one_seed_out(F2, SPEC, ROWS, "reproduced", judge_carried_by(set()))
    assert (found.holds, found.of, found.fragile, str(found)) == (8, 8, False, "holds 8/8")
    assert leave_one_seed_out(F2, SPEC, ROWS, "undecided", judge_carried_by(set())) is None
    assert leave_one_seed_out(F2, {**SPEC, "seeds": [0, 1]}, ROWS, "reproduced", judge_carried_by(set())) is None


def test_the_committed_verdicts_weigh_as_measured():
    """F2 of the default run holds whichever of its 5 seeds is left out (F1r at the CPU range, 3 of 8:
    tests/test_committed_scales.py)."""
    config = load_config(())
    f2 = next(row for row in findings(config, summary_rows(config, REPO / "docs/findings/default_run.csv"))
              if row.finding == "F2")
    assert str(f2.stability) == "holds 5/5" and not f2.stability.fragile and "holds 5/5" in f2.cell


# --- over targets (Figure 4's claims): bootstrap resamples of the gaining targets, or each left out ---

F4, F4_PAIRED = (next(claim for claim in load_claims() if claim.name == name) for name in ("F4", "F4'"))
F4_SPEC = {"k_max": 4, "n_boot": 200, "seed": 0}


def fraction_rows(own, other) -> pl.DataFrame:
    """A summary's per-target fractions at F4's k: target i's own and other-document fraction."""
    rows = [{"task": LANGUAGE, "variant": variant, "seed": target, "k": 4, "metric": FRACTION, "value": value}
            for variant, values in ((OWN, own), (OTHER, other)) for target, value in enumerate(values)]
    return canonical(pl.DataFrame(rows))


def test_a_uniform_effect_over_targets_holds_in_every_resample():
    rng = np.random.default_rng(0)
    other = rng.uniform(0.0, 0.5, 200)
    for claim in (F4, F4_PAIRED):
        found = over_targets(claim, F4_SPEC, fraction_rows(other + 0.3, other), "reproduced")
        assert (found.holds, found.of, found.targets, found.fragile) == (200, 200, 200, False), claim.name
        assert str(found) == "holds 100% of 200 resamples"


def test_a_verdict_over_targets_just_decided_is_fragile():
    """200 targets whose own fraction is the other's plus N(0.022, 0.1): the signed-rank test just decides
    (p about 0.03), and a fresh draw of as many targets would often not; a clear effect (0.03: p = 0.001) holds."""
    rng = np.random.default_rng(1)
    other, noise = rng.uniform(0.0, 0.5, 200), rng.normal(0.0, 0.1, 200)
    just, clear = other + noise + 0.022, other + noise + 0.03
    assert 0.02 < significance.signed_rank(just, other).p <= 0.05  # decided, as the claim judges it
    found = over_targets(F4_PAIRED, F4_SPEC, fraction_rows(just, other), "reproduced")
    assert found.fragile and 0.2 * found.of < found.holds < 0.8 * found.of
    assert found.sentence().endswith("of its 200 gaining targets (" + f"{found.holds / 200:.0%}) (fragile)")
    assert not over_targets(F4_PAIRED, F4_SPEC, fraction_rows(clear, other), "reproduced").fragile


def test_few_targets_are_left_out_one_at_a_time():
    own, other = np.linspace(0.5, 0.9, 10), np.linspace(0.0, 0.4, 10)
    found = over_targets(F4_PAIRED, F4_SPEC, fraction_rows(own, other), "reproduced")
    assert (found.holds, found.of, found.unit, found.fragile) == (10, 10, "target", False)
    assert found.sentence() == "holds in 10 of 10 leave-one-target-out"
    assert over_targets(F4_PAIRED, F4_SPEC, fraction_rows(own, other), "undecided: ...") is None


def test_the_resampled_signed_rank_word_is_the_full_tests_word():
    """Over targets the rule's word skips the reverse test where the forward one decides: the same word as
    the paired test made both ways, own above, below, level and all zero."""
    from pipeline_src.findings import judge_targets

    rng = np.random.default_rng(11)
    cases = [(rng.normal(shift, 1, n), rng.normal(0, 1, n)) for shift in (-1.0, 0.0, 1.0) for n in (6, 30)]
    cases.append((np.ones(8), np.ones(8)))
    words = [judge_targets.signed_rank_word_of(own, other) for own, other in cases]
    assert words == [judge_targets.signed_rank_word(significance.signed_rank(own, other)) for own, other in cases]
    assert {judge_targets.REPRODUCED, judge_targets.CONTRADICTED, None} <= set(words)


@pytest.mark.parametrize("n", [6, 14, 30, 51])
def test_the_signed_rank_p_of_many_resamples_at_once_is_each_ones_own(n):
    """Resamples tested together (those scipy makes asymptotic in one call) give each its own test's p to
    the bit: continuous, rounded (tied) and bootstrap-drawn differences, a resample of no difference."""
    rng = np.random.default_rng(n)
    own, other = rng.normal(0.3, 1, n), rng.normal(0, 1, n)
    drawn = rng.integers(0, n, size=(10, n))
    cases = [(rng.normal(0.3, 1, (10, n)), rng.normal(0, 1, (10, n))),
             (np.round(rng.normal(0.3, 1, (20, n)), 1), np.round(rng.normal(0, 1, (20, n)), 1)),
             (own[drawn], other[drawn])]
    for a, b in cases:
        a[0] = b[0]
        for alternative in ("greater", "less"):
            each = [significance.signed_rank_p(x, y, alternative) for x, y in zip(a, b, strict=True)]
            assert significance.signed_rank_ps(a, b, alternative).tolist() == each
