"""Findings across scales: the same four findings judged from several committed run summaries side
by side (``lengthgen findings --scales docs/findings/scales.yaml``), e.g. the default run on 2 CPU
cores, the GPU window's seeds and Cho et al.'s size on a GPU.

A scales file is a YAML list; each entry one column of the README's findings table::

    - name: CPU, default config          # the column's heading
      summary: default_run.csv           # written by `lengthgen findings RESULTS --export`; relative to the file
      configfiles: []                    # the --configfile(s) the run was made with (from the project root)
      device: 2 cores of an AMD EPYC (AVX2)
      date: "2026-11-26"                 # when its runs were made

Each summary is judged with its own config, exactly as ``--from-summary`` judges it. A scale whose
summary does not exist yet shows as :data:`NO_RESULTS`, never as a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..findings import verdicts as judged
from ..findings.finding import NOT_CONFIGURED_CRITERION

NO_RESULTS = "no results yet"
NOT_RUN = "not run at this scale"  # the scale's config runs nothing the finding compares
DETAILS = ("finding", "criterion", "numbers", "verdict")  # the columns of a scale's folded table
FIELDS = {"name": str, "summary": str, "configfiles": list, "device": str, "date": str}


class ScalesError(ValueError):
    """A scales file that cannot be read (one line naming the file, the entry and the field)."""


@dataclass(frozen=True)
class Scale:
    """One column of the findings table: a run summary and what it was made with."""

    name: str
    summary: Path
    configfiles: tuple[Path, ...]
    device: str
    date: str

    def described(self) -> str:
        """"name: device, date, config files" for the heading of the scale's numbers."""
        config = " ".join(str(path) for path in ("config/config.yaml", *self.configfiles))
        return f"{self.name}: {self.device}, {self.date}, {config}"


def read(path: Path) -> list[Scale]:
    """The scales of the scales file ``path``, checked field by field."""
    try:
        entries = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
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
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            raise ScalesError(f"{where}: unknown field {unknown[0]!r} (a scale has {', '.join(FIELDS)})")
        scales.append(Scale(entry["name"], Path(path).parent / entry["summary"],
                            tuple(Path(file) for file in entry["configfiles"]), entry["device"], entry["date"]))
    names = [scale.name for scale in scales]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated:
        raise ScalesError(f"{path}: two scales named {repeated!r}")
    return scales


def judge(scale: Scale) -> list[judged.Finding] | None:
    """The four findings of ``scale``'s summary judged with its config; None: no summary yet."""
    from ..config.load import load_config
    from .run_findings import findings, summary_rows

    if not scale.summary.is_file():
        return None
    config = load_config(scale.configfiles)
    return findings(config, summary_rows(config, scale.summary))


def cell(row: judged.Finding) -> str:
    """A finding's verdict at a scale, or :data:`NOT_RUN` where the scale's config runs nothing for it."""
    return NOT_RUN if row.criterion == NOT_CONFIGURED_CRITERION else row.verdict


def as_markdown(scales: list[Scale], found: list[list[judged.Finding] | None]) -> str:
    """One table of verdicts (a column per scale), then each judged scale's criteria and numbers in a
    folded section of its own."""
    import polars as pl

    from ..findings.tables import markdown

    claims = next((rows for rows in found if rows is not None), None)
    if claims is None:
        raise ScalesError("no scale has a summary yet: nothing to judge")
    table = {"finding": [row.finding for row in claims], "claim": [row.claim for row in claims]}
    for scale, rows in zip(scales, found):
        table[scale.name] = [cell(row) for row in rows] if rows is not None else [NO_RESULTS] * len(claims)
    details = []
    for scale, rows in zip(scales, found):
        if rows is not None:
            details += [f"<details><summary>{scale.described()}: criteria and numbers</summary>", "",
                        judged.as_markdown(rows, columns=DETAILS), "", "</details>"]
    return markdown(pl.DataFrame(table)) + "\n\n" + "\n".join(details)


def as_text(scales: list[Scale], found: list[list[judged.Finding] | None], width: int = 100) -> str:
    """Each finding's verdict at every scale, then per judged scale its findings as ``lengthgen
    findings`` prints them."""
    column = max(len(scale.name) for scale in scales)
    lines = []
    names = [row.finding for row in next((rows for rows in found if rows is not None), [])]
    for i, name in enumerate(names):
        for j, (scale, rows) in enumerate(zip(scales, found)):
            verdict = cell(rows[i]) if rows is not None else NO_RESULTS
            lines.append(f"{name if j == 0 else '':<4}{scale.name:<{column}}  {verdict}")
    blocks = ["\n".join(lines)]
    blocks += [f"== {scale.described()}\n{judged.as_text(rows, width)}"
               for scale, rows in zip(scales, found) if rows is not None]
    return "\n\n".join(blocks)


def report(path: Path, *, markdown_file: Path | None = None, readme: Path | None = None) -> str:
    """``lengthgen findings --scales``: every scale of the scales file ``path`` judged, as text; the
    Markdown also written to ``markdown_file`` and between the findings markers of ``readme``."""
    from ..storage.atomic import write_text
    from .run_findings import put_in_readme

    scales = read(path)
    found = [judge(scale) for scale in scales]
    if markdown_file is not None or readme is not None:
        table = as_markdown(scales, found)
        if markdown_file is not None:
            write_text(markdown_file, table + "\n")
        if readme is not None:
            put_in_readme(readme, table)
    return as_text(scales, found)
