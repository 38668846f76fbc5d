"""Import paths kept for tools outside this repository (the GPU kit's paper step,
``../shared/gpu/collect.py``, imports ``pipeline_src.bookkeeping.config`` and
``pipeline_src.bookkeeping.status.load_config``): each name here is :mod:`pipeline_src.api`'s.
New code imports :mod:`pipeline_src.api` or the module that defines the name.
``tests/test_outside_tools.py`` holds these paths."""

from .. import api as config

__all__ = ["config"]
