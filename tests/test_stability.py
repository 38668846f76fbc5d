"""A decided verdict over seeds weighed leave-one-seed-out (pipeline_src/findings/stability.py): the claim
judged again with each judged seed's models left out; fragile where it holds in fewer than all but one."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline_src.config.load import load_config
from pipeline_src.findings.claim_file import load_claims
from pipeline_src.findings.stability import leave_one_seed_out
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
    tests/test_claim_parts.py)."""
    config = load_config(())
    f2 = next(row for row in findings(config, summary_rows(config, REPO / "docs/findings/default_run.csv"))
              if row.finding == "F2")
    assert str(f2.stability) == "holds 5/5" and not f2.stability.fragile and "holds 5/5" in f2.cell
