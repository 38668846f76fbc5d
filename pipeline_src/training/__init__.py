"""Training one cell: the loop, its batches and the resumable checkpoints of its state."""
