"""Language modelling on a token stream: training windows, held-out windows, losses.

The token stream (:mod:`pipeline_src.language.tokenizer`) holds one row per document, each ending with the
end-of-document token. For training, the train documents are concatenated in ``doc`` order into
one stream and every batch takes random windows of ``context + 1`` tokens from it (windows may
cross a document boundary, marked by the end-of-document token, as in GPT-style packing). The
model reads tokens 0..context-1 at base position IDs 0..context-1 (the scheme may transform them:
PoSE) and is scored on every next token.

Held-out windows never cross a document boundary: they are the non-overlapping windows
``[0, w), [w, 2w), ...`` of every held-out document with at least ``w`` tokens, of which at most
``n`` are kept, evenly spaced (no randomness: the same stream gives the same windows). Position
``p`` of a window then really has ``p`` tokens of its own document before it, which is what a
loss-by-position curve needs.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import torch
import torch.nn.functional as F

from ..training.batches import TrainingBatch
from .corpus import HELDOUT, TRAIN


class StreamError(ValueError):
    """A token stream too short for the windows asked of it."""


def concatenated(frame: pl.DataFrame, split: str = TRAIN) -> torch.Tensor:
    """The tokens of every ``split`` document, in ``doc`` order, as one int64 tensor."""
    part = frame.filter(pl.col("split") == split).sort("doc")
    if part.height == 0:
        raise StreamError(f"the token stream has no {split!r} documents")
    return torch.from_numpy(part["tokens"].explode().to_numpy().astype(np.int64))


def document_windows(frame: pl.DataFrame, width: int, n: int, split: str = HELDOUT) -> torch.Tensor:
    """At most ``n`` windows of ``width`` tokens inside ``split`` documents, int64 [m, width], m <= n
    (see the module docstring)."""
    part = frame.filter(pl.col("split") == split).sort("doc")
    windows = []
    for tokens in part["tokens"]:
        tokens = tokens.to_numpy()
        for start in range(0, len(tokens) - width + 1, width):
            windows.append(tokens[start:start + width])
    if not windows:
        longest = int(part["tokens"].list.len().max() or 0)
        raise StreamError(f"no {split!r} document has the {width} tokens a window needs (longest: {longest} "
                          f"tokens in {part.height} documents); shorten the context or use longer documents")
    if len(windows) > n:
        windows = [windows[i] for i in np.linspace(0, len(windows) - 1, n).round().astype(int)]
    return torch.from_numpy(np.stack(windows).astype(np.int64))


class WindowSource:
    """Training batches of random ``context + 1``-token windows of the train stream."""

    def __init__(self, stream: torch.Tensor, context: int, batch_size: int):
        if len(stream) < context + 1:
            raise StreamError(f"the train stream has {len(stream)} tokens, fewer than one window of "
                              f"context + 1 = {context + 1}")
        self.stream, self.context, self.batch_size = stream, context, batch_size
        self.offsets = torch.arange(context + 1)

    def __len__(self) -> int:
        """Number of distinct windows."""
        return len(self.stream) - self.context

    def next_batch(self, generator: torch.Generator) -> TrainingBatch:
        starts = torch.randint(len(self), (self.batch_size,), generator=generator)
        windows = self.stream[starts[:, None] + self.offsets]
        return TrainingBatch.full_windows(windows[:, :-1], self.offsets.expand(self.batch_size, -1).clone(),
                                          windows[:, 1:])


FLOAT64_ELEMENTS = 1 << 24  # 128 MB: the most float64 logits position_losses holds at once


def position_losses(model, windows: torch.Tensor, batch_size: int, *,
                    device: str | torch.device = "cpu") -> torch.Tensor:
    """Cross-entropy of every next token of ``windows`` [n, w]: float64 [n, w - 1], on the CPU. Token
    p+1 is predicted from tokens 0..p at position IDs 0..p. ``device``: where ``model`` is (each
    chunk of windows is moved there)."""
    out = []
    with torch.no_grad():
        for start in range(0, len(windows), batch_size):
            chunk = windows[start:start + batch_size].to(device)
            inputs, targets = chunk[:, :-1], chunk[:, 1:]
            positions = torch.arange(inputs.shape[1], device=chunk.device).expand_as(inputs)
            logits = model(inputs, positions).token_logits
            rows = max(1, FLOAT64_ELEMENTS // logits[0].numel())  # float64 [rows, w - 1, vocab] at a time
            for first in range(0, len(logits), rows):
                part = logits[first:first + rows].double()
                out.append(F.cross_entropy(part.transpose(1, 2), targets[first:first + rows], reduction="none").cpu())
    return torch.cat(out)
