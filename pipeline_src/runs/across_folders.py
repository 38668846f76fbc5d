"""Claims whose sides are runs of different configs (a side's ``config``: docs/claims.md), judged from
several results folders or run summaries: ``lengthgen findings RESULTS --also DIR``, ``lengthgen findings
--from-summary FILE --also FILE=CONFIGFILES``, or a scale's ``also`` (:mod:`.scales`).

Each side's config files, over ``config/config.yaml`` as the pipeline layers them, give the figure spec
its runs are judged by and the values each job upstream of the figure runs with
(:func:`.landing.expected_values`). Its runs are read from the one source given that was made with those
values: a results folder whose tables' provenance records them (each value recorded is one the config
gives, and each field the config gives every job of a recorded rule is recorded: runs with and without a
setting differ by a field only one of them records), or a run summary whose config files, given with it, give them (a
summary records no config). A side no source was made with, two sources made with it, or a source made
with it that holds none of the side's runs stop the command with one line; a claim none of whose sides any
source was made with is not judged ("no results"), as a claim the config runs nothing for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..findings import run_summary
from ..findings.claim_file import Claim, Side
from ..findings.figure_rows import figure_rows
from ..findings.side_runs import Across, SideRuns
from ..planning import paths
from .landing import difference_text, expected_values, value_differences, values_text

NONE_MADE = "none of the results given was made with the config of either side"


class AcrossError(ValueError):
    """Results that cannot give a claim across configs its sides (one line naming the file, field or folder)."""


@dataclass(frozen=True)
class Source:
    """Results given to ``lengthgen findings``: a results folder, or a run summary with the config files
    it was made with (``configfiles``; a summary records none)."""

    path: Path
    configfiles: tuple[Path, ...] | None = None

    def __str__(self) -> str:
        return str(self.path)


def also(value: str) -> Source:
    """The source ``--also`` names: a results folder (``DIR``), or a run summary and the config files it
    was made with, over config/config.yaml (``FILE=CONFIGFILE,CONFIGFILE``; ``FILE=`` for none)."""
    name, given, files = value.partition("=")
    path = Path(name)
    if path.is_dir():
        if given:
            raise AcrossError(f"--also {value}: a results folder's config is read from its tables' provenance; "
                              f"give the folder alone (--also {path})")
        return Source(path)
    if not path.is_file():
        raise AcrossError(f"--also {value}: {path} is no results folder and no run summary")
    if not given:
        raise AcrossError(f"--also {value}: a run summary records no config; give the config files it was made "
                          f"with: --also {path}=config/a.yaml,config/b.yaml")
    return Source(path, tuple(Path(file) for file in files.split(",") if file))


class Sources:
    """The sources given, each read once: its configs, a summary's rows."""

    def __init__(self, sources: list[Source]) -> None:
        unique: dict[Path, Source] = {}
        for source in sources:  # a folder given twice is one source
            unique.setdefault(source.path.resolve(), source)
        self.sources = list(unique.values())
        self._configs: dict[tuple, dict] = {}
        self._summaries: dict[Path, pl.DataFrame] = {}

    def config(self, files: tuple, where: str) -> dict:
        """The config ``files`` give over config/config.yaml (an AcrossError naming ``where`` if none)."""
        from ..config.layers import ConfigError
        from ..planning.load_config import load_config

        if files not in self._configs:
            try:
                self._configs[files] = load_config([Path(file) for file in files])
            except (ConfigError, OSError, ValueError) as err:
                raise AcrossError(f"{where}: {str(err).splitlines()[0]}") from None
        return self._configs[files]

    def made_with(self, source: Source, config: dict, figure: str) -> tuple[dict, list[Path]]:
        """What ``source``'s results of ``figure`` were made with (per rule upstream, each field's values)
        and, for a results folder, the tables of ``config``'s figure it holds."""
        from ..planning.studies import figure_inputs, study_of
        from ..provenance.sidecars import upstream_values

        if source.configfiles is not None:
            made = self.config(source.configfiles, f"{source}'s config files")
            drawn = figure in study_of(figure).figures(made)
            return expected_values(made, study_of(figure), figure) if drawn else {}, []
        tables = figure_inputs(config, figure, source.path)
        return upstream_values(tables, paths.locate_under(source.path), paths.same_job), tables

    def rows(self, source: Source, spec: dict, tables: list[Path]) -> pl.DataFrame:
        """``source``'s rows of the runs and seeds of the figure ``spec``."""
        from ..findings.seed_summary import configured

        if source.configfiles is None:
            return figure_rows(spec, tables)
        if source.path not in self._summaries:
            self._summaries[source.path] = run_summary.read(source.path)
        return configured(spec, self._summaries[source.path])


def always_given(config: dict, study, figure: str) -> dict[str, set[str]]:
    """Per rule upstream of ``figure``, the fields ``config`` gives every job of it (a scheme's own fields,
    which some of its jobs have, left out: a folder without that scheme's runs does not record them)."""
    from ..provenance.sidecars import add_values

    found = {}
    for rule, specs in study.upstream_specs(config, figure).items():
        for spec in specs:
            fields: dict[str, list] = {}
            add_values(fields, spec)
            found[rule] = found[rule] & set(fields) if rule in found else set(fields)
    return found


def difference(made: dict, expected: dict, always: dict, first_rule: str) -> str:
    """The first config value the results record (``made``) that the side's config (``expected``) does not
    give, or field it gives every job of a recorded rule (``always``) that they do not record, in words
    ("" for none)."""
    differences = value_differences(made, expected, first_rule)
    if differences:
        return difference_text(differences[0], "the side's config")
    for rule in made:
        for key in sorted(always.get(rule, set()) - set(made[rule])):
            return f"made with {rule} {key} unset, the side's config says {values_text(expected[rule][key])}"
    return ""


def why_not(made: dict, tables: list[Path], source: Source, expected: tuple[dict, dict], study, figure: str) -> str:
    """Why ``source`` was not made with a side's config (``expected``: its values and the fields it always
    gives) ("" where it was)."""
    if source.configfiles is None and not tables:
        return f"no table of its {figure}"
    if not made:
        return "its tables record no config" if source.configfiles is None else f"its config files draw no {figure}"
    return difference(made, *expected, study.train_rule)


def side_across(claim: Claim, field: str, side: Side, sources: Sources) -> tuple[SideRuns | None, str]:
    """``side`` of ``claim`` (``field``: its place, ``compare[0].better``) as the sources hold it: its runs,
    read from the one source made with its config (None: none was; then why, per source)."""
    from ..findings.claim_runs import described, side_runs
    from ..findings.preregistration import summary_made, tables_made
    from ..planning.studies import study_of

    where = f"{claim.path}: field {field}.config"
    study = study_of(claim.figure)
    config = sources.config(side.config, where)
    if claim.figure not in study.figures(config):
        raise AcrossError(f"{where}: its config draws no {claim.figure}")
    spec = study.figure_spec(config, claim.figure)
    runs = side_runs(side, spec)
    if not runs:
        raise AcrossError(f"{where}: its config trains no {described(side)} of {spec['task']}")
    expected = expected_values(config, study, claim.figure), always_given(config, study, claim.figure)
    found, reasons = [], []
    for source in sources.sources:
        made, tables = sources.made_with(source, config, claim.figure)
        why = why_not(made, tables, source, expected, study, claim.figure)
        found += [(source, tables)] if not why else []
        reasons.append(f"{source}: {why}")
    if not found:
        return None, f"{where}: none of the results given was made with it ({'; '.join(reasons)})"
    if len(found) > 1:
        raise AcrossError(f"{where}: {found[0][0]} and {found[1][0]} were both made with it; give one of them")
    source, tables = found[0]
    rows = sources.rows(source, spec, tables)
    held = rows.join(pl.DataFrame(runs, schema=["variant", "scheme"], orient="row"), on=["variant", "scheme"],
                     how="semi")
    if held.is_empty():
        raise AcrossError(f"{source}: no results of {', '.join(f'{s} ({v})' for v, s in runs)}, "
                          f"the runs of {claim.path} field {field} ({side.name!r}), though made with its config")
    made = tables_made(tables) if source.configfiles is None else summary_made(source.path, claim.figure)
    return SideRuns(side.name, spec, rows, source.path, tuple(made)), ""


def claim_across(claim: Claim, sources: Sources) -> Across:
    """``claim`` (its sides naming their config) as ``sources`` hold it."""
    sides: dict[tuple, SideRuns | None] = {}
    missing: dict[tuple, str] = {}
    for i, rule in enumerate(claim.compare):
        for label in ("better", "worse"):
            side = getattr(rule, label)
            if side.config not in sides:
                sides[side.config], why = side_across(claim, f"compare[{i}].{label}", side, sources)
                if why:
                    missing[side.config] = why
        better, worse = sides[rule.better.config], sides[rule.worse.config]
        if better and worse and better.source == worse.source:
            raise AcrossError(f"{claim.path}: field compare[{i}].worse.config: {worse.source} was made with it and "
                              "with better's config alike: the two configs make the same runs")
    if len(missing) == len(sides):
        return Across({}, NONE_MADE + " (RESULTS and --also, docs/claims.md)")
    if missing:
        raise AcrossError(next(iter(missing.values())))
    return Across(sides)


def resolve(claims: list[Claim], sources: list[Source]) -> dict[str, Across]:
    """Each claim of ``claims`` whose sides name their config, as ``sources`` hold it (the results judged,
    then those ``--also`` adds); an AcrossError where no claim's sides do."""
    across = [claim for claim in claims if claim.across]
    if not across:
        raise AcrossError(f"--also {sources[-1]}: no claim judged names a side's config (docs/claims.md); add "
                          "the folder of such a claim with --claims")
    given = Sources(sources)
    return {claim.name: claim_across(claim, given) for claim in across}
