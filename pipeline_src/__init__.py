"""lengthgen: a Snakemake pipeline for length-generalization experiments in transformers.

Reproduces "The Role of Sparsity for Length Generalization" (Golowich et al., ICML 2025).
Each pipeline step is a small function here, exposed through the ``lengthgen`` CLI.
"""

__version__ = "0.1.0"
