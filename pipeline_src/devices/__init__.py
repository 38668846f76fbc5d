"""Where a model job runs: the ``device`` setting and the GPUs a run sees, free of torch
(:mod:`.setting`: the config check and the Snakefile read it at parse time), and the torch device a
job resolves it to when it starts, its GPU slot and bf16 autocast (:mod:`.placement`)."""
