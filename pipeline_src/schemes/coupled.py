"""Scheme ``coupled``: position coupling (Cho et al., 2024). A learned absolute table on the task's
coupled IDs, which give tokens that belong together the same ID; the oracle coupled IDs at
evaluation; training IDs after ``<bos>`` offset at random."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import abs as absolute
from .draws import offset_budget, uniform_up_to
from .scheme import Scheme

if TYPE_CHECKING:
    import torch


def offset_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int, generator: torch.Generator,
               **options) -> torch.Tensor:
    """Coupled training IDs: add one random offset per row to every ID except column 0 (``<bos>``,
    which keeps ID 0), uniform over the offsets that keep every real ID below ``target_length``.

    The task's coupled IDs use the evaluation start offset r = 1; adding a shift in
    0..target_length-1-max(ID) draws r ~ Unif{1..target_length-max(ID at r=1)} (Cho et al.)."""
    import torch

    width = base.shape[1]
    real = torch.arange(width)[None, :] < lengths[:, None]
    largest = base.masked_fill(~real, 0).amax(dim=1)
    budget = offset_budget(largest, target_length)
    shift = uniform_up_to(budget, generator)[:, None].expand(-1, width).clone()
    shift[:, 0] = 0
    return base + shift


SCHEME = Scheme(name="coupled", summary="learned absolute table on the task's coupled IDs (oracle IDs at "
                "evaluation); training IDs after <bos> offset at random", encoding=absolute.ENCODING,
                train_transform=offset_ids, module=__name__, coupled=True, colour="tab:orange")
