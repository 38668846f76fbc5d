"""Settings of the cluster profile (profiles/slurm), from the environment: each one a variable
LENGTHGEN_SLURM_<NAME>, its default where unset or empty. Read when Snakemake loads the profile
(numbers) or the workflow (the GPU a model job asks for)."""

from __future__ import annotations

import os

PREFIX = "LENGTHGEN_SLURM_"
GRES_DEFAULT = "gpu:1"


def number(name: str, default: int) -> int:
    """A whole number above 0: ``LENGTHGEN_SLURM_<name>``, else ``default``."""
    raw = os.environ.get(PREFIX + name, "").strip()
    if not raw:
        return default
    if not raw.isdecimal() or int(raw) == 0:
        raise ValueError(f"{PREFIX}{name}={raw!r}: expected a whole number above 0")
    return int(raw)


def gres(gpus: int) -> str:
    """The generic resource a model job asks for on a cluster: ``LENGTHGEN_SLURM_GRES`` (default
    "gpu:1"; "gpu:a100:1" names a GPU model) when its device setting uses CUDA (``gpus`` 1), else
    "" (none). A string resource, so that a group job of models sharing a GPU requests it once."""
    return (os.environ.get(PREFIX + "GRES", "").strip() or GRES_DEFAULT) if gpus else ""
