"""Findings across scales: the same four findings judged from several committed run summaries side
by side (``lengthgen findings --scales docs/findings/scales.yaml``), e.g. the default run on 2 CPU
cores, the GPU window's seeds and Cho et al.'s size on a GPU.

A scales file is a YAML list; each entry one column of the README's findings table::

    - name: CPU, default config          # the scale's name on the page of criteria and numbers
      short: CPU default                 # the column's heading in the README's table
      summary: default_run.csv           # written by `lengthgen findings RESULTS --export`; relative to the file
      configfiles: []                    # the --configfile(s) the run was made with (from the project root)
      device: 2 cores of an AMD EPYC (AVX2)
      date: "2026-11-26"                 # when its runs were made
      also:                              # optional: summaries of the same scale made with other configs
        - summary: other_run.csv         # for the claims whose sides are runs of two configs (docs/claims.md)
          configfiles: [config/mid.yaml]
      findings: [forecast]               # optional: the findings its column shows (default: every one its
                                         # config judges); a run made for some, whose others re-judge
                                         # another scale's models, shows "-" for those

Each summary is judged with its own config, exactly as ``--from-summary`` judges it; with ``also``, as
``--from-summary`` with ``--also SUMMARY=CONFIGFILES`` for each (:mod:`.across_folders`). A scale any of
whose summaries does not exist yet shows as :data:`NO_RESULTS`, never as a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..findings import judge as judged
from ..findings.finding import NOT_CONFIGURED_CRITERION, POST_HOC_NOTE, READING_NOTE, UNDECIDED, not_judged, part_rows
from ..findings.stability import FRAGILE_NOTE
from ..storage import yaml_text

NO_RESULTS = "no results yet"
NOT_RUN = "not run at this scale"  # the scale's config runs nothing the finding compares
DETAILS = ("finding", "written", "criterion", "numbers", "verdict")  # the columns of a scale's table on the page
FIELDS = {"name": str, "short": str, "summary": str, "configfiles": list, "device": str, "date": str}
ALSO = {"summary": str, "configfiles": list}  # each of a scale's optional ``also``
OPTIONAL = ("also", "findings")


class ScalesError(ValueError):
    """A scales file that cannot be read (one line naming the file, the entry and the field)."""


@dataclass(frozen=True)
class Scale:
    """One column of the findings table: a run summary and what it was made with."""

    name: str
    short: str
    summary: Path
    configfiles: tuple[Path, ...]
    device: str
    date: str
    also: tuple = ()  # (summary, configfiles) of each summary of the scale made with another config
    findings: tuple[str, ...] | None = None  # the findings its column shows (None: every one)

    def made(self) -> str:
        """"device, date, config files": what the scale's runs were made on and with."""
        def files(configfiles) -> str:
            return " ".join(str(path) for path in ("config/config.yaml", *configfiles))
        also = "".join(f"; {summary.name}: {files(configfiles)}" for summary, configfiles in self.also)
        return f"{self.device}, {self.date}, {files(self.configfiles)}{also}"

    @property
    def summaries(self) -> list[Path]:
        return [self.summary, *(summary for summary, _ in self.also)]

    def described(self) -> str:
        """"name: device, date, config files" for the heading of the scale's numbers."""
        return f"{self.name}: {self.made()}"


def read(path: Path) -> list[Scale]:
    """The scales of the scales file ``path``, checked field by field."""
    try:
        entries = yaml_text.read(Path(path).read_text())
    except (OSError, yaml_text.YAMLError) as err:
        raise ScalesError(f"{path}: not a scales file ({str(err).splitlines()[0]})") from None
    if not isinstance(entries, list) or not entries:
        raise ScalesError(f"{path}: a scales file is a non-empty list of scales (fields {', '.join(FIELDS)})")
    scales = []
    for number, entry in enumerate(entries, 1):
        where = f"{path}: scale {number}"
        if not isinstance(entry, dict):
            raise ScalesError(f"{where}: not a mapping of {', '.join(FIELDS)}")
        for field, kind in FIELDS.items():
            if field not in entry:
                raise ScalesError(f"{where}: no field {field!r}")
            if not isinstance(entry[field], kind):
                raise ScalesError(f"{where}: {field} is {entry[field]!r}, not a {kind.__name__}")
        unknown = sorted(set(entry) - set(FIELDS) - set(OPTIONAL))
        if unknown:
            raise ScalesError(f"{where}: unknown field {unknown[0]!r} "
                              f"(a scale has {', '.join(FIELDS)}, optionally {', '.join(OPTIONAL)})")
        shown = entry.get("findings")
        if shown is not None and (not isinstance(shown, list) or not shown
                                  or not all(isinstance(name, str) for name in shown)):
            raise ScalesError(f"{where}: findings is {shown!r}, not a list of finding names")
        scales.append(Scale(entry["name"], entry["short"], Path(path).parent / entry["summary"],
                            tuple(Path(file) for file in entry["configfiles"]), entry["device"], entry["date"],
                            also_of(entry.get("also", []), Path(path), where),
                            None if shown is None else tuple(shown)))
    for field in ("name", "short"):
        names = [getattr(scale, field) for scale in scales]
        repeated = next((name for name in names if names.count(name) > 1), None)
        if repeated:
            raise ScalesError(f"{path}: two scales with the {field} {repeated!r}")
    return scales


def also_of(entries, path: Path, where: str) -> tuple:
    """A scale's ``also`` (a list of summary and configfiles), checked field by field."""
    if not isinstance(entries, list):
        raise ScalesError(f"{where}: also is {entries!r}, not a list of {', '.join(ALSO)}")
    found = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != set(ALSO) or not all(
                isinstance(entry[field], kind) for field, kind in ALSO.items()):
            raise ScalesError(f"{where}: also {number}: {entry!r} is not a mapping of {', '.join(ALSO)} "
                              "(a string and a list)")
        found.append((path.parent / entry["summary"], tuple(Path(file) for file in entry["configfiles"])))
    return tuple(found)


def judge_scale(scale: Scale, claim_folders: tuple[Path, ...] = ()) -> list[judged.Finding] | None:
    """The claims of ``scale``'s summary judged with its config (and ``claim_folders``' claims), those
    across configs with its ``also`` too; None: some summary not made yet."""
    from ..findings.claim_file import claims_of
    from ..findings.preregistration import check_registered, summary_made
    from ..planning.load_config import load_config
    from .across_folders import Source
    from .run_findings import dated, findings, sides_across, summary_rows, with_claims

    if not all(summary.is_file() for summary in scale.summaries):
        return None
    config = with_claims(load_config(scale.configfiles), claim_folders)
    claims = claims_of(config)
    check_registered(claims)
    across = sides_across(claims, None, scale.configfiles, scale.summary, tuple(Source(*also) for also in scale.also))
    made = {claim.figure: summary_made(scale.summary, claim.figure) for claim in claims}
    rows = dated(findings(config, summary_rows(config, scale.summary), claims, across), claims, made, across)
    if scale.findings is None:
        return rows
    unknown = sorted(set(scale.findings) - {row.finding for row in rows})
    if unknown:
        raise ScalesError(f"scale {scale.name!r}: findings names {unknown[0]!r}, which its config does not judge")
    return [row if row.finding in scale.findings else not_judged(row.finding, row.claim, "not shown at this scale")
            for row in rows]


def cell(row: judged.Finding) -> str:
    """A finding's verdict at a scale (and how stable it is), or :data:`NOT_RUN` where the scale's config runs
    nothing for it."""
    if row.criterion == NOT_CONFIGURED_CRITERION:
        return NOT_RUN
    return row.verdict + (f" ({row.stability.sentence()})" if row.stability is not None else "")


def short_cell(row: judged.Finding) -> str:
    """A finding's verdict at a scale and the number that decided it ("-": not run there; "no results":
    undecided, its runs giving nothing to judge)."""
    if row.criterion == NOT_CONFIGURED_CRITERION:
        return "-"
    return "no results" if row.cell == f"{UNDECIDED} (no results)" else row.cell


def judged_rows(found: list[list[judged.Finding] | None]) -> list[judged.Finding]:
    rows = next((rows for rows in found if rows is not None), None)
    if rows is None:
        raise ScalesError("no scale has a summary yet: nothing to judge")
    return rows


def as_table(scales: list[Scale], found: list[list[judged.Finding] | None]) -> str:
    """The table read at a glance: a row per finding, a column per scale (its short name), each cell the
    verdict and the number that decided it, "-" where the scale runs nothing for it; a line under it where
    a cell is post hoc."""
    import polars as pl

    from ..findings.tables import markdown

    names = []  # each finding, then each of its named parts judged at some scale (part_rows)
    for i, row in enumerate(judged_rows(found)):
        names.append((row.finding, i, None))
        parts = dict.fromkeys(name for rows in found if rows is not None for name, _ in part_rows(rows[i]))
        names += [(name, i, name) for name in parts]
    table = {"finding": [name for name, _, _ in names]}
    for scale, rows in zip(scales, found, strict=False):
        table[scale.short] = ([NO_RESULTS] * len(names) if rows is None else
                              [short_cell(rows[i]) if part is None else dict(part_rows(rows[i])).get(part, "-")
                               for _, i, part in names])
    every = [row for rows in found if rows is not None for row in rows]
    notes = [POST_HOC_NOTE] * any(row.post_hoc for row in every) + \
        [READING_NOTE] * any(part.stated == "reconstruction" for row in every for part in row.parts) + \
        [FRAGILE_NOTE] * any(row.stability is not None and row.stability.fragile for row in every)
    return markdown(pl.DataFrame(table)) + "".join(f"\n\n{note}" for note in notes)


def as_page(scales: list[Scale], found: list[list[judged.Finding] | None], command: str) -> str:
    """The page behind the table: the table, each finding's claim, then per judged scale what it is and
    each finding's criterion, numbers and verdict."""
    import polars as pl

    from ..findings.tables import markdown

    rows = judged_rows(found)
    lines = ["# The findings, by scale", "", f"Generated by `{command}`; do not edit. The README's table, each "
             "claim, then per scale its runs and each finding's criterion, numbers and verdict (docs/findings.md "
             "says how they are judged).", "", as_table(scales, found), "", "## The claims", "",
             markdown(pl.DataFrame({"finding": [row.finding for row in rows], "claim": [row.claim for row in rows]}))]
    for scale, judged_ in zip(scales, found, strict=False):
        lines += ["", f"## {scale.name}", "", f"The column {scale.short}: {scale.made()}.", ""]
        if judged_ is None:
            absent = [summary.name for summary in scale.summaries if not summary.is_file()]
            lines.append(f"{NO_RESULTS}: {' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not committed.")
            continue
        run = [row for row in judged_ if row.criterion != NOT_CONFIGURED_CRITERION]
        lines.append(judged.as_markdown(run, columns=DETAILS))
    return "\n".join(lines)


def as_text(scales: list[Scale], found: list[list[judged.Finding] | None], width: int = 100) -> str:
    """Each finding's verdict at every scale, then per judged scale its findings as ``lengthgen
    findings`` prints them."""
    column = max(len(scale.name) for scale in scales)
    lines = []
    names = [row.finding for row in next((rows for rows in found if rows is not None), [])]
    for i, name in enumerate(names):
        for j, (scale, rows) in enumerate(zip(scales, found, strict=False)):
            verdict = cell(rows[i]) if rows is not None else NO_RESULTS
            lines.append(f"{name if j == 0 else '':<4}{scale.name:<{column}}  {verdict}")
    blocks = ["\n".join(lines)]
    blocks += [f"== {scale.described()}\n{judged.as_text(rows, width)}"
               for scale, rows in zip(scales, found, strict=False) if rows is not None]
    return "\n\n".join(blocks)


def report(path: Path, *, markdown_file: Path | None = None, readme: Path | None = None,
           claim_folders: tuple[Path, ...] = (), found: list[list[judged.Finding] | None] | None = None) -> str:
    """``lengthgen findings --scales``: every scale of the scales file ``path`` judged (or ``found``, its
    scales' rows as :func:`judge_scale` gave them), as text; the page of criteria and numbers
    (:func:`as_page`) also written to ``markdown_file``, and the table (:func:`as_table`, with a link to
    that page) between the findings markers of ``readme``."""
    import os

    from ..storage.atomic import write_text
    from .run_findings import put_in_readme

    scales = read(path)
    if found is None:
        found = [judge_scale(scale, claim_folders) for scale in scales]
    command = (f"lengthgen findings --scales {path}" + "".join(f" --claims {folder}" for folder in claim_folders)
               + (f" --readme {readme}" if readme else "")) + (
        f" --markdown {markdown_file}" if markdown_file else "")
    if markdown_file is not None:
        write_text(markdown_file, as_page(scales, found, command) + "\n")
    if readme is not None:
        table = as_table(scales, found)
        if markdown_file is not None:
            link = Path(os.path.relpath(markdown_file, Path(readme).parent)).as_posix()
            table += ("\n\nEach cell: the verdict and the number that decided it. Criteria, numbers and runs: "
                      f"[{link}]({link}).")
        put_in_readme(readme, table)
    return as_text(scales, found)
