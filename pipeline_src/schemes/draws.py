"""Random draws shared by the training transforms of several schemes, and the room they draw in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .scheme import check_below_target

if TYPE_CHECKING:
    import torch


def uniform_up_to(high: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One uniform integer in [0, high] per entry of ``high`` (an int64 tensor, high >= 0)."""
    import torch

    draw = torch.rand(high.shape, generator=generator, dtype=torch.float64)
    return torch.minimum((draw * (high + 1).double()).long(), high)


def offset_budget(largest: torch.Tensor, target_length: int) -> torch.Tensor:
    """Per row, the largest offset that keeps IDs whose largest is ``largest`` (an int64 tensor)
    below ``target_length``; a row whose IDs already reach it is a ValueError
    (:func:`.scheme.check_below_target`)."""
    check_below_target(int(largest.max()), target_length)
    return target_length - 1 - largest
