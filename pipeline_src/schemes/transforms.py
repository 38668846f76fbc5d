"""Positional schemes (SPEC 3): each turns the task's position IDs into the IDs the model sees.

Positions are data. A task supplies *coupled* IDs for every token (``prompt_pos``,
``response_pos``; for sparse parity they are simply 0..T-1). A scheme decides

* which base IDs it starts from: the task's coupled IDs (coupled, ppc) or plain sequential IDs
  0..T-1 (every other scheme);
* which *encoding* the model uses (rotary, learned absolute table, or none);
* how the base IDs are transformed at training time (PoSE skips, a random global shift, a random
  offset of everything after ``<bos>``); evaluation always uses the base IDs unchanged;
* whether the model also *predicts* the ID of the next token (ppc: Predictive Position Coupling),
  in which case evaluation feeds back the model's own predicted IDs for the response.

The model only consumes the resulting ``position_ids[B, T]``.
"""

from __future__ import annotations

import torch

from . import SCHEMES, Scheme, get_scheme  # noqa: F401  (re-exported)


def _below(high: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One uniform integer in [0, high] per entry of ``high`` (an int64 tensor, high >= 0)."""
    draw = torch.rand(high.shape, generator=generator, dtype=torch.float64)
    return torch.minimum((draw * (high + 1).double()).long(), high)


def pose_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int, chunks: int,
             generator: torch.Generator) -> torch.Tensor:
    """PoSE (Zhu et al., 2023): split each row into ``chunks`` contiguous chunks and shift chunk i
    by a skip u_i, with u_0 = 0 and u nondecreasing, so the IDs stay strictly increasing and the
    largest ID is below ``target_length``. Chunks may be empty. Only the first ``lengths[b]`` tokens
    of row b are real; padding gets IDs too (masked out by the caller's loss).

    ``base`` [B, T] holds the task's IDs, assumed to be 0..T-1 per row here.
    """
    batch, width = base.shape
    budget = target_length - 1 - base.gather(1, (lengths - 1).clamp(min=0)[:, None]).squeeze(1)
    if torch.any(budget < 0):
        raise ValueError(f"a training sequence is longer than the PoSE target length {target_length}")
    # chunk boundaries: chunks-1 sorted cut points in [1, length-1] per row
    cut_high = (lengths - 2).clamp(min=0)[:, None].expand(batch, chunks - 1)
    cuts = (1 + _below(cut_high.contiguous(), generator)).sort(dim=1).values
    skips_high = budget[:, None].expand(batch, chunks - 1)
    skips = _below(skips_high.contiguous(), generator).sort(dim=1).values
    skips = torch.cat([torch.zeros(batch, 1, dtype=torch.long), skips], dim=1)  # u_0 = 0
    column = torch.arange(width)[None, :, None]
    chunk_of = (column >= cuts[:, None, :]).sum(dim=2)  # [B, T] index of each token's chunk
    return base + skips.gather(1, chunk_of)


def shift_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int,
              generator: torch.Generator) -> torch.Tensor:
    """Add one random offset r per row, uniform over the offsets that keep every real ID below
    ``target_length``."""
    last = base.gather(1, (lengths - 1).clamp(min=0)[:, None]).squeeze(1)
    budget = target_length - 1 - last
    if torch.any(budget < 0):
        raise ValueError(f"a training sequence is longer than the shift target length {target_length}")
    return base + _below(budget, generator)[:, None]


def offset_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int,
               generator: torch.Generator) -> torch.Tensor:
    """Coupled training IDs: add one random offset per row to every ID except column 0 (``<bos>``,
    which keeps ID 0), uniform over the offsets that keep every real ID below ``target_length``.

    The task's coupled IDs use the evaluation start offset r = 1; adding a shift in
    0..target_length-1-max(ID) draws r ~ Unif{1..target_length-max(ID at r=1)} (Cho et al.)."""
    width = base.shape[1]
    real = torch.arange(width)[None, :] < lengths[:, None]
    largest = base.masked_fill(~real, 0).amax(dim=1)
    budget = target_length - 1 - largest
    if torch.any(budget < 0):
        raise ValueError(f"a training sequence has a coupled ID >= the target length {target_length}")
    shift = _below(budget, generator)[:, None].expand(-1, width).clone()
    shift[:, 0] = 0
    return base + shift


def train_position_ids(scheme: Scheme, base: torch.Tensor, lengths: torch.Tensor, *,
                       target_length: int, pose_chunks: int, generator: torch.Generator) -> torch.Tensor:
    """Training-time IDs of one batch under ``scheme``."""
    if scheme.train_transform == "pose":
        return pose_ids(base, lengths, target_length, pose_chunks, generator)
    if scheme.train_transform == "shift":
        return shift_ids(base, lengths, target_length, generator)
    if scheme.train_transform == "offset":
        return offset_ids(base, lengths, target_length, generator)
    return base


def eval_position_ids(scheme: Scheme, base: torch.Tensor) -> torch.Tensor:
    """Evaluation-time IDs of the prompt (and, for coupled, the oracle IDs of the response): the
    base IDs unchanged, for every scheme in this module."""
    return base
