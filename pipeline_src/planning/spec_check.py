"""Each ``lengthgen`` step's check of its ``--spec`` and inputs, run before the step reads or writes
anything: the spec against its schema (:mod:`.spec_schemas`: the config schema's rules of the fields
it holds, an unknown key with a suggestion), then the cross-field rules the config check applies to
that job (:func:`.jobs.check`: the curriculum only for a task trained on k_train, the model config,
the target length above the training IDs; the influence analysis's windows), then whether the
inputs fit the spec and each other, read from their provenance records and a model's ``model.json``,
never from weights or whole tables: a training set of the spec's task and variant, a model and an
evaluation set of one task and variant whose position IDs the model can take. Each failure is a
:class:`SpecError` of one line naming the spec field or the files. An input without a record (made
by hand) is left to the step's own checks, as are the rules a step checks first thing (a data
spec's lengths, by its generator; a corpus source's path, by its reader).

One function per step, named as the command; torch-free.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from ..config.influence_config import InfluenceConfig, InfluenceError, part_span
from ..config.model_config import ModelConfig, model_config
from ..config.schema import ConfigSchemaError, check
from ..tasks import get_task
from . import jobs
from . import spec_schemas as schemas

IN_CODE_DIGEST = False  # it checks a spec, never changes a result (provenance/code_digest.py)
ANY_VOCAB = 1  # no rule of a language model's config depends on its tokenizer's size (language_jobs.check)


class SpecError(ValueError):
    """A spec or an input that its step would refuse or misuse; one line naming the field or the files."""


def generate(spec: dict) -> None:
    _schema(spec, schemas.heads("task", "split"))
    _schema(spec, schemas.data_spec(spec["task"], spec["split"]))


def train(spec: dict, train_data: Path | None = None) -> None:
    """A synthetic task's training spec; with ``train_data``, that it is a training set of the spec's
    task and variant whose position IDs stay below the target length."""
    _schema(spec, schemas.heads("task", "scheme"))
    _schema(spec, schemas.train_spec(spec["task"], spec["scheme"]))
    task, variant = get_task(spec["task"]), spec["variant"]
    with _fields():
        k_train = task.layout.k_train(variant)
        if k_train is not None and spec["k_train"] != k_train:
            raise ValueError(f"k_train={spec['k_train']}: variant {variant} trains on K_train {k_train}")
        jobs.check_curriculum(task.name, spec["train"])
        model_config(spec, len(task.vocab))
    made = _made_with(train_data)
    if made is None:
        return
    if (made.get("task"), made.get("split")) != (task.name, "train"):
        raise SpecError(f"--train-data {train_data} is the {made.get('split')} set of task {made.get('task')} (its "
                        f"provenance record), not a train set of task {task.name}, which the spec trains")
    params = made.get("params") or {}
    _same_variant(task.name, variant, params, f"--train-data {train_data}")
    with _fields(f" (the longest samples of --train-data {train_data})"):
        jobs.check_target_length(task.name, spec["scheme"], params, spec["positions"]["target_length"])


def evaluate(spec: dict, model_dir: Path | None = None, eval_data: Path | None = None,
             mechanism: bool = False) -> None:
    """An evaluation spec (``mechanism``: with the mechanism analysis); with ``model_dir`` and
    ``eval_data``, that the model and the evaluation set are of one task and variant and that the
    model's position table holds the set's IDs."""
    _schema(spec, schemas.eval_spec())
    if mechanism and "mechanism_samples" not in spec:
        raise SpecError("spec: 'mechanism_samples' is a required property (the mechanism analysis reads it)")
    description, made = _description(model_dir), _made_with(eval_data)
    if description is None or made is None:
        return
    model, data = f"--model-dir {model_dir}", f"--eval-data {eval_data}"
    if description.get("task") != made.get("task"):
        raise SpecError(f"{model} holds a model of task {description.get('task')} (its model.json), but {data} is "
                        f"the evaluation set of task {made.get('task')} (its provenance record)")
    task, scheme, params = made["task"], description["scheme"], made.get("params") or {}
    _same_variant(task, description["variant"], params, data, model)
    limit = ModelConfig.from_dict(description["model_config"]).position_limit
    try:
        jobs.check_position_limit(limit, jobs.largest_eval_id(task, scheme, params), scheme)
    except ValueError as err:
        raise SpecError(f"{model}: {err} of {data}") from None


def plot(figure: str, spec: dict, captioned: bool = False) -> None:
    """A figure's spec; ``captioned``: its caption's finding reads ``lengths`` (and ``k_test``) too."""
    schema = schemas.figure_spec(figure)
    _schema(spec, schema)
    for name in schema["properties"]:
        if captioned and name not in spec and name not in schemas.UNSET_IN_CAPTIONS:
            raise SpecError(f"spec: {name!r} is a required property (the caption's finding reads it)")


def corpus(spec: dict) -> None:
    _schema(spec, schemas.corpus_spec())
    if not spec["tokenizer"].get("path") and "vocab_size" not in spec["tokenizer"]:
        raise SpecError("spec field tokenizer: give path (a tokenizer.json to use) or vocab_size (to train one)")


def lm_train(spec: dict) -> None:
    _schema(spec, schemas.lm_train_spec())
    with _fields():
        model_config(spec, ANY_VOCAB)


def lm_eval(spec: dict) -> None:
    _schema(spec, schemas.lm_eval_spec())
    _influence_rules({"k_max": 1, **spec["targets"]}, "targets.")  # its targets, drawn as the analysis draws them


def influence(spec: dict) -> None:
    _schema(spec, schemas.influence_spec())
    cfg = _influence_rules({name: value for name, value in spec.items() if name not in ("device", "hf_model", "part")},
                           "")
    if "part" in spec:  # one part of the draw: its index among the parts, the parts among the draw's groups
        try:
            part_span(cfg.n_targets, cfg.batch_size, spec["part"]["index"], spec["part"]["of"])
        except InfluenceError as err:
            raise SpecError(f"spec field part: {err}") from None


def _schema(spec: dict, schema: dict) -> None:
    try:
        check(spec, schema, "spec")
    except ConfigSchemaError as err:
        raise SpecError(str(err)) from None


@contextlib.contextmanager
def _fields(where: str = ""):
    """A cross-field rule's ValueError, which names the spec field, as a :class:`SpecError`."""
    try:
        yield
    except ValueError as err:
        raise SpecError(f"spec field {err}{where}") from None


def _influence_rules(fields: dict, prefix: str) -> InfluenceConfig:
    """The influence analysis's own rules (:class:`InfluenceConfig`: far tokens left, k_max among
    them) of ``fields``, the spec's fields under ``prefix``; the config they make."""
    try:
        return InfluenceConfig(**fields)
    except InfluenceError as err:
        raise SpecError(f"spec field {prefix}{str(err).removeprefix('InfluenceConfig.')}") from None


def _same_variant(task: str, variant: str, params: dict, data: str, model: str = "the spec") -> None:
    """The data generated with ``params`` is of ``variant``: each generator param the variant sets,
    where the data records it (an evaluation set shared by the K_train variants has no k_train)."""
    for key, value in get_task(task).layout.params(variant).items():
        if key in params and params[key] != value:
            raise SpecError(f"{data} has {key}={params.get(key)!r} (its provenance record), but {model}'s variant "
                            f"{variant} has {key}={value!r}")


def _made_with(path: Path | None) -> dict | None:
    """The spec ``path`` was made with, from its provenance record; None without one."""
    from ..provenance.sidecars import read_record

    if path is None:
        return None
    try:
        made = read_record(path).get("config")
    except (OSError, ValueError):  # no record, or none readable: the step's own reading names it
        return None
    return made if isinstance(made, dict) else None


def _description(model_dir: Path | None) -> dict | None:
    """A trained model's ``model.json``; None where there is none to read."""
    if model_dir is None:
        return None
    try:
        description = json.loads((Path(model_dir) / "model.json").read_text())
    except (OSError, ValueError):
        return None
    described = isinstance(description, dict) and {"task", "variant", "scheme", "model_config"} <= description.keys()
    return description if described else None
