"""The process that runs the workflow: what its jobs inherit and what its console shows."""

from __future__ import annotations

import logging
import os
import re
import sys

_MISSING_METADATA = re.compile(r"Missing metadata for file (.+?)\. Maybe metadata")


def jobs_use_this_python() -> None:
    """Put the folder of the Python that runs Snakemake first on PATH, which the jobs inherit: they
    run the ``lengthgen`` installed beside it, so ``.venv/bin/snakemake ...`` works without
    activating the environment (a job's conda environment, when used, still comes first)."""
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


class _AbsentFiles(logging.Filter):
    """Drops Snakemake's "Missing metadata" warning for a file that does not exist (a report asked
    for a config whose runs are not all there); keeps it for a file that exists without metadata."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = _MISSING_METADATA.match(str(record.msg))
        return not (found and not os.path.exists(found[1]))


def quiet_report_about_absent_files() -> None:
    """``snakemake --report`` warns once per output of every job of the config, made or not: a report
    of a partial run, or of another config's run, printed a line per file that does not exist."""
    logger = logging.getLogger("snakemake.logging")
    if not any(isinstance(f, _AbsentFiles) for f in logger.filters):
        logger.addFilter(_AbsentFiles())
