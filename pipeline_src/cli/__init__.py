"""The ``lengthgen`` command: one command per pipeline step (:mod:`.commands`), the tools around
them (:mod:`.tools`: status, findings, provenance, benchmarks) and their shared options
(:mod:`.options`)."""

from .commands import main, run

__all__ = ["main", "run"]
