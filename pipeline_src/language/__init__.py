"""The natural-language analysis (docs/language.md): its jobs' specs, corpus, tokenizer, token stream,
the language models' batches, loss by position and the influential-token analysis."""
