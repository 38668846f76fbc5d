"""``load_config`` under the path the GPU kit's paper step imports (see :mod:`pipeline_src.bookkeeping`)."""

from ..api import load_config

__all__ = ["load_config"]
