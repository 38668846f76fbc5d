"""Scheme ``abs_shift``: a learned absolute table, trained on IDs shifted by one random offset per
sequence, so every row of the table up to the target length gets trained."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import abs as absolute
from .draws import offset_budget, uniform_up_to
from .scheme import Scheme

if TYPE_CHECKING:
    import torch


def shift_ids(base: torch.Tensor, lengths: torch.Tensor, target_length: int, generator: torch.Generator,
              **options) -> torch.Tensor:
    """Add one random offset r per row, uniform over the offsets that keep every real ID below
    ``target_length``."""
    last = base.gather(1, (lengths - 1).clamp(min=0)[:, None]).squeeze(1)
    budget = offset_budget(last, target_length)
    return base + uniform_up_to(budget, generator)[:, None]


SCHEME = Scheme(name="abs_shift", summary="learned absolute table; training IDs shifted by a random offset",
                encoding=absolute.ENCODING, train_transform=shift_ids, module=__name__, colour="tab:green")
