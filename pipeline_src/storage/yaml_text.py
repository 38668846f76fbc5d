"""YAML text to Python values, through libyaml's parser where PyYAML has it (the same values as
yaml.safe_load, about 8 times faster; a config's layering reads a dozen files per Snakemake run)."""

from __future__ import annotations

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError


def read(text: str) -> object:
    """The value of the YAML document ``text`` (yaml.safe_load's rules)."""
    return yaml.load(text, Loader=LOADER)  # noqa: S506 (a safe loader)
