"""The whole check of a config, and the one way to load one: :func:`load_config` reads the layers
(:mod:`pipeline_src.config.layers`), checks them against the schema with its defaults filled in
(:mod:`pipeline_src.config.schema`), then runs every study's cross-field checks
(:data:`.studies.STUDIES`). The Snakefile, the CLI and ``lengthgen findings`` load configs through
here; each error is one line naming the file or the field.
"""

from __future__ import annotations

from pathlib import Path

from ..config.layers import BASE_CONFIG, ConfigError, copied, merge_defaults, read_config
from ..config.schema import ConfigSchemaError, defaults_taken
from ..config.schema import validate as validate_schema
from .studies import STUDIES, figures


def load_config(configfiles: list[Path] | tuple[Path, ...] = (), base: Path = BASE_CONFIG) -> dict:
    """The config Snakemake would run with ``--configfile`` ``configfiles`` over ``base``
    (:func:`pipeline_src.config.layers.read_config`), made whole and checked (:func:`validate`); a ConfigError naming
    the files."""
    config, files = read_config(configfiles, base)
    try:
        validate(config)
    except ConfigError as err:
        raise ConfigError(f"config from {', '.join(str(f) for f in files)}: {err}") from None
    return config


def validate(config: dict) -> None:
    """The whole check of a read config, in place (defaults merged and filled in); a
    :class:`~pipeline_src.config.layers.ConfigError` naming the field."""
    complete(config)
    for study in STUDIES:
        try:
            study.check(config)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    if not figures(config):
        raise ConfigError("the config draws no figure: tasks is empty and no other study is enabled")


def complete(config: dict) -> None:
    """A loaded config made whole, in place: the sections that take ``defaults``
    (:func:`pipeline_src.config.schema.defaults_taken`) merged over them
    (:func:`pipeline_src.config.layers.merge_defaults`) and the JSON schema's check
    (:mod:`pipeline_src.config.schema`, filling its defaults). The cross-field checks are each
    study's (:func:`validate` runs both). A pure function of the config's values: each one made
    whole is kept for the process (a search over the shipped layerings completes the same few
    hundred again and again)."""
    key = repr(config)  # types and order included: equal reprs, equal configs
    if key not in _COMPLETED:
        if len(_COMPLETED) >= _KEPT:
            del _COMPLETED[next(iter(_COMPLETED))]
        try:
            _complete(config)
            _COMPLETED[key] = copied(config)
        except ConfigError as err:
            _COMPLETED[key] = err
            raise
        return
    made = _COMPLETED[key]
    if isinstance(made, ConfigError):
        raise ConfigError(str(made))
    config.clear()
    config.update(copied(made))


_COMPLETED: dict[str, dict | ConfigError] = {}  # repr of a read config -> it made whole, or why it cannot be
_KEPT = 512  # configs kept (the shipped layerings are some 400)


def _complete(config: dict) -> None:
    merged = defaults_taken()
    try:
        validate_schema(config, merged, before_merge=True)
        merge_defaults(config)
        validate_schema(config, merged)
    except ConfigSchemaError as err:
        raise ConfigError(str(err)) from None
