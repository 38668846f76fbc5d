"""The committed scales (docs/findings/scales.yaml) judged once for the module: the README's table and
the page behind it are what the command writes of them; a claim's named parts ((a), (b): its file's
``parts``), each judged apart in the tables under the claim's own rule and shown with who states it; the
claim's verdict and registration are unchanged by naming them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from pipeline_src.findings.claim_file import ClaimError, load
from pipeline_src.findings.finding import READING, READING_NOTE
from pipeline_src.findings.preregistration import fields
from pipeline_src.findings.stability import FRAGILE_NOTE
from pipeline_src.runs import scales
from tests.helpers import REPO

F1R = REPO / "pipeline_src/findings/claims/F1r.yaml"


SCALES = Path("docs/findings/scales.yaml")  # the committed summaries the README's table shows (from REPO)
CLAIMS = (Path("claims"),)  # the users' claims the README's table judges beside the paper's
PAGE = "docs/findings_by_scale.md"  # the page behind the README's table
REGENERATE = ("lengthgen findings RESULTS --export docs/findings/<summary>.csv (from that run's results), then "
              "lengthgen findings --scales docs/findings/scales.yaml --claims claims --readme README.md "
              f"--markdown {PAGE}")


@pytest.fixture(scope="module")
def judged_scales():
    """Every committed scale judged as the README's table judges it (``lengthgen findings --scales
    docs/findings/scales.yaml --claims claims``), once for this module (F1r's leave-one-seed-out
    recomputations are the costly part)."""
    listed = scales.read(REPO / SCALES)
    return listed, [scales.judge_scale(scale, tuple(REPO / folder for folder in CLAIMS)) for scale in listed]


def test_readme_findings_table_is_the_committed_summaries(judged_scales, tmp_path, monkeypatch):
    """The README's table and the page behind it are what the command writes from the committed summaries
    (its judging is ``scales.judge_scale``'s, as the fixture's; the command's own path: test_findings.py)."""
    monkeypatch.chdir(REPO)
    (tmp_path / "docs").mkdir()
    readme = shutil.copy(REPO / "README.md", tmp_path / "README.md")
    page = tmp_path / PAGE
    page.write_text("stale")
    scales.report(SCALES, markdown_file=page, readme=readme, claim_folders=CLAIMS, found=judged_scales[1])
    assert (REPO / "README.md").read_text() == readme.read_text(), (
        f"README.md's findings table is not what {SCALES} gives; regenerate: {REGENERATE}")
    assert (REPO / PAGE).read_text() == page.read_text().replace(str(tmp_path) + "/", ""), (
        f"{PAGE} is stale: {REGENERATE}")


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
