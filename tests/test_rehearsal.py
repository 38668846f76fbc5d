"""A config whose runs rehearse the code path (``rehearsal``: the smoke config's) labels every verdict
"rehearsal, not evidence" in ``lengthgen findings``, the README-style cell and the captions, so that
none reads reproduced or contradicted on its own; other configs' verdicts are as before."""

from __future__ import annotations

import re

from pipeline_src.findings import run_summary
from pipeline_src.findings.finding import REHEARSAL
from pipeline_src.planning.load_config import load_config
from pipeline_src.runs.run_findings import findings
from tests.helpers import REPO

SUMMARY = REPO / "docs/findings/default_run.csv"  # a run with verdicts of every kind


def test_a_rehearsals_verdicts_are_labelled_so_and_never_bare():
    assert load_config((REPO / "config/smoke.yaml",))["rehearsal"] and not load_config(())["rehearsal"]
    rows, config = run_summary.read(SUMMARY), load_config(())
    plain = findings(config, rows)
    rehearsed = findings({**config, "rehearsal": True}, rows)  # the default run's verdicts, as a rehearsal's
    assert any(row.word in ("reproduced", "contradicted") for row in rehearsed)  # there is something to label
    for row in rehearsed:
        assert row.verdict.startswith(f"{REHEARSAL}: the code path gives "), row.verdict
        assert row.cell.startswith(f"{REHEARSAL} (the code path: {row.word}"), row.cell
        assert not re.match(r"(reproduced|contradicted)", row.cell)
    for row in plain:
        assert not row.rehearsal and REHEARSAL not in row.verdict + row.cell
