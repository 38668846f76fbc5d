"""Benchmarks of the machine at hand: the training step (:mod:`.training_step`), KV-cache decoding
and the influential-token analysis (:mod:`.inference`), and the host reads of a step
(:mod:`.host_reads`). They print measured ratios; docs/performance.md keeps the figures."""
