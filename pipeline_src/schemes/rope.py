"""Scheme ``rope``: rotary embedding on the task's IDs; its encoding ``rope`` rotates queries and keys.

Rotary (Su et al., 2021; the GPT-NeoX "rotate_half" layout): the first ``rotary_dim`` dims of each
head form pairs (i, i + rotary_dim/2), and pair i of a token at ID p turns by the angle
p * base^(-2i / rotary_dim). A query at p and a key at p' then score as if only p - p' mattered.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable

from .scheme import Encoding, ModelParams, Scheme, identity_ids

if TYPE_CHECKING:
    import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Map halves (a, b) of the last dim to (-b, a): a 90-degree turn of each pair (a_i, b_i)."""
    import torch

    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the first ``cos.shape[-1]`` dims of ``x`` [B, H, T, D]; the rest pass through.

    Dim ``i`` is paired with dim ``i + r/2`` and the pair is rotated by its angle.
    The arithmetic is done in float32 and cast back to ``x.dtype``.
    """
    import torch

    r = cos.shape[-1]
    x_rot, x_pass = x[..., :r].float(), x[..., r:]
    x_rot = x_rot * cos + rotate_half(x_rot) * sin
    return torch.cat((x_rot.to(x.dtype), x_pass), dim=-1)


def rotary_tables(position_ids: torch.Tensor, rotary_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """position_ids [B, T] -> cos, sin of shape [B, 1, T, rotary_dim] (broadcast over heads).

    Pair ``i`` rotates at frequency ``base ** (-2i / rotary_dim)``. Angles are computed from the
    given ids (per batch row, in float32), so any ids work.
    """
    import torch

    exponents = torch.arange(0, rotary_dim, 2, device=position_ids.device, dtype=torch.float32)
    inv_freq = 1.0 / base ** (exponents / rotary_dim)
    angles = position_ids[..., None].float() * inv_freq
    angles = torch.cat((angles, angles), dim=-1)[:, None]
    return angles.cos(), angles.sin()


class Rotary(Encoding):
    """Rotates queries and keys by their tokens' IDs (``rotary_pct`` of each head, base ``rotary_base``)."""

    def check(self, cfg: ModelParams) -> None:
        cfg.require(cfg.rotary_dim > 0, "rotary_pct", f"gives rotary_dim 0 for head_dim {cfg.head_dim} (need >= 2)")

    def rotation(self, cfg: ModelParams, position_ids: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        cos, sin = rotary_tables(position_ids, cfg.rotary_dim, cfg.rotary_base)
        return functools.partial(apply_rotary, cos=cos, sin=sin)


ENCODING = Rotary("rope", "rotary embedding of queries and keys")

SCHEME = Scheme(name="rope", summary="rotary embedding on the task's IDs", encoding=ENCODING,
                train_transform=identity_ids, module=__name__, colour="tab:purple")
