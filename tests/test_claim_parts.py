"""A claim's named parts ((a), (b): its file's ``parts``), each judged apart in the tables under the
claim's own rule and shown with who states it; the claim's verdict and registration are unchanged by
naming them."""

from __future__ import annotations

import re

import pytest
import yaml

from pipeline_src.findings.claim_file import ClaimError, load
from pipeline_src.findings.finding import READING, READING_NOTE
from pipeline_src.findings.preregistration import fields
from pipeline_src.findings.stability import FRAGILE_NOTE
from pipeline_src.runs import scales
from tests.helpers import REPO

F1R = REPO / "pipeline_src/findings/claims/F1r.yaml"


@pytest.fixture(scope="module")
def judged_scales():
    """Every committed scale judged as the README's table judges it, once for this module (F1r's
    leave-one-seed-out recomputations are the costly part)."""
    listed = scales.read(REPO / "docs/findings/scales.yaml")
    return listed, [scales.judge_scale(scale) for scale in listed]


def test_f1r_is_shown_as_its_two_parts_each_with_its_deciding_number(judged_scales):
    listed, found = judged_scales
    at_range = next(rows for scale, rows in zip(listed, found, strict=True) if scale.summary.name == "cpu_range.csv")
    row = next(row for row in at_range if row.finding == "F1r")
    assert row.word == "contradicted"  # decided as before, over every comparison
    (a, b) = row.parts
    assert (a.part, a.stated, a.word) == ("(a)", "paper", "reproduced") and a.deciding.startswith("p <= 3.5e-07")
    assert (b.part, b.stated, b.word) == ("(b)", "reconstruction", "contradicted")
    assert b.deciding == "p = 0.0008 ± 0.0001"  # drawn with more permutations near its threshold 0.05 / 32
    assert str(row.stability) == "holds 3/8" and row.stability.undone_by == (21, 23, 24, 25, 26)  # fragile


def test_the_table_gives_each_part_a_row_and_marks_the_reconstructions_reading(judged_scales):
    table = scales.as_table(*judged_scales)
    lines = table.splitlines()
    assert any(line.startswith("| F1r (a) | ") and "reproduced (p <= 3.5e-07)" in line for line in lines)
    assert any(line.startswith(f"| F1r (b) {READING} | ") and "contradicted (p = 0.0008 ± 0.0001)" in line
               for line in lines)
    assert any(line.startswith("| F1r | ") and "contradicted (p = 0.0008 ± 0.0001, holds 3/8) ◊" in line
               for line in lines)
    assert READING_NOTE in lines and FRAGILE_NOTE in lines


def test_naming_parts_leaves_the_claim_as_registered():
    text = F1R.read_text()
    entry = yaml.safe_load(text)
    bare = {**{k: v for k, v in entry.items() if k != "parts"},
            "compare": [{k: v for k, v in rule.items() if k != "part"} for rule in entry["compare"]]}
    assert fields(yaml.safe_dump(bare)) == fields(text)


@pytest.mark.parametrize("edit, field", [
    (lambda entry: entry["compare"][0].pop("part"), "compare[0].part"),
    (lambda entry: entry["compare"][1].update(part="(c)"), "compare[1].part"),
    (lambda entry: entry["parts"].append({"part": "(c)", "stated": "paper"}), "parts"),
    (lambda entry: entry["parts"][0].update(stated="nobody"), "parts"),
])
def test_a_part_without_its_comparisons_or_a_comparison_of_no_part_is_refused(tmp_path, edit, field):
    entry = yaml.safe_load(F1R.read_text())
    edit(entry)
    path = tmp_path / "F1r.yaml"
    path.write_text(yaml.safe_dump(entry))
    with pytest.raises(ClaimError, match=re.escape(f"{path}: field {field}")):
        load(path)
