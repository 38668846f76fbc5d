"""The pipeline's bookkeeping, all torch-free: job specs from the config (config), its schema, result paths,
provenance records and code digests, their verification, and ``lengthgen status``."""
