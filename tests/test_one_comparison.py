"""One comparison per cell (the README's findings table): an undecided verdict's p and the seeds it
plans come from the one comparison its verdict names, in the direction named; a comparison that no
number of seeds would decide says so ("no count decides") instead of a count. Held on every committed summary."""

from __future__ import annotations

import re

import pytest
import yaml

from pipeline_src.findings.deciding import named
from pipeline_src.planning.load_config import load_config
from pipeline_src.runs.run_findings import findings, summary_rows
from tests.helpers import REPO

SCALES = yaml.safe_load((REPO / "docs/findings/scales.yaml").read_text())


@pytest.mark.parametrize("scale", SCALES, ids=[scale["short"] for scale in SCALES])
def test_every_undecided_cell_shows_one_comparisons_p_and_plan(scale):
    config = load_config([REPO / path for path in scale["configfiles"]])
    rows = findings(config, summary_rows(config, REPO / "docs/findings" / scale["summary"]), weigh=False)
    for row in rows:
        if row.word != "undecided" or not any(hasattr(test, "better") for test in row.comparisons):
            continue
        test, reverse = named(row)
        assert test is not None, (row.finding, row.verdict)  # the verdict names the comparison it rests on
        cell = row.deciding
        if reverse:
            better = re.escape(test.better)  # a run's name may hold spaces: "ppc (scratchpad)"
            assert re.fullmatch(rf"{better} below .+ with ~[\d,]+ seeds|{better} below .+, "
                                rf"p = {test.p_reverse:.2g}", cell), cell
        else:
            assert cell.startswith(f"p = {test.p:.2g}, "), cell
        planned = re.search(r"about ([\d,]+) seeds per run", row.verdict)
        assert (f"~{planned[1]} seeds" in cell) if planned else ("no count decides" in cell or reverse)


def test_f1_prime_at_the_cpu_range_pairs_its_p_with_its_own_comparisons_seeds():
    scale = next(scale for scale in SCALES if scale["summary"] == "cpu_range.csv")
    config = load_config([REPO / path for path in scale["configfiles"]])
    rows = findings(config, summary_rows(config, REPO / "docs/findings" / scale["summary"]), weigh=False)
    row = next(row for row in rows if row.finding == "F1'")
    test, reverse = named(row)
    assert (test.better, test.worse, reverse) == ("K_train 12", "K_train 10", False)  # the p of 0.36 is its
    assert row.deciding == "p = 0.36, ~341 seeds" and "K_train 12 vs K_train 10: smallest p 0.36 " in row.verdict
