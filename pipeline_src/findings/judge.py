"""The one entry point that judges a claim (:func:`judge`; :mod:`.claim_file`: the paper's findings
and a user's own, each a file), from the figure it is drawn in: the figure's spec and the run-summary
rows of the tables it is drawn from (:mod:`.run_summary`). Each figure's caption states the claims
drawn in it (:func:`caption`); ``lengthgen findings`` judges them all
(:mod:`pipeline_src.runs.run_findings`; docs/findings.md, docs/claims.md).

A claim over seeds compares runs (:mod:`.judge_seeds`) or tests trends (:mod:`.judge_trends`); a claim over
targets (Figure 4's) compares bootstrap intervals or tests per-target pairs (:mod:`.judge_targets`). A
claim is ``reproduced``, ``contradicted`` or ``undecided`` (:mod:`.verdicts`) with the reason: the seeds
per run that would decide at the measured spread, a difference the wrong way round, nothing learned at
the training length, or a run with no results.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import polars as pl

from . import claim_runs, judge_forecast, judge_seeds, judge_targets, judge_trends, verdicts
from .claim_file import Claim
from .deciding import deciding
from .figure_rows import figure_rows
from .finding import (
    COLUMNS,
    NO_RESULTS,
    NOT_CONFIGURED_CRITERION,
    POST_HOC_NOTE,
    READING_NOTE,
    Finding,
    not_judged,
    part_rows,
    rehearsed,
)
from .part_verdicts import part_verdicts
from .side_runs import Across
from .stability import FRAGILE_NOTE, weighed

REPRODUCED, CONTRADICTED, UNDECIDED = verdicts.REPRODUCED, verdicts.CONTRADICTED, verdicts.UNDECIDED
ACROSS_CONFIGS = ("its sides are runs of two configs: judged by lengthgen findings given each side's results "
                  "(RESULTS and --also DIR, docs/claims.md)")
NO_FORECAST = "the config draws no forecast (it trains no task with dependency sets)"
JUDGES = {"seeds": judge_seeds.finding_over_seeds, "trends": judge_trends.finding_of_trends,
          "targets": judge_targets.finding_over_targets}


def judge(claim: Claim, spec: dict | None, rows: pl.DataFrame, task: str = "", across: Across | None = None,
          weigh: bool = True) -> Finding:
    """``claim`` judged from the spec ``spec`` of its figure (None: the config does not draw it; ``task``
    the task it would show) and run-summary ``rows``; a claim whose sides are runs of different configs
    from each side's own runs (``across``), where the results given hold them. With ``weigh``, a decided
    verdict is weighed (:mod:`.stability`: the claim judged once per seed more, or on resamples of its targets)."""
    task = spec.get("task", task) if spec is not None else task
    if claim.across:
        if across is None or not across.sides:
            return not_judged(claim.name, claim.claim(task), across.why if across else ACROSS_CONFIGS)
        first = across.sides[claim.compare[0].better.config]
        row = judge_seeds.finding_over_seeds(claim, first.spec, first.rows, across.sides)
        return replace(row, numbers=f"{across.read_from()} {row.numbers}", deciding=deciding(row, claim))
    if claim.kind == "forecast":
        if spec is None:
            return not_judged(claim.name, claim.claim(task), NO_FORECAST)
        row = judge_forecast.finding(claim, spec, rows)
        return replace(row, stability=judge_forecast.weighed(claim, spec, rows, row.word) if weigh else None)
    if spec is None or (claim.kind != "targets" and not claim_runs.selected(claim, spec)):
        return not_judged(claim.name, claim.claim(task), claim_runs.not_configured(claim, task))
    row = JUDGES[claim.kind](claim, spec, rows)
    return replace(row, deciding=deciding(row, claim), parts=part_verdicts(claim, row.comparisons),
                   stability=weighed(claim, spec, rows, row.word, JUDGES[claim.kind]) if weigh else None)


def caption(figure: str, spec: dict, inputs: list[Path], claims: list[Claim], rehearsal: bool = False) -> str:
    """The paragraphs of ``figure``'s caption stating each of ``claims`` drawn in it, judged from the
    figure's spec and the tables it is drawn from (``inputs``), then in one line those these runs give no
    results for (fresh seeds the config does not train, say), with why; "" for a figure that shows no claim.
    A ``rehearsal`` (runs that rehearse the code path) labels each verdict so."""
    mine = [claim for claim in claims if claim.figure == figure]
    if not mine:
        return ""
    rows = figure_rows(spec, inputs)
    found = [judge(claim, spec, rows) for claim in mine]
    found = [rehearsed(row) for row in found] if rehearsal else found
    missing = [row for row in found if NO_RESULTS in row.verdict]
    stated = [f"**{row.finding}: {row.verdict}** (the claim: {row.claim}), judged from this figure's tables. "
              + by_part(row) + (f"It {row.stability.sentence()}. " if row.stability is not None else "")
              + f"Criterion: {row.criterion} Compared: {row.numbers.rstrip('.')}."
              for row in found if row not in missing]
    if missing:
        stated.append("No results here for " + "; ".join(f"{row.finding}: {row.verdict.split(NO_RESULTS, 1)[1]}"
                                                        for row in missing) + ".")
    return " ".join(stated)


def by_part(row: Finding) -> str:
    """``By part: (a): reproduced (p <= 3.5e-07); (b) ‡: contradicted (p = 0.0011) (‡ ...). `` ("" for a
    claim of one part)."""
    if not row.parts:
        return ""
    shown = "; ".join(f"{name.removeprefix(row.finding + ' ')}: {cell}" for name, cell in part_rows(row))
    note = f" ({READING_NOTE})" if any(part.stated == "reconstruction" for part in row.parts) else ""
    return f"By part: {shown}{note}. "


def as_markdown(rows: list[Finding], columns: tuple[str, ...] = COLUMNS) -> str:
    """The findings as a Markdown table of ``columns``, one row per finding (no trailing newline)."""
    from .tables import markdown

    frame = pl.DataFrame([[getattr(row, column) for column in columns] for row in rows], schema=list(columns),
                         orient="row")
    return markdown(frame)


def as_text(rows: list[Finding], width: int = 100) -> str:
    """The findings for a terminal: per finding its verdict, whether its claim predates its results,
    then claim, criterion and numbers (each comparison on a line of its own), wrapped."""
    lines = []
    for row in rows:
        lines.append(f"{row.finding}: {row.verdict}")
        for name, cell in part_rows(row):
            lines.append(f"  {'part':<10} {name.removeprefix(row.finding + ' ')}: {cell}")
        if row.stability is not None:
            lines.append(f"  {'stability':<10} {row.stability.sentence()}")
        if row.written:  # one line, unwrapped
            lines.append(f"  {'written':<10} {row.written}")
        for label in COLUMNS[1:3]:
            lines += textwrap.wrap(getattr(row, label), width, initial_indent=f"  {label:<10} ",
                                   subsequent_indent=" " * 13)
        for i, part in enumerate(row.numbers.split("; ")):
            lines += textwrap.wrap(part, width, initial_indent=f"  {'numbers' if i == 0 else '':<10} ",
                                   subsequent_indent=" " * 15)
    return "\n".join(lines)


def as_rst(rows: list[Finding]) -> list[str]:
    """The findings as reStructuredText lines for the report's landing page: the README's table for this
    run (each finding's verdict and the number that decided it), then per finding its verdict and claim,
    and each comparison (or the numbers compared) as a bullet."""
    lines = [".. list-table::", "   :header-rows: 1", "", "   * - finding", "     - this run"]
    for row in rows:
        shown = "-" if row.criterion == NOT_CONFIGURED_CRITERION else row.cell
        lines += [f"   * - {row.finding}", f"     - {shown}"]
        for name, cell in part_rows(row):
            lines += [f"   * - {name}", f"     - {cell}"]
    lines += [""] + ([POST_HOC_NOTE, ""] if any(row.post_hoc for row in rows) else [])
    lines += [READING_NOTE, ""] if any(part.stated == "reconstruction" for row in rows for part in row.parts) else []
    lines += [FRAGILE_NOTE, ""] if any(row.stability is not None and row.stability.fragile for row in rows) else []
    for row in rows:
        lines += [f"- **{row.finding}: {row.verdict}** (the claim: {row.claim})", ""]
        lines += [f"  - {part.rstrip('.')}" for part in row.numbers.split("; ")] + [""]
    return lines
