"""Positional schemes (SPEC 3): each turns the task's position IDs into the IDs the model sees.

Positions are data. A task supplies base IDs for every token (0..T-1 for sparse parity); a scheme
decides which *encoding* the model uses (rotary, learned absolute table, or none) and how the base
IDs are transformed at training time (PoSE skips, a random shift) and at evaluation time (unchanged
for every scheme here). The model only consumes the resulting ``position_ids[B, T]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Scheme:
    name: str
    encoding: str  # the model's ModelConfig.position_encoding: "rope", "abs" or "none"
    train_transform: str  # "identity", "pose" or "shift"
    summary: str


SCHEMES = {
    s.name: s
    for s in (
        Scheme("nope", "none", "identity", "no positional information (causal mask only)"),
        Scheme("rope", "rope", "identity", "rotary embedding on the task's IDs"),
        Scheme("abs", "abs", "identity", "learned absolute table on the task's IDs"),
        Scheme("rope_pose", "rope", "pose", "rotary; training IDs skip ahead in chunks (PoSE)"),
        Scheme("abs_shift", "abs", "shift", "learned absolute table; training IDs shifted by a random offset"),
    )
}


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise KeyError(f"unknown positional scheme {name!r}; known: {sorted(SCHEMES)}")
    return SCHEMES[name]


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


def train_position_ids(scheme: Scheme, base: torch.Tensor, lengths: torch.Tensor, *,
                       target_length: int, pose_chunks: int, generator: torch.Generator) -> torch.Tensor:
    """Training-time IDs of one batch under ``scheme``."""
    if scheme.train_transform == "pose":
        return pose_ids(base, lengths, target_length, pose_chunks, generator)
    if scheme.train_transform == "shift":
        return shift_ids(base, lengths, target_length, generator)
    return base


def eval_position_ids(scheme: Scheme, base: torch.Tensor) -> torch.Tensor:
    """Evaluation-time IDs: the task's own IDs, for every scheme in this module."""
    return base
