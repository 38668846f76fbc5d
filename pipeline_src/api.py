"""The names a notebook or a tool outside the pipeline needs, in one place: load a config as the
workflow loads it, and plan its cells and the config subset of each job.

>>> from pipeline_src import api
>>> config = api.load_config(["config/smoke.yaml"])
>>> cell = api.cells(config, api.tasks(config)[0])[0]
>>> spec = api.train_spec(config, cell["task"], cell["variant"], cell["scheme"], cell["seed"])

Every name is defined elsewhere (its docstring says how it works) and is imported here unchanged:
``load_config`` from :mod:`pipeline_src.planning.load_config`, the task planning from
:mod:`pipeline_src.planning.jobs`, the language models from :mod:`pipeline_src.planning.language_jobs`.
Tools outside this repository import these names from here (the GPU kit's paper step:
``tests/test_outside_tools.py`` holds what it uses).
"""

from .config.layers import ConfigError
from .planning.jobs import cells, eval_spec, tasks, train_data_spec, train_spec
from .planning.language_jobs import models as language_models
from .planning.load_config import load_config

__all__ = ["ConfigError", "cells", "eval_spec", "language_models", "load_config", "tasks", "train_data_spec",
           "train_spec"]
