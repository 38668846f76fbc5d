"""The natural-language analysis (docs/language.md): its corpus, tokenizer, token stream, the language
models' batches, loss by position and the influential-token analysis (its jobs' specs and its study:
:mod:`pipeline_src.planning.language_jobs`, :mod:`pipeline_src.planning.language_study`)."""
