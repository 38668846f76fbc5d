"""Random draws shared by the training transforms of several schemes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def uniform_up_to(high: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One uniform integer in [0, high] per entry of ``high`` (an int64 tensor, high >= 0)."""
    import torch

    draw = torch.rand(high.shape, generator=generator, dtype=torch.float64)
    return torch.minimum((draw * (high + 1).double()).long(), high)
