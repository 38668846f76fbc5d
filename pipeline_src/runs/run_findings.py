"""``lengthgen findings``: the paper's four findings of a config's runs, each judged
(:mod:`pipeline_src.findings.judge`) from the spec of the figure it is drawn in and the
run-summary rows (:mod:`pipeline_src.findings.run_summary`) of that figure's tables: the files its
job reads under a results folder, or the rows of a run summary written by ``--export``
(``--from-summary``). The README's findings table is this command's Markdown, between
:data:`README_BEGIN` and :data:`README_END`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..findings import judge as judged
from ..findings import run_summary
from ..findings.claim_file import LANGUAGE_FIGURE, Claim, claims_of
from ..findings.figure_rows import figure_rows, merged
from ..planning import jobs, paths

README_BEGIN, README_END = "<!-- findings:begin -->", "<!-- findings:end -->"


class NoResults(ValueError):
    """A results folder holding none of the tables the findings are judged from (one line)."""


def figure_specs(config: dict, claims: list[Claim]) -> dict[str, tuple[dict | None, str]]:
    """Per figure of ``claims``: its spec (None where ``config`` does not draw it) and the task the figure
    shows ("" for a figure of no synthetic task)."""
    from ..planning.studies import study_of

    specs = {}
    for figure in dict.fromkeys(claim.figure for claim in claims):
        study = study_of(figure)
        drawn = figure in study.figures(config)
        specs[figure] = (study.figure_spec(config, figure) if drawn else None, jobs.FIGURE_TASK.get(figure, ""))
    return specs


def table_rows(config: dict, tables: dict[str, list[Path]]) -> pl.DataFrame:
    """The run-summary rows of every claim's figure of ``config``, from ``tables`` (figure -> the tables
    its job reads: :func:`.judged_config.finding_tables` of a results folder, as
    :func:`.judged_config.check` returns them)."""
    from ..planning.studies import study_of

    parts = [figure_rows(study_of(figure).figure_spec(config, figure), inputs)
             for figure, inputs in tables.items()]
    return run_summary.canonical(pl.concat([run_summary.empty(), *parts]))


def summary_rows(config: dict, summary: Path) -> pl.DataFrame:
    """The rows of the run summary ``summary``, checked against ``config``'s Figure 4 spec."""
    from ..planning.studies import study_of

    rows = run_summary.read(summary)
    study = study_of(LANGUAGE_FIGURE)
    if LANGUAGE_FIGURE in study.figures(config):
        run_summary.check_made_with(rows, study.figure_spec(config, LANGUAGE_FIGURE), summary)
    return rows


def findings(config: dict, rows: pl.DataFrame, claims: list[Claim] | None = None,
             across: dict | None = None, weigh: bool = True) -> list[judged.Finding]:
    """The claims of ``config`` (:func:`pipeline_src.findings.claim_file.claims_of`, or ``claims``)
    judged from the run-summary ``rows``; a claim whose sides are runs of different configs from each
    side's runs (``across``: claim name -> :class:`pipeline_src.findings.side_runs.Across`), where given.
    A config whose runs rehearse the code path (its ``rehearsal``) labels every verdict so; ``weigh``: each
    decided verdict over seeds with its leave-one-seed-out stability (:mod:`pipeline_src.findings.stability`)."""
    from ..findings.finding import rehearsed

    claims = claims_of(config) if claims is None else claims
    specs = figure_specs(config, claims)
    across = across or {}
    found = [judged.judge(claim, specs[claim.figure][0], rows, specs[claim.figure][1], across.get(claim.name), weigh)
             for claim in claims]
    return [rehearsed(row) for row in found] if config.get("rehearsal") else found


def dated(found: list[judged.Finding], claims: list[Claim], made: dict[str, list],
          across: dict | None = None) -> list[judged.Finding]:
    """``found`` with, for each claim judged, whether it predates the results of its figure (``made``:
    figure -> :class:`pipeline_src.findings.preregistration.Made` of each table judged), or, for a claim
    across configs (``across``), the results of both its sides."""
    from dataclasses import replace

    from ..findings.finding import NOT_CONFIGURED_CRITERION
    from ..findings.preregistration import written

    rows = []
    for row, claim in zip(found, claims, strict=False):
        if row.criterion != NOT_CONFIGURED_CRITERION and "no results" not in row.verdict:
            sides = (across or {}).get(claim.name)
            when = written(claim.path, sides.made if sides else made.get(claim.figure, []), claim.registered)
            row = replace(row, written=when.line, post_hoc=when.predates is False)
        rows.append(row)
    return rows


LANDING_HEADING = "**The paper's findings, judged from this run's tables**"


def landing_section(config: dict, results: Path | None = None) -> list[str]:
    """The first section of the report's landing page: the findings of ``config``'s runs judged from
    the tables under ``results`` (default ``results/``) as reStructuredText lines, or one line saying
    why they cannot be judged (tables made with another config, an unreadable table)."""
    from ..storage.errors import one_line
    from .judged_config import ConfigMismatch, check

    results = Path(paths.RESULTS) if results is None else results
    intro = [LANDING_HEADING, "", "Each comparison: a one-sided permutation test over seeds (alpha 0.05), the "
             "difference with its 95% confidence interval; docs/findings.md says how the verdicts follow.", ""]
    try:
        found = findings(config, table_rows(config, check(config, results, ())))
    except (ConfigMismatch, run_summary.SummaryError, ValueError, OSError) as err:
        return [*intro, f"Not judged: {one_line(err)}", ""]
    return [*intro, *judged.as_rst(found)]


def readme_block(text: str, source: Path) -> tuple[int, int]:
    """Where the findings table of the README text ``text`` (read from ``source``) starts and ends."""
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if not 0 <= begin < end:
        raise ValueError(f"{source}: no {README_BEGIN} ... {README_END} markers around the findings table")
    return begin + len(README_BEGIN), end


def put_in_readme(readme: Path, table: str) -> None:
    """Replace the findings table between the markers of ``readme`` by ``table``."""
    from ..storage.atomic import write_text

    text = readme.read_text()
    begin, end = readme_block(text, readme)
    write_text(readme, f"{text[:begin]}\n{table}\n{text[end:]}")


def report(results: Path | None, configfiles: tuple[Path, ...], *, from_summary: Path | None = None,
           export: Path | None = None, keep_others: bool = False, markdown_file: Path | None = None,
           readme: Path | None = None, claim_folders: tuple[Path, ...] = (), also: tuple = ()) -> str:
    """``lengthgen findings``: the findings of the config (``config/config.yaml`` with each of
    ``configfiles`` merged over it) judged from the tables under ``results`` or from the run summary
    ``from_summary``, as text; the rows judged also written to ``export`` as a run summary, the
    Markdown table to ``markdown_file`` and between the markers of ``readme``, where given. With
    ``keep_others``, ``export``'s earlier rows of the models without tables under ``results`` are kept
    and judged too (figures, or a figure's seeds, run in separate sittings:
    :func:`pipeline_src.findings.figure_rows.merged`).
    The claims whose sides are runs of different configs are judged from the results given and
    ``also``'s (:mod:`.across_folders`). Tables made with another config are a
    :class:`.judged_config.ConfigMismatch`, and a folder with none of the tables a
    :class:`NoResults`, before anything is judged or written."""
    from ..findings.preregistration import check_registered, summary_made, tables_made
    from ..planning.load_config import load_config
    from ..storage.atomic import write_text

    config = with_claims(load_config(configfiles), claim_folders)
    claims = claims_of(config)  # every claim file checked before any table is read
    check_registered(claims)
    across = sides_across(claims, results, configfiles, from_summary, also)
    if from_summary is None:
        from .judged_config import check

        tables = check(config, results, configfiles)
        if not any(tables.values()):
            raise NoResults(no_results(config, results, list(tables)))
        rows = table_rows(config, tables)
        made = {figure: tables_made(inputs) for figure, inputs in tables.items()}
    else:
        rows = summary_rows(config, from_summary)
        made = {claim.figure: summary_made(from_summary, claim.figure) for claim in claims}
    if keep_others and export is not None and export.is_file():
        rows = completed(config, merged(summary_rows(config, export), rows, export))
    found = dated(findings(config, rows, claims, across), claims, made, across)
    if export is not None:
        run_summary.write(rows, export)
    if markdown_file is not None:
        write_text(markdown_file, judged.as_markdown(found) + "\n")
    if readme is not None:
        put_in_readme(readme, judged.as_markdown(found))
    return judged.as_text(found)


def completed(config: dict, rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with Figure 4's numbers of a draw in parts made anew from the parts they hold
    (:func:`pipeline_src.findings.summary_parts.completed`; nothing to do for a whole draw's rows)."""
    from ..findings.summary_parts import completed as with_numbers
    from ..planning.studies import study_of

    study = study_of(LANGUAGE_FIGURE)
    if LANGUAGE_FIGURE not in study.figures(config):
        return rows
    return with_numbers(rows, study.figure_spec(config, LANGUAGE_FIGURE))


def sides_across(claims: list[Claim], results: Path | None, configfiles: tuple[Path, ...],
                 from_summary: Path | None, also: tuple) -> dict:
    """The claims across configs as the results judged (``results``, or ``from_summary`` made with
    ``configfiles``) and ``also``'s sources hold them ({} without ``also``: one source holds one config's runs)."""
    from .across_folders import Source, resolve

    if not also:
        return {}
    main = Source(results) if from_summary is None else Source(from_summary, tuple(configfiles))
    return resolve(claims, [main, *also])


def with_claims(config: dict, folders: tuple[Path, ...]) -> dict:
    """``config`` with the claim ``folders`` added to its ``claims`` (``lengthgen findings --claims``)."""
    return {**config, "claims": [*config.get("claims", []), *map(str, folders)]}


def no_results(config: dict, results: Path, figures: list[str]) -> str:
    """Why nothing under ``results`` can be judged: none of the tables of ``config``'s ``figures`` is there."""
    from ..planning.studies import study_of

    wanted = [table for figure in figures for table in study_of(figure).figure_tables(config, figure)]
    example = f" (such as {paths.under(results, wanted[0])})" if wanted else ""
    return (f"no results found under {results}: none of the {len(wanted)} tables the config's findings are judged "
            f"from is there{example}; give the results folder of a run, with the --configfile it was run with")
