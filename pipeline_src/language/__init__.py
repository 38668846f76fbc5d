"""The natural-language analysis (SPEC 6): its config section, corpus, tokenizer, token stream, the
language models' batches, loss by position and the influential-token analysis."""
