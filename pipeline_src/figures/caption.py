"""A figure's caption, written from the figure's own provenance record, never from the config of
whoever makes the report.

The figure job renders its description (a Jinja template, ``workflow/report/<figure>.rst``) and a
"This run" block into ``<figure>.caption.rst`` beside the figure; ``snakemake --report`` bundles that
file as the figure's caption. The description and the "This run" block read only the figure's
record: its spec (``spec``) and what its inputs were made from (``made_with``,
:func:`pipeline_src.provenance.sidecars.upstream_values`): seeds, sizes, steps, samples and code
versions. A template names an upstream value as ``value("train", "model.d_model")`` (the rule, then
the config field); a field whose value differs between the figure's runs lists every value and says
so. A figure that shows one of the paper's findings also states its verdict, criterion and numbers
after the description, judged from the figure's own spec and tables
(:func:`pipeline_src.findings.judge.caption`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..provenance.sidecars import read_record
from ..storage.atomic import write_text

CODE = """\
Made by lengthgen {{ code.package_version }} at git commit ``{{ code.git_commit }}``{{ dirty(code.git_dirty) }}
{%- if upstream_commits %}; its inputs at {{ upstream_commits }}{% endif %}. The figure file:
``{{ artifact.path }}``, sha256 ``{{ artifact.sha256 }}``. Every config value, seed and input hash:
``lengthgen provenance --config {{ artifact.path }}``.
"""


class Values:
    """The upstream values of a figure's record, as caption text."""

    def __init__(self, made_with: dict[str, dict[str, list]]):
        self.made_with = made_with

    def has(self, rule: str, key: str) -> bool:
        """Whether the record holds a value of ``key`` from ``rule``."""
        return bool(self.made_with.get(rule, {}).get(key))

    def values(self, rule: str, key: str) -> list:
        found = self.made_with.get(rule, {}).get(key)
        if not found:
            raise KeyError(f"the figure's record has no value of {key!r} from rule {rule!r} "
                           f"(rules recorded: {sorted(self.made_with)})")
        return found

    def value(self, rule: str, key: str, noun: str = "") -> str:
        """The value, or every value and "(differs between runs)"; ``noun`` (e.g. "layers") after it."""
        found = self.values(rule, key)
        text = ", ".join(_text(item) for item in found) + (f" {noun}" if noun else "")
        return text if len(found) == 1 else f"{text} (differs between runs)"

    def count(self, rule: str, key: str, noun: str) -> str:
        """The value and ``noun``, plural unless the value is 1 ("1 layer", "2 layers")."""
        return self.value(rule, key, noun + ("" if self.values(rule, key) == [1] else "s"))


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _dirty(flag: bool | None) -> str:
    return {True: " with uncommitted changes", False: "", None: " (dirty flag unknown)"}[flag]


def render(template: str, record: dict, run: str, finding: str = "") -> str:
    """The caption of the figure whose record is ``record``: ``template`` (its description), the
    paper's finding it shows as judged from its tables (``finding``, a paragraph; "" for none), the
    "This run" block ``run`` (a template: its study's, :attr:`pipeline_src.planning.study.Study.caption_run`),
    and the code that made it."""
    import jinja2

    made_with = record.get("made_with", {})
    values = Values(made_with)
    commits = sorted({commit for fields in made_with.values() for commit in fields.get("code.git_commit", [])}
                     - {record["code"]["git_commit"]})
    context = {"spec": record["config"], "value": values.value, "count": values.count, "has": values.has,
               "dirty": _dirty,
               "code": record["code"], "artifact": record["artifact"],
               "upstream_commits": ", ".join(f"``{commit}``" for commit in commits)}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    parts = [env.from_string(part).render(context) for part in (template.rstrip("\n") + "\n", run, CODE)]
    if finding:  # text, not a template
        parts.insert(1, finding + "\n")
    return "\n".join(parts)


def write_caption(template: Path, figure: Path, out: Path, run: str, finding: str = "") -> None:
    """Render the caption of ``figure`` (from its provenance record) with the description
    ``template``, the "This run" block ``run`` and the paragraph ``finding`` into ``out``."""
    text = render(Path(template).read_text(), read_record(figure), run, finding)
    if "{{" in text or "{%" in text:  # Snakemake renders the caption as a template once more
        raise ValueError(f"{out}: the rendered caption still holds template syntax ('{{{{' or '{{%')")
    write_text(Path(out), text)
