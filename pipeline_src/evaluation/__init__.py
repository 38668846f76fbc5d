"""Scoring trained models: greedy decoding with a KV cache, accuracy per evaluation cell with Wilson
intervals, and the mechanism measured in every model (attention on the dependency set, causal
flips, first errors)."""
