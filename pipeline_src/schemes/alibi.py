"""Scheme ``alibi``: attention with linear biases (Press et al., 2021, "Train Short, Test Long").

No learned table and no rotation: every head h adds -m_h * (p_i - p_j) to the score of query i
(at ID p_i) for key j (at ID p_j), a penalty linear in their distance. The bias depends on ID
differences only, so it also works on coupled IDs (where a key's ID may exceed the query's, and
the bias is then positive). Training IDs are the base IDs 0..T-1 unchanged.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .scheme import Encoding, ModelParams, Scheme, identity_ids

if TYPE_CHECKING:
    import torch


def alibi_slopes(n_head: int) -> list[float]:
    """The paper's head slopes m_h: for n a power of 2, the geometric sequence 2^(-8/n), 2^(-16/n),
    ..., 2^(-8); otherwise the slopes of the largest power of 2 below n, then every other slope of
    the next power of 2 until there are n."""
    if n_head & (n_head - 1) == 0:
        return [2.0 ** (-8.0 * (h + 1) / n_head) for h in range(n_head)]
    lower = 2 ** math.floor(math.log2(n_head))
    return alibi_slopes(lower) + alibi_slopes(2 * lower)[0::2][:n_head - lower]


class LinearBias(Encoding):
    """Adds -m_h * (query ID - key ID) to the attention scores of head h."""

    def attention_bias(self, cfg: ModelParams, query_ids: torch.Tensor, key_ids: torch.Tensor) -> torch.Tensor:
        import torch

        slopes = torch.tensor(alibi_slopes(cfg.n_head), dtype=torch.float32, device=query_ids.device)
        distance = (query_ids[:, :, None] - key_ids[:, None, :]).float()  # [B, T_query, T_key]
        return -slopes[:, None, None] * distance[:, None]


ENCODING = LinearBias("alibi", "a per-head attention bias linear in the query-key ID difference")

SCHEME = Scheme(name="alibi", summary="attention bias linear in the ID distance, a slope per head (ALiBi)",
                encoding=ENCODING, train_transform=identity_ids, module=__name__, colour="tab:cyan")
