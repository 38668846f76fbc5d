"""The JSON schema of each job's spec (the config subset a ``lengthgen`` step takes as ``--spec``),
assembled from the parts of the config schema (:func:`pipeline_src.config.schema.part`): each spec
field has the rule of the config field the spec builders take it from (:mod:`.jobs`,
:mod:`pipeline_src.planning.language_jobs`), so a step run by hand is checked by the rules the config
check applies to the pipeline's jobs, unknown keys included. A spec holds resolved values where the
config may say null (``positions.target_length``: the spec holds the length itself). Its required
fields are those its step reads without a default (``device``: ``auto`` when absent). Torch-free.
"""

from __future__ import annotations

import functools

from ..config.schema import config_schema, part
from ..schemes import get_scheme
from ..tasks import get_task
from . import jobs, paths
from . import language_jobs as lang

MODEL_JOB_DEFAULTS = ("device",)  # a model job runs with device auto when its spec names none


def spec(fields: dict, optional: tuple[str, ...] = ()) -> dict:
    """A spec's schema: an object of exactly ``fields``, each required unless ``optional``; with the
    config schema's ``$defs``, which its parts may refer to."""
    return {"$defs": config_schema()["$defs"], **block(fields, optional)}


def block(fields: dict, optional: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": fields,
            "required": [name for name in fields if name not in optional]}


def resolved(schema: dict) -> dict:
    """A rule taking ``null`` (the config's "derive it") narrowed to the value a spec holds instead."""
    return {**schema, "type": "integer"}


def const(value) -> dict:
    return {"const": value}


def heads(*names: str) -> dict:
    """What picks a spec's schema (its task, scheme or split), checked first: an object whose
    ``names`` have the rules of those config fields, other keys unchecked."""
    rules = {"task": part("tasks", "[]"), "scheme": part("scheme"), "split": {"enum": ["train", "eval"]}}
    return {"type": "object", "required": list(names), "properties": {name: rules[name] for name in names}}


def variant(task: str) -> dict:
    """A variant of ``task``: ``k{K}`` of a task trained on K_train, else one of its named runs."""
    layout = get_task(task).layout
    return {"type": "string", "pattern": "^k[1-9][0-9]*$"} if layout.by_k_train else {"enum": list(layout.variants)}


def variant_params(task: str) -> dict:
    """The generator params a variant of ``task`` sets (:meth:`~pipeline_src.tasks.task.Layout.params`):
    ``k_train`` with the config's rule, or each named run's values."""
    layout = get_task(task).layout
    if layout.by_k_train:
        return {"k_train": part(task, "k_train", "[]")}
    values: dict[str, list] = {}
    for name in layout.variants:
        for key, value in layout.params(name).items():
            values.setdefault(key, []).append(value)
    return {key: {"enum": list(dict.fromkeys(options))} for key, options in values.items()}


@functools.cache
def data_spec(task: str, split: str) -> dict:
    """``lengthgen generate``: :func:`.jobs.train_data_spec` or :func:`.jobs.eval_data_spec`."""
    layout = get_task(task).layout

    def data(*names: str) -> dict:
        return {name: part(task, "data", name) for name in names}

    if split == "train":
        params = {**data(*layout.data_fields), **variant_params(task), "n_samples": part(task, "data", "n_train")}
        return spec({"task": const(task), "split": const(split), "seed": part(task, "data", "seed"),
                     "params": block(params)})
    cells = {"k_test": part(task, "eval", "k_test")} if layout.by_k_train else variant_params(task)
    params = {"lengths": part(task, "eval", "lengths"), "n_per_cell": part(task, "eval", "n_per_cell"),
              **data(*layout.eval_data_fields), **cells}
    return spec({"task": const(task), "split": const(split), "seed": part(task, "eval", "seed"),
                 "params": block(params)})


@functools.cache
def train_spec(task: str, scheme: str) -> dict:
    """``lengthgen train``: :func:`.jobs.train_spec`."""
    train = part(task, "train")
    train["properties"]["steps"] = part("train", "steps")  # the model's own: one number, even of a map per K_train
    if not get_scheme(scheme).predicts_positions:
        train["required"] = [name for name in train["required"] if name not in jobs.POSITION_HEAD_TRAIN_FIELDS]
    positions = part(task, "positions")
    positions["properties"]["target_length"] = resolved(positions["properties"]["target_length"])
    fields = {"task": const(task), "variant": variant(task), "scheme": const(scheme), "seed": part(task, "seeds", "[]"),
              "device": part("device"), "model": part(task, "model"), "train": train, "positions": positions}
    if get_task(task).layout.by_k_train:
        fields["k_train"] = part(task, "k_train", "[]")
    return spec(fields, MODEL_JOB_DEFAULTS)


@functools.cache
def eval_spec() -> dict:
    """``lengthgen evaluate``: :func:`.jobs.eval_spec`, the evaluation fields every task shares (as
    ``defaults.eval`` has them); ``precision`` is fp32 and the mechanism analysis off when absent."""
    fields = {"batch_size": part("defaults", "eval", "batch_size"), "seed": part("defaults", "eval", "seed"),
              "device": part("device"), "precision": part("train", "precision"),
              "mechanism_samples": part("mechanism", "samples")}
    return spec(fields, (*MODEL_JOB_DEFAULTS, "precision", "mechanism_samples"))


@functools.cache
def figure_spec(figure: str) -> dict:
    """``lengthgen plot FIGURE``: :func:`.jobs.figure_spec` of a task's figure, or
    :func:`~pipeline_src.planning.language_jobs.figure_spec`. ``lengths`` and ``k_test`` are read by its
    caption's finding only."""
    if figure in lang.LANGUAGE_FIGURES:
        return language_figure_spec(figure)
    if figure == paths.FORECAST_FIGURE:  # per task, the fields of its figure's spec the forecast reads
        integers = {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}
        fields = {"train_lengths": {**integers, "minItems": 2, "maxItems": 2}, "lengths": integers, "seeds": integers}
        return spec({"tasks": {"type": "object", "minProperties": 1, "propertyNames": part("tasks", "[]"),
                               "additionalProperties": block(fields)}})
    task = jobs.FIGURE_TASK[figure]
    lengths = part(task, "eval", "lengths")
    fields = {"task": const(task), "runs": {"type": "object", "minProperties": 1, "propertyNames": variant(task),
                                            "additionalProperties": part("schemes")},
              "seeds": part(task, "seeds"), "x_scale": part(task, "figure", "x_scale"),
              "train_lengths": {"type": "array", "minItems": 2, "maxItems": 2, "items": lengths["items"]},
              "lengths": lengths}
    if get_task(task).layout.by_k_train:
        fields["k_test"] = part(task, "eval", "k_test")
    return spec(fields, ("lengths", "k_test"))


UNSET_IN_CAPTIONS = ("from_summary",)  # a figure spec's fields that stay optional where a caption's finding reads it


def language_figure_spec(figure: str) -> dict:
    fields = {"context": part("language", "context"), "local": part("language", "local"),
              "k_max": part("language", "analysis", "k_max"),
              **{name: part("language", "figure", name) for name in ("gain_threshold", "n_boot", "seed")}}
    if figure == "figure4":
        fields["plot"] = part("language", "figure", "plot")
        fields["from_summary"] = {"type": "string"}  # only where set: drawn from a run summary
    else:
        fields.update(recover_fraction=part("language", "figure", "recover_fraction"),
                      short_context=resolved(part("language", "pose", "context")),
                      target_length=resolved(part("language", "pose", "target_length")))
    return spec(fields, UNSET_IN_CAPTIONS)


@functools.cache
def corpus_spec() -> dict:
    """``lengthgen corpus``: :func:`~pipeline_src.planning.language_jobs.corpus_spec` (``c4_split`` and
    ``txt_unit`` for the sources that read them; the tokenizer's ``path`` or ``vocab_size``)."""
    corpus = part("language", "corpus")
    corpus["required"] = [name for name in corpus["required"] if name not in ("c4_split", "txt_unit")]
    tokenizer = {**part("language", "tokenizer"), "required": [], "minProperties": 1}
    return spec({"corpus": corpus, "tokenizer": tokenizer})


@functools.cache
def lm_train_spec() -> dict:
    """``lengthgen lm-train``: :func:`~pipeline_src.planning.language_jobs.train_spec`."""
    train = part("language", "train")
    for name in lang.UNUSED_TRAIN_FIELDS:
        del train["properties"][name]
    train["required"] = [name for name in train["required"] if name not in lang.UNUSED_TRAIN_FIELDS]
    pose_chunks = part("language", "pose", "pose_chunks")
    positions = {"pose_chunks": {**pose_chunks, "type": ["integer", "null"]},  # null: a model without PoSE
                 "target_length": resolved(part("positions", "target_length"))}
    return spec({"task": const(lang.LANGUAGE), "variant": {"enum": list(lang.SCHEMES)}, "scheme": part("scheme"),
                 "seed": part("language", "seed"), "device": part("device"),
                 "context": resolved(part("language", "pose", "context")), "model": part("language", "model"),
                 "train": train, "positions": block(positions), "heldout": part("language", "heldout")},
                MODEL_JOB_DEFAULTS)


def analysis(*names: str) -> dict:
    return {name: part("language", "analysis", name) for name in names}


@functools.cache
def lm_eval_spec() -> dict:
    """``lengthgen lm-eval``: :func:`~pipeline_src.planning.language_jobs.eval_spec`; its targets are
    drawn as the influence analysis draws them (its defaults where absent)."""
    targets = {"context": part("language", "context"), "local": part("language", "local"),
               **analysis("n_targets", "seed", "leave_out")}
    return spec({"eval_length": resolved(part("language", "pose", "eval_length")),
                 "windows": part("language", "pose", "eval_windows"), **analysis("batch_size"),
                 "device": part("device"), "targets": block(targets, ("n_targets", "seed", "leave_out"))},
                MODEL_JOB_DEFAULTS)


@functools.cache
def influence_spec() -> dict:
    """``lengthgen influence``: :func:`~pipeline_src.planning.language_jobs.influence_spec`; the
    analysis's parameters take their defaults where absent. The config's ``analysis.screen`` enters
    as ``screen_gain``, the figure's gain threshold (absent: no screening); its ``analysis.parts``, as
    ``part`` ({index, of}) in each part's spec (absent: the whole draw)."""
    drawn = [name for name in part("language", "analysis")["properties"] if name not in ("screen", "parts")]
    parts = part("language", "analysis", "parts")
    fields = {"context": part("language", "context"), "local": part("language", "local"), "device": part("device"),
              **analysis(*drawn), "screen_gain": part("language", "figure", "gain_threshold"),
              "part": block({"index": {"type": "integer", "minimum": 1}, "of": parts})}
    return spec(fields, tuple(name for name in fields if name not in ("context", "local")))
