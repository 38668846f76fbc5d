"""Whether the tables ``lengthgen findings`` judges were made with the config it judges them by.

Each finding is judged from its figure's tables (:func:`pipeline_src.planning.studies.figure_inputs`) with the
figure's spec, both taken from the config: tables made with another config are judged at the wrong
lengths or k_test, or fail to read (an influence table of another context and k_max does not pass
the schema this config gives). So before judging, each table's provenance chain (the config subset
of every job upstream of it, :func:`pipeline_src.provenance.sidecars.upstream_values`) is compared
with the specs this config's jobs would run with, as the report's landing page compares a figure's
(:func:`pipeline_src.runs.landing.value_differences`). The chain is read in the results folder
judged (records name their inputs under ``results/``, relative to the run's working directory), so
a run's own folder moved or kept elsewhere is compared with its own upstream files. A model whose
weights are not there (a GPU machine's results brought back without them) is compared by the
record of its ``model.json``, which its training wrote with the same config. Tables without a
record (made by hand) add nothing to compare; missing tables stay "no results".

Where a table differs, the command stops with one line naming the table and the first field that
differs, and the ``--configfile``s to pass if a shipped layering (``config/config.yaml`` alone,
with one file of ``config/``, or two in either order) gives every table's record. It does not judge
with that layering itself: the records do not name the config files, so a match is inferred from
the jobs' specs, which leave out the fields only the figure job reads (Figure 4's bootstrap, say);
and a verdict of another config than the one asked for could land in ``--readme`` or ``--export``
unnoticed. One more run of the command with the named file judges the same tables knowingly.

``lengthgen provenance`` names the shipped layering a figure matches the same way
(:func:`figure_match`), from the figure's own record: its spec and what its inputs were made from.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable

from ..config.layers import BASE_CONFIG, ConfigError
from ..findings.claim_file import claims_of
from ..planning import paths
from ..provenance.sidecars import upstream_values
from .landing import difference_text, expected_values, figure_differences, value_differences


class ConfigMismatch(ValueError):
    """Result tables made with another config than the one they would be judged by (one line)."""


def finding_tables(config: dict, results: Path) -> dict[str, list[Path]]:
    """The tables each figure of a claim that ``config`` draws reads under ``results`` (figure -> its
    tables there, :func:`pipeline_src.planning.studies.figure_inputs`; claims in order, each figure once)."""
    from ..planning.studies import figure_inputs, study_of

    figures = dict.fromkeys(claim.figure for claim in claims_of(config))
    return {figure: figure_inputs(config, figure, results) for figure in figures
            if figure in study_of(figure).figures(config)}


def first_difference(config: dict, results: Path) -> tuple[dict[str, list[Path]], tuple[Path, str] | None]:
    """The tables ``config``'s findings read under ``results`` (:func:`finding_tables`), and the first
    of them (findings in order, each figure's tables in order) that records a config value
    ``config`` does not give its job, with "table: made with rule field=value, the config says
    value" (None where every table matches or has no record)."""
    from ..planning.studies import study_of

    tables = finding_tables(config, results)
    locate = paths.locate_under(results)
    for figure, inputs in tables.items():
        study = study_of(figure)
        expected = expected_values(config, study, figure) if inputs else {}
        for table in inputs:
            made_with = upstream_values([table], locate, paths.same_job)
            differences = value_differences(made_with, expected, study.train_rule)
            if differences:
                return tables, (Path(table), f"{table}: {difference_text(differences[0])}")
    return tables, None


def shipped_layerings(folder: Path) -> list[tuple[Path, ...]]:
    """The ``--configfile``s the shipped configs are run with: none, each file of ``folder`` but the
    base config, then each two of them in either order (``mid.yaml mid_names.yaml``)."""
    files = sorted(path for path in folder.glob("*.yaml") if path.name != BASE_CONFIG.name)
    return [(), *((path,) for path in files), *itertools.permutations(files, 2)]


def shipped_match(accepts: Callable[[dict], bool], given: tuple[Path, ...] | None = None) -> tuple[Path, ...] | None:
    """The first shipped layering (:func:`shipped_layerings` of ``config/``) other than ``given``
    whose config ``accepts``; None if none does."""
    from ..planning.load_config import load_config

    for layering in shipped_layerings(BASE_CONFIG.parent):
        if given is not None and layering == tuple(Path(path) for path in given):
            continue
        try:
            config = load_config(layering)
        except (ConfigError, ValueError):  # a pair that is no valid config together
            continue
        if accepts(config):
            return layering
    return None


def layering_text(layering: tuple[Path, ...]) -> tuple[str, str]:
    """A shipped layering as a reader names it (``config/config.yaml``, or its files) and the
    options that judge it (``no --configfile``, or one ``--configfile`` per file: lengthgen's
    commands take one file per option)."""
    if not layering:
        return str(BASE_CONFIG), "no --configfile"
    return " ".join(str(path) for path in layering), " ".join(f"--configfile {path}" for path in layering)


def figure_match(figure: str, record: dict) -> tuple[Path, ...] | None:
    """The first shipped layering that draws ``figure`` as its provenance ``record`` says it was
    drawn: with the same spec, from inputs made with the config values it recorded (``made_with``;
    :func:`pipeline_src.runs.landing.figure_differences` finds none); None if none does."""
    from ..planning.studies import study_of

    study = study_of(figure)
    return shipped_match(lambda config: figure in study.figures(config)
                         and not figure_differences(config, study, figure, record))


def check(config: dict, results: Path, configfiles: tuple[Path, ...]) -> dict[str, list[Path]]:
    """The tables ``config``'s findings read under ``results`` (:func:`finding_tables`), where every
    one was made with ``config`` (``config/config.yaml`` with ``configfiles`` over it) or has no
    record; else a ConfigMismatch naming the first that was not, and the ``--configfile``s to pass
    instead."""
    tables, found = first_difference(config, results)
    if found is None:
        return tables
    table, found = found

    def reads_it_alike(other: dict) -> bool:  # every table matches, the one that differs here among them
        read, differs = first_difference(other, results)
        return differs is None and any(table in inputs for inputs in read.values())
    layering = shipped_match(reads_it_alike, configfiles)
    if layering is None:
        hint = "pass the --configfile(s) these results were made with"
    else:
        name, option = layering_text(layering)
        hint = f"these results look like {name}'s: pass {option}"
    raise ConfigMismatch(f"{found}; {hint}")
