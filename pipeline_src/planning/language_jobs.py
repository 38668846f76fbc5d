"""From the validated config's ``language`` section to the exact spec of each natural-language job.

The natural-language analysis (docs/language.md) runs when ``language.enabled`` is true. Its jobs:

* ``language_corpus``: corpus -> seeded train/held-out split -> tokenizer -> token stream;
* ``language_train``: one job per language model, through the same trainer as the synthetic
  tasks: ``main`` (rotary, context Lbar = ``context``) and, when ``pose.enabled``, ``short_rope``
  and ``short_pose`` (context ``pose.context``, default L = ``local``; plain rotary, and rotary
  with PoSE IDs below ``pose.target_length``, default Lbar);
* ``language_eval`` (when ``pose.enabled``): loss by position up to ``pose.eval_length``
  (default 2 Lbar) and the loss of every analysed target, per model;
* ``language_influence``: the influential-token analysis with the ``main`` model (or a local
  Hugging Face causal LM, ``analysis.hf_model``);
* figures ``figure4`` (paper) and ``language_pose`` (ours, when ``pose.enabled``).

Like :mod:`pipeline_src.planning.jobs`: pure and cheap, each function returns the config subset one job
uses and nothing more, so editing a value reruns exactly the jobs that use it.
"""

from __future__ import annotations

from pathlib import Path

from ..config.influence_config import part_span
from ..config.model_config import model_config
from ..devices.setting import device_setting
from .language_inputs import gguf_file, is_gguf, source_files

LANGUAGE = "language"
MAIN, SHORT_ROPE, SHORT_POSE = "main", "short_rope", "short_pose"
SCHEMES = {MAIN: "rope", SHORT_ROPE: "rope", SHORT_POSE: "rope_pose"}
LANGUAGE_FIGURES = ("figure4", "language_pose")
UNUSED_TRAIN_FIELDS = ("position_loss_weight", "pad_multiple", "length_grouping")  # windows are full, no ppc


class LanguageConfigError(ValueError):
    """A ``language`` section that passes the JSON schema but is inconsistent across fields."""


def enabled(config: dict) -> bool:
    return bool((config.get(LANGUAGE) or {}).get("enabled"))


def pose_enabled(config: dict) -> bool:
    return enabled(config) and config[LANGUAGE]["pose"]["enabled"]


def models(config: dict) -> list[str]:
    """The language models to train."""
    if not enabled(config):
        return []
    return [MAIN, SHORT_ROPE, SHORT_POSE] if pose_enabled(config) else [MAIN]


def hf_model(config: dict) -> str | None:
    """The pretrained model the influence analysis reads instead of ``main`` (``analysis.hf_model``:
    a local Hugging Face folder, a GGUF file or a shipped GGUF's name), or None."""
    return _section(config)["analysis"]["hf_model"]


def analysed_model(config: dict) -> str | None:
    """The language model the influence analysis reads: ``main``, or None for a Hugging Face model."""
    return None if hf_model(config) else MAIN


def evaluated_models(config: dict) -> list[str]:
    """The models whose loss by position and target losses are measured (for the PoSE figure)."""
    return models(config) if pose_enabled(config) else []


def figures(config: dict) -> list[str]:
    if not enabled(config):
        return []
    return list(LANGUAGE_FIGURES) if pose_enabled(config) else [LANGUAGE_FIGURES[0]]


def _section(config: dict) -> dict:
    return config[LANGUAGE]


def short_context(config: dict) -> int:
    """Training context of the two short models: ``pose.context``, or L."""
    section = _section(config)
    return section["pose"]["context"] or section["local"]


def pose_target_length(config: dict) -> int:
    """PoSE training IDs stay below this: ``pose.target_length``, or Lbar."""
    section = _section(config)
    return section["pose"]["target_length"] or section["context"]


def eval_length(config: dict) -> int:
    """Loss by position is measured at positions 0..eval_length-1: ``pose.eval_length``, or 2 Lbar."""
    section = _section(config)
    return section["pose"]["eval_length"] or 2 * section["context"]


def corpus_spec(config: dict) -> dict:
    """The corpus, split and tokenizer fields the token stream depends on (only the fields the chosen
    source and tokenizer use)."""
    section = _section(config)
    corpus = section["corpus"]
    spec_corpus = {key: corpus[key] for key in ("source", "path", "max_docs", "heldout_fraction", "split_seed")}
    if corpus["source"] == "c4":
        spec_corpus["c4_split"] = corpus["c4_split"]
    if corpus["source"] == "txt":
        spec_corpus["txt_unit"] = corpus["txt_unit"]
    tokenizer = section["tokenizer"]
    spec_tokenizer = {"path": tokenizer["path"]} if tokenizer["path"] else {"vocab_size": tokenizer["vocab_size"]}
    return {"corpus": spec_corpus, "tokenizer": spec_tokenizer}


def corpus_inputs(config: dict) -> list[str]:
    """Files the corpus job reads besides the installed packages: the source's files (all that
    match; ``max_docs`` may stop reading earlier) and a local tokenizer.json."""
    section = _section(config)
    corpus = section["corpus"]
    files = []
    if corpus["source"] != "default":
        files = [str(p) for p in source_files(corpus["source"], corpus["path"], corpus["c4_split"])]
    if section["tokenizer"]["path"]:
        files.append(model_file(section["tokenizer"]["path"]))
    return files


def model_file(name: str) -> str:
    """The file a tokenizer or model setting reads: a GGUF model's file (a shipped name resolved:
    :mod:`.language_inputs`), else the setting itself."""
    return str(gguf_file(name)) if is_gguf(name) else name


def train_spec(config: dict, model: str) -> dict:
    """The spec of one language model, for :func:`pipeline_src.training.train.train`."""
    if model not in SCHEMES:
        raise LanguageConfigError(f"unknown language model {model!r}; known: {list(SCHEMES)}")
    section = _section(config)
    context = section["context"] if model == MAIN else short_context(config)
    train = {key: value for key, value in section["train"].items() if key not in UNUSED_TRAIN_FIELDS}
    pose = model == SHORT_POSE
    return {"task": LANGUAGE, "variant": model, "scheme": SCHEMES[model], "seed": section["seed"],
            "device": device_setting(config), "context": context, "model": dict(section["model"]), "train": train,
            "positions": {"pose_chunks": section["pose"]["pose_chunks"] if pose else None,
                          "target_length": pose_target_length(config) if pose else context},
            "heldout": dict(section["heldout"])}


def eval_spec(config: dict) -> dict:
    """Loss by position and target losses (the same for every model)."""
    section = _section(config)
    analysis = section["analysis"]
    return {"eval_length": eval_length(config), "windows": section["pose"]["eval_windows"],
            "batch_size": analysis["batch_size"], "device": device_setting(config),
            "targets": {"context": section["context"], "local": section["local"],
                        **_draw(analysis, ("n_targets", "seed"))}}


def influence_spec(config: dict, part: int | None = None) -> dict:
    """The influential-token analysis: the fields of :class:`pipeline_src.language.influence_table.InfluenceConfig`
    plus ``hf_model`` (a local Hugging Face model folder, or null for our ``main`` model) and
    ``device``. Where ``analysis.screen`` is true, ``screen_gain``: the figure's gain threshold, the one
    the findings count gaining targets by (absent or false: no such field, the spec of before screening).
    Where the draw is analysed in parts (:func:`parts`), the spec of part ``part`` (1..parts) adds
    ``part``: {index, of}."""
    section = _section(config)
    analysis = section["analysis"]
    screen = {"screen_gain": section["figure"]["gain_threshold"]} if analysis.get("screen") else {}
    if (part is None) != (parts(config) == 1):
        raise LanguageConfigError(f"the influence analysis is in {parts(config)} part(s); part {part} is none of them")
    which = {} if part is None else {"part": {"index": part, "of": parts(config)}}
    return {"context": section["context"], "local": section["local"], "device": device_setting(config),
            **_draw(analysis, ("k_max", "selection", "n_targets", "seed", "batch_size", "null_draws", "hf_model")),
            **screen, **which}


def parts(config: dict) -> int:
    """How many parts (jobs) the influence analysis's draw is analysed in: ``analysis.parts``, or 1."""
    return _section(config)["analysis"].get("parts") or 1


def influence_parts(config: dict) -> list[int | None]:
    """The parts of the influence analysis (1..parts), or [None]: the whole draw in one job."""
    return [None] if parts(config) == 1 else list(range(1, parts(config) + 1))


def _draw(analysis: dict, keys: tuple[str, ...]) -> dict:
    """The fields ``keys`` of the config's analysis block, and ``leave_out`` where it is set (a spec
    without it is the spec of before the field existed: no job reruns)."""
    left_out = {"leave_out": analysis["leave_out"]} if analysis.get("leave_out") else {}
    return {**{key: analysis[key] for key in keys}, **left_out}


def job_specs(config: dict) -> dict[str, list[dict]]:
    """The spec of every language job of ``config``, by rule (as their records name it)."""
    return {"language_corpus": [corpus_spec(config)], "language_train": [train_spec(config, m) for m in models(config)],
            "language_eval": [eval_spec(config)],
            "language_influence": [influence_spec(config, part) for part in influence_parts(config)]}


def from_summary(config: dict) -> str | None:
    """The run summary Figure 4 is drawn from instead of the influence tables (``figure.from_summary``), or None."""
    return _section(config)["figure"].get("from_summary")


def figure_spec(config: dict, figure: str) -> dict:
    section = _section(config)
    fig = section["figure"]
    spec = {"context": section["context"], "local": section["local"], "k_max": section["analysis"]["k_max"],
            "gain_threshold": fig["gain_threshold"], "n_boot": fig["n_boot"], "seed": fig["seed"]}
    if figure == "figure4":
        spec["plot"] = fig["plot"]
        spec.update({"from_summary": fig["from_summary"]} if fig.get("from_summary") else {})
    elif figure == "language_pose":
        spec.update(recover_fraction=fig["recover_fraction"], short_context=short_context(config),
                    target_length=pose_target_length(config))
    else:
        raise LanguageConfigError(f"unknown language figure {figure!r}; known: {list(LANGUAGE_FIGURES)}")
    return spec


def check(config: dict) -> None:
    """Cross-field checks of the ``language`` section; errors name the field."""
    if not enabled(config):
        return
    section = _section(config)
    corpus = section["corpus"]
    for model in models(config):  # a tokenizer.json's own size is known once read; no rule depends on it
        try:
            model_config(train_spec(config, model), section["tokenizer"]["vocab_size"])
        except ValueError as err:
            raise LanguageConfigError(f"language.{err}") from None
    if corpus["source"] == "default" and corpus["path"] is not None:
        raise LanguageConfigError("language.corpus.path must be null for source 'default' (the corpus ships "
                                  "with the gensim package)")
    if corpus["source"] != "default" and not corpus["path"]:
        raise LanguageConfigError(f"language.corpus.path is required for source {corpus['source']!r}")
    if section["local"] >= section["context"]:
        raise LanguageConfigError(f"language.local={section['local']} must be smaller than "
                                  f"language.context={section['context']} (there must be far tokens)")
    far = section["context"] - section["local"]
    if section["analysis"]["k_max"] > far:
        raise LanguageConfigError(f"language.analysis.k_max={section['analysis']['k_max']} exceeds the "
                                  f"{far} far tokens (context - local)")
    analysis = section["analysis"]
    try:
        part_span(analysis["n_targets"], analysis["batch_size"], 1, parts(config))
    except ValueError as err:
        raise LanguageConfigError(f"language.analysis.{err}") from None
    summary = from_summary(config)
    if summary and not (Path(summary).is_file() and Path(summary).suffix == ".csv"):
        raise LanguageConfigError(f"language.figure.from_summary={summary!r}: no such run summary (a .csv that "
                                  "lengthgen findings --export wrote)")
    if pose_enabled(config):
        if pose_target_length(config) <= short_context(config):
            raise LanguageConfigError(f"language.pose.target_length={pose_target_length(config)} must exceed the "
                                      f"short models' training context {short_context(config)} (pose.context)")
        if eval_length(config) < section["context"]:
            raise LanguageConfigError(f"language.pose.eval_length={eval_length(config)} is shorter than "
                                      f"language.context={section['context']}")
