"""Scoring trained models: greedy decoding with a KV cache, accuracy per evaluation cell with Wilson
intervals, and tables of the results."""
