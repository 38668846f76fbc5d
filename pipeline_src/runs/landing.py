"""The landing page of ``snakemake --report``: first the paper's findings as the run's tables decide
them (a section the Snakefile hands over: :mod:`.run_findings` judges them and reads this module's
comparisons, so this module does not import it), then the checkout making the report (git commit,
dirty flag, package and library versions), whether each figure was made with the config the report
was made with, the figures resting on a file adopted as it is (:mod:`.adoption`), and the cells
under ``results/`` that did not finish.

Each figure's caption states what that figure was made with (its own provenance record:
:mod:`pipeline_src.figures.caption`); this page compares those records with the report's config,
so a report made with another config than its figures says so. The comparison reads records
only: the figure's spec against the one this config gives, and every config value recorded
upstream of it (``made_with``) against the values this config's jobs would run with.

The Snakefile passes the page to the report's description template through ``config`` (the only
thing Snakemake gives that template), as a :class:`LandingPage` of the config and the pipeline's
studies (:data:`pipeline_src.planning.studies.STUDIES`): an empty string to anything that serialises the
config, its text made when the template prints it, at report time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..planning import paths
from ..planning.study import Study
from ..provenance.records import code_version, library_versions
from ..provenance.sidecars import add_values, read_record
from ..storage.canonical import canonical_json, config_hash
from .adoption import file_note
from .cell_status import diff_fields, unfinished_cells

# Snakemake's page template centres the page's content vertically in a window-high box: a landing
# page taller than the window would start above the window's top, out of reach of the scroll bar.
# This style (in the page's own HTML, so only while the page is shown) aligns it to the top instead.
TOP_ALIGNED = [".. raw:: html", "", "   <style>.h-screen.items-center { align-items: flex-start; }</style>", ""]


def expected_values(config: dict, study: Study, figure: str) -> dict[str, dict[str, list]]:
    """Per rule upstream of ``figure``, each config field's values under ``config`` (the shape of a
    figure record's ``made_with``, without code versions)."""
    values: dict[str, dict[str, list]] = {}
    for rule, rule_specs in study.upstream_specs(config, figure).items():
        for spec in rule_specs:
            add_values(values.setdefault(rule, {}), spec)
    return values


def values_text(values: list) -> str:
    """Config values as a reader sees them: canonical JSON, comma-separated."""
    return ", ".join(canonical_json(value) for value in values)


def value_differences(made_with: dict[str, dict[str, list]], expected: dict[str, dict[str, list]],
                      first_rule: str = "") -> list[tuple[str, str, list, list]]:
    """Each config value recorded in ``made_with`` (a figure record's, or what
    :func:`pipeline_src.provenance.sidecars.upstream_values` finds upstream of some tables) that
    ``expected`` (:func:`expected_values`) does not give its rule, as (rule, field, the values
    recorded, the values expected); ``first_rule``'s first (the models' sizes and training: the
    differences a reader looks for). Code versions are not compared."""
    found = []
    for rule, fields in sorted(made_with.items(), key=lambda item: (item[0] != first_rule, item[0])):
        for key, values in fields.items():
            if key.startswith("code."):
                continue
            allowed = expected.get(rule, {}).get(key, [])
            if any(value not in allowed for value in values):
                found.append((rule, key, values, allowed))
    return found


def difference_text(difference: tuple[str, str, list, list], whose: str = "the config") -> str:
    """One of :func:`value_differences` in words: "made with train model.d_mlp=64, the config says 256"."""
    rule, key, values, allowed = difference
    return f"made with {rule} {key}={values_text(values)}, {whose} says {values_text(allowed) or 'unset'}"


def figure_differences(config: dict, study: Study, figure: str, record: dict, limit: int = 4) -> list[str]:
    """How ``figure`` of ``study`` (its provenance ``record``) differs from what ``config`` would
    make: its spec, then each upstream value the figure recorded that ``config`` does not give its
    rule."""
    expected_spec = study.figure_spec(config, figure)
    found = []
    if record.get("config_hash") != config_hash(expected_spec):
        found.append(f"figure spec, figure -> this config ({diff_fields(record.get('config', {}), expected_spec)})")
    differences = value_differences(record.get("made_with", {}), expected_values(config, study, figure),
                                    study.train_rule)
    found += [f"{rule} {key}: {values_text(values)} in the figure, {values_text(allowed) or 'unset'} "
              "in this config" for rule, key, values, allowed in differences]
    return found[:limit] + ([f"{len(found) - limit} more"] if len(found) > limit else [])


def figures_section(config: dict, studies: tuple[Study, ...]) -> list[str]:
    """One bullet per figure of ``config``: made with it, made with another, or not made."""
    lines = []
    for study, figure in ((each, name) for each in studies for name in each.figures(config)):
        png = paths.figure_files(figure)[0]
        if not Path(png).exists():
            lines.append(f"- **{figure}**: not made yet (no ``{png}``)")
            continue
        try:
            record = read_record(png)
        except (OSError, ValueError) as err:
            lines.append(f"- **{figure}**: no readable figure or record ({err})")
            continue
        differences = figure_differences(config, study, figure, record)
        made = f"code ``{record['code']['git_commit'][:12]}``{' (dirty)' if record['code'].get('git_dirty') else ''}"
        if differences:
            lines.append(f"- **{figure}: made with another config than this report's** ({made}): "
                         + "; ".join(differences))
        else:
            lines.append(f"- **{figure}**: made with this config ({made})")
    return lines or ["- none (this config has no figure)"]


def adopted_section(config: dict, studies: tuple[Study, ...]) -> list[str]:
    """One bullet per figure of ``config`` that rests on a file adopted as it is (``lengthgen adopt``),
    naming those files; "none" where no figure does."""
    lines = []
    for figure in (figure for study in studies for figure in study.figures(config)):
        if text := file_note(paths.figure_files(figure)[0]):
            lines.append(f"- **{figure}**: {text}")
    return lines or ["- none: every figure rests on files as their jobs made them"]


def _bullets(items: str | list[str]) -> list[str]:
    return ["  none"] if isinstance(items, str) else [f"  - ``{item}``" for item in items]


def render(config: dict, studies: tuple[Study, ...], findings: Callable[[dict], list[str]] | None = None) -> str:
    """The landing page as reStructuredText, led by the lines ``findings(config)`` gives, if any."""
    code = code_version()
    dirty = {True: "yes", False: "no", None: "unknown"}[code["git_dirty"]]
    libraries = "; ".join(f"{name} {version or 'not installed'}" for name, version in library_versions().items())
    lines = [*TOP_ALIGNED,
             "What this run's tables say of the paper's findings; then the checkout that made this report,",
             "whether each figure was made with the config this report was given (each figure's caption",
             "states what it was made with), and the cells that did not finish.", "",
             *(findings(config) if findings else []),
             "**Code and libraries**", "",
             f":git commit: ``{code['git_commit']}``",
             f":uncommitted changes: {dirty}",
             f":lengthgen version: {code['package_version']}",
             f":library versions: {libraries}", "",
             "**Figures and this report's config**", "", *figures_section(config, studies), "",
             "**Results resting on files adopted as they are**", "", *adopted_section(config, studies), "",
             "**Cells that did not finish**", ""]
    for title, items in unfinished_cells(Path(paths.RESULTS)).items():
        lines += [f"- {title}:", "", *_bullets(items), ""]
    return "\n".join(lines) + "\n"


class LandingPage(str):
    """The landing page of a config and the pipeline's studies (led by the lines ``findings`` makes of
    the config), made when printed (``str()``); as a string value (JSON, YAML), empty."""

    def __new__(cls, config: dict | None = None, studies: tuple[Study, ...] = (),
                findings: Callable[[dict], list[str]] | None = None):
        page = super().__new__(cls, "")
        page.config, page.studies, page.findings = config, studies, findings
        return page

    def __str__(self) -> str:
        return render(self.config, self.studies, self.findings)


def counts() -> dict[str, int]:
    """The numbers under the landing page's text (``--report-metadata``: Snakemake shows the page
    first only when there is metadata, and renders numbers, not text, as written)."""
    unfinished = unfinished_cells(Path(paths.RESULTS))
    return {"figures under results/figures": len(list(Path(paths.RESULTS, "figures").glob("*.png"))),
            **{title: 0 if isinstance(items, str) else len(items) for title, items in unfinished.items()}}
