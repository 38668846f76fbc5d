"""Scheme ``rope_pose``: rotary, trained on IDs that skip ahead in chunks (PoSE, Zhu et al., 2023),
so a model trained on short sequences sees the IDs of long ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import rope
from .draws import offset_budget, uniform_up_to
from .scheme import Scheme

if TYPE_CHECKING:
    import torch


def pose_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int, pose_chunks: int,
             generator: torch.Generator, **options) -> torch.Tensor:
    """PoSE: split each row into ``pose_chunks`` contiguous chunks and shift chunk i by a skip u_i,
    with u_0 = 0 and u nondecreasing, so the IDs stay strictly increasing and the largest ID is
    below ``target_length``. Chunks may be empty. Only the first ``lengths[b]`` tokens of row b are
    real; padding gets IDs too (masked out by the caller's loss).

    ``base`` [B, T] holds the task's IDs, assumed to be 0..T-1 per row here.
    """
    import torch

    batch, width = base.shape
    last = base.gather(1, (lengths - 1).clamp(min=0)[:, None]).squeeze(1)
    budget = offset_budget(last, target_length)
    # chunk boundaries: pose_chunks-1 sorted cut points in [1, length-1] per row
    cut_high = (lengths - 2).clamp(min=0)[:, None].expand(batch, pose_chunks - 1)
    cuts = (1 + uniform_up_to(cut_high.contiguous(), generator)).sort(dim=1).values
    skips_high = budget[:, None].expand(batch, pose_chunks - 1)
    skips = uniform_up_to(skips_high.contiguous(), generator).sort(dim=1).values
    skips = torch.cat([torch.zeros(batch, 1, dtype=torch.long), skips], dim=1)  # u_0 = 0
    column = torch.arange(width)[None, :, None]
    chunk_of = (column >= cuts[:, None, :]).sum(dim=2)  # [B, T] index of each token's chunk
    return base + skips.gather(1, chunk_of)


SCHEME = Scheme(name="rope_pose", summary="rotary; training IDs skip ahead in chunks (PoSE)",
                encoding=rope.ENCODING, train_transform=pose_ids, module=__name__, colour="tab:blue")
