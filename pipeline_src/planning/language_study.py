"""The natural-language analysis as a study (:class:`pipeline_src.planning.study.Study`), switched
by ``language.enabled``: Figure 4 from the influence table, and (with ``pose.enabled``) our PoSE
figure from every language model's evaluation tables too. Its jobs and their specs:
:mod:`.language_jobs`; its rules: ``workflow/rules/language.smk``."""

from __future__ import annotations

import os
from shlex import quote

from ..provenance.code_digest import stage_digest
from . import language_jobs as lang
from . import paths
from .language_inputs import is_gguf
from .study import Study

FIGURE4, POSE_FIGURE = lang.LANGUAGE_FIGURES
DRAW = {FIGURE4: "pipeline_src.figures.figure4:plot", POSE_FIGURE: "pipeline_src.figures.language_pose:plot"}

# The "This run" block of a language figure's caption (pipeline_src/figures/caption.py renders it).
CAPTION_RUN = """\
{% if "from_summary" in spec -%}
**This run** (from the figure's provenance): drawn from the run summary ``{{ spec.from_summary }}``, the
per-target losses of every part of a draw that ``lengthgen findings --export`` kept (a summary keeps numbers,
not provenance: the model, corpus and analysis are those of the config the summary was exported with).
{% else -%}
**This run** (from the provenance of the figure and of every file it was made from):
{% if has("language_train", "seed") -%}
language model seed {{ value("language_train", "seed") }} (split seed \
{{ value("language_corpus", "corpus.split_seed") }},
target seed {{ value("language_influence", "seed") }}, bootstrap seed {{ spec.seed }}); corpus
{{ value("language_corpus", "corpus.source") }}; d_model {{ value("language_train", "model.d_model") }},
{{ count("language_train", "model.n_layer", "layer") }}, {{ count("language_train", "model.n_head", "head") }};
{{ value("language_train", "train.steps") }} training steps of batch
{{ value("language_train", "train.batch_size") }} at lr {{ value("language_train", "train.lr") }};
{%- else -%}
the pretrained model {{ value("language_influence", "hf_model") }} (split seed
{{ value("language_corpus", "corpus.split_seed") }}, target seed {{ value("language_influence", "seed") }},
bootstrap seed {{ spec.seed }}); corpus {{ value("language_corpus", "corpus.source") }};
{%- endif %} tokenizer
{% if has("language_corpus", "tokenizer.vocab_size") %}of {{ value("language_corpus", "tokenizer.vocab_size") }} tokens
{%- else %}{{ value("language_corpus", "tokenizer.path") }}{% endif %}; \
{{ value("language_influence", "n_targets") }} analysed targets,
{{ value("language_influence", "selection") }} selection up to k = {{ value("language_influence", "k_max") }}.
{% endif -%}
"""


def influence_model_input(config: dict) -> str:
    """The file standing for the model the influence analysis reads: our main model's weights, a
    local Hugging Face folder's config.json, or a GGUF model's file."""
    hf_model = lang.hf_model(config)
    if not hf_model:
        return paths.language_train_outputs(lang.MAIN)["model"]
    return lang.model_file(hf_model) if is_gguf(hf_model) else f"{hf_model}/config.json"


def influence_model_option(config: dict, model_file: str) -> str:
    """The influence command's option naming that model (a shell-quoted folder)."""
    hf_model = lang.hf_model(config)
    return f"--hf-model {quote(hf_model)}" if hf_model else f"--model-dir {quote(os.path.dirname(model_file))}"


class LanguageStudy(Study):
    """The natural-language analysis (docs/language.md)."""

    caption_run = CAPTION_RUN
    train_rule = "language_train"

    def all_figures(self) -> tuple[str, ...]:
        return lang.LANGUAGE_FIGURES

    def figures(self, config: dict) -> list[str]:
        return lang.figures(config)

    def check(self, config: dict) -> None:
        lang.check(config)

    def figure_spec(self, config: dict, figure: str) -> dict:
        return lang.figure_spec(config, figure)

    def figure_tables(self, config: dict, figure: str) -> list[str]:
        """Figure 4 reads the influence table (or its parts', or a run summary of them:
        ``figure.from_summary``); our PoSE figure also every model's evaluation tables."""
        influence = [paths.influence_table(part) for part in lang.influence_parts(config)]
        if figure == FIGURE4:
            return [lang.from_summary(config)] if lang.from_summary(config) else influence
        evaluated = [paths.language_eval_outputs(lm) for lm in lang.evaluated_models(config)]
        return ([tables["positions"] for tables in evaluated] + [tables["targets"] for tables in evaluated]
                + influence)

    def made_from(self, config: dict, figure: str) -> list[str]:
        """The tables, the token stream and tokenizer, and the models: the analysed one (none for a
        Hugging Face model) and, for our PoSE figure, every evaluated one; a run summary alone for Figure 4
        drawn from one."""
        if figure == FIGURE4 and lang.from_summary(config):
            return self.figure_tables(config, figure)  # the summary: nothing of this run's made it
        models = [model for model in [lang.analysed_model(config)] if model]
        if figure != FIGURE4:
            models = list(dict.fromkeys([*models, *lang.evaluated_models(config)]))
        return [*self.figure_tables(config, figure), paths.TOKENIZER, paths.TOKENS,
                *(path for lm in models for path in paths.language_train_outputs(lm).values())]

    def upstream_specs(self, config: dict, figure: str) -> dict[str, list[dict]]:
        return lang.job_specs(config)

    def category(self, figure: str) -> str:
        return lang.LANGUAGE

    def figure_digest(self, figure: str) -> str:
        return stage_digest("language_figures")

    def draw_function(self, figure: str) -> str:
        return DRAW[figure]
