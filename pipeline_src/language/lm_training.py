"""Training a language model of the natural-language analysis through the shared training
loop (:func:`pipeline_src.training.train.run`): only the batch source is its own. Batches are
random windows of the train token stream, every next token scored (:class:`.lm.WindowSource`); the
mean loss on fixed held-out windows is logged every ``heldout.every`` steps to
``heldout_log.parquet``. A run that diverges raises :class:`~pipeline_src.training.train.TrainingDiverged`:
the analysis has no use for a failed model.
"""

from __future__ import annotations

from pathlib import Path

import torch

from . import lm
from .tokenizer import load_tokenizer, read_tokens


class LanguageSource(lm.WindowSource):
    """The batch source of a language model (see :class:`pipeline_src.training.train.TaskSource`
    for what the loop reads of it)."""

    stage = "language_train"
    code_task = None  # the code digest of a language model covers no task module
    records_divergence = False
    k_train = curriculum = None  # windows of text have no k

    def __init__(self, spec: dict, tokens: Path, tokenizer: Path):
        self.vocab_size = load_tokenizer(tokenizer).get_vocab_size()
        frame = read_tokens(tokens, self.vocab_size)
        context = spec["context"]
        super().__init__(lm.concatenated(frame), context, spec["train"]["batch_size"])
        self.pending = []  # nothing to carry across a resume but the random generator
        self.heldout = lm.document_windows(frame, context + 1, spec["heldout"]["windows"])
        self.heldout_every = spec["heldout"]["every"]
        self.inputs = {"train_data": tokens, "tokenizer": tokenizer}
        self.description = {"context": context, "vocab_size": self.vocab_size}
        self.summary = f"{len(self.stream):,} train tokens, {len(self.heldout)} held-out windows"

    def heldout_loss(self, model, device: torch.device) -> tuple[float, int]:
        """(mean next-token loss over the held-out windows, tokens scored); uses no randomness."""
        losses = lm.position_losses(model, self.heldout, self.batch_size, device=device)
        return float(losses.mean()), losses.numel()


def train_language_model(spec: dict, tokens: Path, tokenizer: Path, out_dir: Path, **options) -> dict:
    """Train the language model of ``spec`` (:func:`pipeline_src.planning.language_jobs.train_spec`) on the
    token stream ``tokens`` with its ``tokenizer`` (which sets the vocabulary size); write model,
    logs and summary into ``out_dir``. ``options`` as for :func:`pipeline_src.training.train.run`."""
    from ..training.train import run

    return run(spec, lambda: LanguageSource(spec, tokens, tokenizer), out_dir,
               rule=options.pop("rule", "language_train"), **options)
