"""The JSON schema of the pipeline config, assembled from the registries, and validation against it.

The shared part (threads, device, the train / positions blocks, the language section) is written
once in ``config.schema.yaml`` next to this module. What the code declares is filled in here: the
task names (``tasks``), each task's section (its layout's variant fields, its ``data`` block as its
module declares it), the scheme names, and the ``model`` and ``language.analysis`` blocks (each
field's rule and default as :class:`pipeline_src.config.model_config.ModelConfig` and
:class:`pipeline_src.language.influence_table.InfluenceConfig` declare them). So a new task or scheme module needs no
schema edit. Validation fills the schema's defaults in place and fails with one line naming the
field. Torch-free and cheap: the Snakefile validates at parse time.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Collection
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("config.schema.yaml")


class ConfigSchemaError(ValueError):
    """A config that does not match the schema; the message names the field."""


@functools.cache
def _schema() -> dict:
    from ..schemes import SCHEMES
    from ..storage import yaml_text
    from ..tasks import TASKS
    from .influence_config import InfluenceConfig
    from .model_config import ModelConfig, block_schema

    schema = yaml_text.read(SCHEMA_FILE.read_text())
    defs = schema["$defs"]
    defs["model"] = block_schema(ModelConfig)
    analysis = defs["language"]["properties"]["analysis"]
    analysis["properties"] = {**block_schema(InfluenceConfig)["properties"], **analysis["properties"]}
    defs["scheme"] = {"enum": list(SCHEMES)}
    schema["properties"]["tasks"]["items"]["enum"] = list(TASKS)
    for name, task in TASKS.items():
        schema["properties"][name] = {**task.layout.section_schema(defs), "description": task.summary}
    schema["properties"]["defaults"] = _defaults_schema(defs)
    return schema


def _defaults_schema(defs: dict) -> dict:
    """The ``defaults`` block: any part of a task section that every task shares (the fields of
    ``$defs.k_task`` but the variant fields, the task-specific ``data`` and ``eval`` fields), none
    required; each field's schema and description are the task sections' own."""
    from ..tasks.task import SHARED_DATA_FIELDS

    shared = defs["k_task"]["properties"]
    return {
        "description": "Merged under every task section (a section lists only what differs).",
        "type": "object", "additionalProperties": False,
        "properties": {
            "seeds": shared["seeds"],
            "data": {"type": "object", "additionalProperties": False, "properties": SHARED_DATA_FIELDS},
            "eval": _partial(_only(shared["eval"], ("n_per_cell", "seed", "batch_size"))),
            **{name: _partial(defs[name]) for name in ("model", "train", "positions", "figure")},
        },
    }


def _only(schema: dict, fields: tuple[str, ...]) -> dict:
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k in fields}}


def _partial(schema: dict) -> dict:
    """``schema`` with no required fields."""
    return {key: value for key, value in schema.items() if key != "required"}


def config_schema() -> dict:
    """The whole schema (a fresh copy: callers may edit it)."""
    return copy.deepcopy(_schema())


def defaults_taken() -> dict[str, tuple[str, ...] | None]:
    """The config sections merged over ``defaults``, each with the blocks of ``defaults`` it takes
    (None: all of them): every task's section whole, and each section whose schema names the blocks
    in ``x-takes-defaults`` (the language section's model and train)."""
    from ..tasks import TASKS

    schema = _schema()
    taken: dict[str, tuple[str, ...] | None] = {task: None for task in TASKS}
    for name, section in schema["properties"].items():
        ref = section.get("$ref", "")
        section = schema["$defs"][ref.rsplit("/", 1)[1]] if ref.startswith("#/$defs/") else section
        if "x-takes-defaults" in section:
            taken[name] = tuple(section["x-takes-defaults"])
    return taken


def coerced(layer: dict) -> dict:
    """The ``--config`` values ``layer`` with each string read as the number, boolean or null it spells
    where the schema takes that there: Snakemake reads a nested ``--config`` value
    (``defaults={"seeds": [0, 1]}``) with YAML's BaseLoader, which leaves every scalar a string. A
    string that reads as nothing the schema takes stays as it was (validation names it)."""
    schema = _schema()
    return _coerced(layer, [schema], schema)


def _coerced(value, schemas: list[dict], root: dict):
    schemas = _branches(schemas, root)
    if isinstance(value, dict):
        return {key: _coerced(item, _children(schemas, key), root) for key, item in value.items()}
    if isinstance(value, list):
        items = [schema["items"] for schema in schemas if isinstance(schema.get("items"), dict)]
        return [_coerced(item, items, root) for item in value]
    if not isinstance(value, str) or not schemas:
        return value
    for read in _readings(value):
        if any(_takes(schema, read) for schema in schemas):
            return read
    return value


def _readings(text: str) -> list:
    """What a command-line string may mean, the most specific first: its YAML value unless a string
    (``2``, ``true``, ``null``), a float in any spelling Python reads (``1e-3``), the string itself."""
    from ..storage import yaml_text

    readings = []
    try:
        read = yaml_text.read(text)
        if not isinstance(read, str):
            readings.append(read)
    except yaml_text.YAMLError:
        pass
    if _is_number(text):
        readings.append(float(text))
    return [*readings, text]


def _branches(schemas: list[dict], root: dict) -> list[dict]:
    """``schemas`` with each ``$ref`` followed and each ``anyOf`` / ``oneOf`` / ``allOf`` opened."""
    out = []
    for schema in schemas:
        if "$ref" in schema:
            schema = {**root["$defs"][schema["$ref"].rsplit("/", 1)[1]],
                      **{k: v for k, v in schema.items() if k != "$ref"}}
            out += _branches([schema], root)
            continue
        out.append(schema)
        out += _branches([s for key in ("anyOf", "oneOf", "allOf") for s in schema.get(key, [])], root)
    return out


def _children(schemas: list[dict], key: str) -> list[dict]:
    """The schemas of the value under ``key`` of a mapping that one of ``schemas`` describes."""
    import re

    out = []
    for schema in schemas:
        if key in schema.get("properties", {}):
            out.append(schema["properties"][key])
        out += [sub for pattern, sub in schema.get("patternProperties", {}).items() if re.search(pattern, key)]
        if isinstance(schema.get("additionalProperties"), dict):
            out.append(schema["additionalProperties"])
    return out


_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
               "array": (list,), "object": (dict,)}


def _takes(schema: dict, value) -> bool:
    """Whether ``schema`` (one branch) names ``value``'s type, or lists ``value`` in its enum or const."""
    if "enum" in schema or "const" in schema:
        allowed = schema.get("enum", [schema.get("const")])
        return any(value == option and type(value) is type(option) for option in allowed)
    types = _types(schema.get("type", []))
    return any(isinstance(value, _JSON_TYPES[name]) and not (isinstance(value, bool) and name in ("integer", "number"))
               for name in types)


def field_name(path) -> str:
    """``("sparse_parity", "schemes", 1)`` -> ``sparse_parity.schemes[1]``."""
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "the config"


def validate(config: dict, merged: Collection[str] = (), before_merge: bool = False) -> None:
    """Check ``config`` against :func:`config_schema`, filling in defaults (in place); raise
    :class:`ConfigSchemaError` naming the first field at fault. ``merged``: the sections merged over
    ``defaults``; ``before_merge`` leaves them out (they may be incomplete until then)."""
    import jsonschema

    if before_merge:
        config = {key: value for key, value in config.items() if key not in merged}
    if _valid_by_section(config):
        return
    error = jsonschema.exceptions.best_match(_validator().iter_errors(config))
    if error is not None:
        hint = ""
        if error.validator == "required" and error.absolute_path and error.absolute_path[0] in merged:
            hint = f" (write it in the {error.absolute_path[0]} section or in defaults)"
        raise ConfigSchemaError(f"config field {field_name(error.absolute_path)}: {_short(error)}{hint}")


def _valid_by_section(config) -> bool:
    """Whether ``config`` passes :func:`config_schema`, judged as the whole check judges it (its own
    keys known, the required ones there, missing ones with a default set, then each section against
    its rule) with defaults filled in in place alike, each section's value checked once per process: a
    search over the shipped layerings checks the same few dozen sections hundreds of times. False
    where a section fails: the whole check then names the field."""
    from .layers import copied

    schema = _schema()
    known = schema["properties"]
    if not isinstance(config, dict) or not set(config) <= set(known) or not set(schema["required"]) <= set(config):
        return False
    for name, sub in known.items():
        if "default" in sub:
            config.setdefault(name, copy.deepcopy(sub["default"]))
    for name, value in config.items():
        key = (name, repr(value))  # types and order included: equal reprs, equal values
        if key not in _SECTIONS:
            if next(_validator().descend(value, known[name], path=name), None) is not None:
                return False
            if len(_SECTIONS) >= _SECTIONS_KEPT:
                del _SECTIONS[next(iter(_SECTIONS))]
            _SECTIONS[key] = copied(value)  # as the check left it: its defaults filled in
        elif isinstance(value, dict):
            value.clear()
            value.update(copied(_SECTIONS[key]))
        elif isinstance(value, list):
            value[:] = copied(_SECTIONS[key])
    return True


_SECTIONS: dict[tuple[str, str], object] = {}  # (section, repr of its value as given) -> the value checked
_SECTIONS_KEPT = 4096


def check(instance, schema: dict, what: str) -> None:
    """Check the JSON value ``instance`` against ``schema`` (assembled from config fields' rules,
    :func:`part`; no defaults filled in); a :class:`ConfigSchemaError` naming the first field at fault
    as :func:`validate` does, ``what`` naming the whole: ``spec field train.steps: -5 is less than the
    minimum of 1``."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(instance))
    if error is not None:
        where = f"{what} field {field_name(error.absolute_path)}" if error.absolute_path else what
        raise ConfigSchemaError(f"{where}: {_short(error, yaml=False)}")


def part(*names: str) -> dict:
    """The schema of the config field at ``names`` (a fresh copy), each ``$ref`` on the way followed:
    a top-level name is a section of the config or a shape of its ``$defs`` (``train``, ``model``),
    ``"[]"`` steps into an array's items. ``part(task, "train", "steps")`` is the rule
    of ``<task>.train.steps``; a ``$ref`` left inside the fragment refers to the ``$defs``
    of :func:`config_schema`."""
    schema = _schema()
    first, *rest = names
    node = schema["properties"].get(first) or schema["$defs"][first]
    for name in rest:
        node = _resolved(node, schema)
        node = node["items"] if name == "[]" else node["properties"][name]
    return copy.deepcopy(_resolved(node, schema))


def _resolved(node: dict, root: dict) -> dict:
    """``node`` with its ``$ref`` (into ``root``'s ``$defs``) followed, its own keywords kept."""
    while "$ref" in node:
        node = {**root["$defs"][node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _short(error, yaml: bool = True) -> str:
    """The validator's message without a dump of a large offending value, with a hint where the
    mistake is a common one: a misspelt key, a value outside an enum whose schema describes the
    values, or (``yaml``: the value was read from YAML) a number YAML read as a string."""
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown key") + _did_you_mean(error)
    message = error.message
    if (yaml and error.validator == "type" and isinstance(error.instance, str)
            and "number" in _types(error.validator_value)):
        if _is_number(error.instance):
            return (f"{message}: YAML reads {error.instance} as a string (its floats need a dot and a signed "
                    f"exponent); write {_yaml_number(error.instance)}")
    if len(message) > 200:
        message = f"{message[:200]}... (fails {error.validator!r})"
    if error.validator == "enum" and "description" in error.schema:  # what the allowed values are
        message += f": {error.schema['description']}"
    return message


def _did_you_mean(error) -> str:
    """`` (did you mean 'train'?)`` when an unknown key is close to a known one, else nothing."""
    import difflib

    known = list(error.schema.get("properties", {}))
    unknown = [key for key in error.instance if key not in known] if isinstance(error.instance, dict) else []
    close = [(key, match[0]) for key in unknown if (match := difflib.get_close_matches(str(key), known, n=1))]
    if len(unknown) == 1 and close:
        return f" (did you mean {close[0][1]!r}?)"
    return f" (did you mean {', '.join(f'{right!r} for {wrong!r}' for wrong, right in close)}?)" if close else ""


def _types(value) -> list:
    return value if isinstance(value, list) else [value]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _yaml_number(text: str) -> str:
    """``1e-3`` -> ``1.0e-3``, ``2e4`` -> ``2.0e+4``: the spelling YAML 1.1 (PyYAML, as Snakemake
    reads config files) takes for a float."""
    mantissa, _, exponent = text.lower().partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if exponent and exponent[0] not in "+-":
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}" if exponent else mantissa


@functools.cache
def _validator():
    """A Draft 2020-12 validator that also sets each missing property with a ``default``."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from check_properties(validator, properties, instance, schema)

    extended = jsonschema.validators.extend(base, {"properties": properties_with_defaults})
    return extended(_schema())
