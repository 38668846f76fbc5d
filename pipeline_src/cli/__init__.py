"""The ``lengthgen`` command, every command of it: one per pipeline step (:mod:`.commands`), and
beside them the commands that read runs (:mod:`.run_commands`: status, findings, provenance,
benchmarks, ...; what they do is :mod:`pipeline_src.runs`'); the options both share are :mod:`.options`."""

import os

IN_CODE_DIGEST = False  # nor any module of this package: each records or dispatches (provenance/code_digest.py)

# A job's log keeps the pipeline's own progress lines: libraries' tqdm bars are off (transformers
# draws one while it de-quantizes a GGUF model). tqdm reads this when it is first imported (torch
# imports it), so it is set before anything else; an empty TQDM_DISABLE in the environment keeps them.
os.environ.setdefault("TQDM_DISABLE", "1")
# polars runs a command's queries on its in-memory engine: the same frames, and on the small frames
# the commands query by the thousand (a dataset's schema checks, the judges' tables) a query's
# overhead is a fifth of the default engine's (0.09 ms against 0.45 ms; docs/performance.md). Read
# when polars is first imported; POLARS_ENGINE_AFFINITY in the environment keeps its own engine.
os.environ.setdefault("POLARS_ENGINE_AFFINITY", "in-memory")

from .commands import main, run  # noqa: E402

__all__ = ["main", "run"]
