"""The environment the workflow's jobs run in."""

from __future__ import annotations

import os
import sys


def jobs_use_this_python() -> None:
    """Put the folder of the Python that runs Snakemake first on PATH, which the jobs inherit: they
    run the ``lengthgen`` installed beside it, so ``.venv/bin/snakemake ...`` works without
    activating the environment (a job's conda environment, when used, still comes first)."""
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
