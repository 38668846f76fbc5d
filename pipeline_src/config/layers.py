"""The config's layers: ``config/config.yaml``, each ``--configfile`` in order, then the ``--config``
values, read and merged as Snakemake merges them, with each layer's ``defaults`` going over the
sections the layers before it set (config/README.md, "Layers"). Unchecked: :mod:`.load` checks what
this reads. Torch-free and cheap: the Snakefile reads its config through here at parse time.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .schema import coerced, defaults_taken

BASE_CONFIG = Path("config/config.yaml")


class ConfigError(ValueError):
    """A config that cannot be read, or is invalid; the message names the file or the field."""


def read_config(configfiles: list[Path] | tuple[Path, ...] = (), base: Path | None = BASE_CONFIG,
                command_line: dict | None = None) -> tuple[dict, list[Path]]:
    """``base``, each of ``configfiles`` and the ``--config`` values ``command_line``, in that order,
    merged by :func:`merge_layers` (Snakemake's merge, with each
    layer's ``defaults`` over the sections before it that take them), unchecked, and the files read.
    ``base`` may be absent when config files are given, as with Snakemake, or None (Snakemake's
    ``--replace-workflow-config``). Invalid YAML is an error naming the file, line and column. Strings
    of ``command_line`` where the schema wants numbers, booleans or null are read as YAML
    (:func:`.schema.coerced`): Snakemake leaves nested ``--config`` values strings.
    :func:`.load.load_config` checks what this reads."""
    files = [Path(f) for f in configfiles]
    if base is not None and (Path(base).is_file() or not files):
        files.insert(0, Path(base))
    layers = []
    for path in files:
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found (run from the pipeline's working directory)")
        layers.append(_read_config_file(path))
    return merge_layers([*layers, coerced(command_line or {})]), files


def _read_config_file(path: Path) -> dict:
    """The mapping a YAML (or JSON) config file holds (a copy of its own: the caller may edit it); invalid
    YAML names the line and column."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read config: {err}") from None
    return copied(_parsed(str(path), text))


@functools.lru_cache(maxsize=256)  # a search over the shipped layerings reads each file hundreds of times
def _parsed(path: str, text: str) -> dict:
    """The mapping ``text``, the config file ``path``'s content, holds (a pure function of both)."""
    from ..storage import yaml_text

    try:
        data = yaml_text.read(text)
    except yaml_text.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join(str(part) for part in (getattr(err, "context", None), getattr(err, "problem", None)) if part)
        raise ConfigError(f"{where}: not valid YAML: {problem or err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file holds a mapping of keys, not {type(data).__name__}")
    return data


def merge_layers(layers: list[dict]) -> dict:
    """The config of ``layers`` (config/config.yaml, each ``--configfile``, the ``--config`` values),
    merged in order as Snakemake merges them (nested keys one by one, lists and values replaced),
    except that a layer's ``defaults`` also go over the sections that the layers before it set and
    that take defaults (:func:`.schema.defaults_taken`). So an override file's ``defaults`` reach every
    task (and the language model) whatever config/config.yaml's sections set, and its own sections
    still beat them."""
    config: dict = {}
    for layer in layers:
        defaults = layer.get("defaults")
        if isinstance(defaults, dict):
            for section, blocks in defaults_taken().items():
                if isinstance(config.get(section), dict):
                    config[section] = _merged(config[section], _taken(defaults, blocks))
        config = _merged(config, layer)
    return copied(config)


def merge_defaults(config: dict) -> None:
    """Replace each section of ``config`` that takes ``defaults`` (:func:`.schema.defaults_taken`) by
    the blocks of ``defaults`` it takes with the section merged over them: nested keys one by one,
    lists and values replaced whole (as Snakemake merges a ``--configfile``). Only the merged sections
    reach the job specs, so where a value is written changes nothing."""
    defaults = config.get("defaults") or {}
    for section, blocks in defaults_taken().items():
        if isinstance(config.get(section), dict):
            config[section] = copied(_merged(_taken(defaults, blocks), config[section]))


def _taken(defaults: dict, blocks: tuple[str, ...] | None) -> dict:
    """The part of ``defaults`` a section takes: ``blocks`` of it, or all of it when None."""
    return defaults if blocks is None else {block: defaults[block] for block in blocks if block in defaults}


def _merged(base: dict, override: dict) -> dict:
    """``override`` merged over ``base``, neither changed: new mappings where both have one, the rest
    shared with them (the callers copy the whole once: :func:`copied`)."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def copied(value):
    """A copy of the config tree ``value`` (mappings, lists and scalars, as YAML reads them) sharing no
    mapping or list with it or within itself: ``copy.deepcopy``'s result for a tree without shared
    parts, several times faster (no memo)."""
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(copied(item) for item in value)
    return value
