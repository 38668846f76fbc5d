"""The natural-language analysis (docs/language.md): its jobs' specs, corpus, tokenizer, token stream,
the language models' batches, loss by position and the influential-token analysis.

``config`` is :mod:`.language_jobs` under the name the GPU kit's paper step imports."""

from . import language_jobs as config

__all__ = ["config"]
