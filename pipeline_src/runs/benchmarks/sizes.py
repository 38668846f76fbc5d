"""The benchmark model and its batches unless a command says otherwise: ``lengthgen benchmark``'s
defaults and the benchmark functions' (torch-free, so the CLI reads them without importing torch)."""

SIZE = {"d_model": 128, "n_layer": 4, "n_head": 4, "seq_len": 64, "batch_size": 64}
