"""The shipped claim files judge as the code before them did (issue 65): on every committed run summary
under docs/findings/ and on synthetic summaries (a smoke run's shape, the paper's range of Figure 1 three
ways, fresh seeds with F3 not learned), each finding's claim, numbers (every mean, interval and p) and
verdict are those ``lengthgen findings`` gave at 5ad37c4 (tests/fixtures/findings_5ad37c4/freeze.py)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.findings_5ad37c4 import freeze

CASES = json.loads(freeze.CASES.read_text())
COMPARED = ("finding", "claim", "numbers", "verdict")


def test_every_committed_summary_is_a_case():
    assert set(freeze.scale_cases()) <= set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_claims_judge_as_the_code_before_them(case):
    before = CASES[case]
    known = {row["finding"] for row in before["findings"]}  # claims added since (the forecast) have no record
    now = [row for row in freeze.judged(before["configfiles"], freeze.Path(before["summary"]))
           if row["finding"] in known]
    assert [[row[field] for field in COMPARED] for row in now] == \
           [[row[field] for field in COMPARED] for row in before["findings"]]
