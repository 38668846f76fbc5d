"""The job planning under the module name that tools outside this repository import: the GPU kit's
paper step (``../shared/gpu/collect.py``) reads ``tasks``, ``cells``, ``train_data_spec`` and
``train_spec`` from here, with ``status.load_config`` and ``language.config.models``. The functions
live in :mod:`pipeline_src.bookkeeping.jobs`; ``tests/test_outside_tools.py`` holds these names."""

from .jobs import cells, tasks, train_data_spec, train_spec

__all__ = ["cells", "tasks", "train_data_spec", "train_spec"]
