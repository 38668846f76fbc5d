"""Scheme ``abs``: a learned absolute table on the task's IDs; its encoding ``abs`` is the table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .scheme import Encoding, ModelParams, Scheme, identity_ids

if TYPE_CHECKING:
    from torch import nn


class LearnedTable(Encoding):
    """A learned vector per position ID, ``max_positions`` of them, added to the token embedding.

    An ID beyond the table is an error (the decoder checks), never a silent clamp.
    """

    learned_table = True

    def input_table(self, cfg: ModelParams) -> nn.Embedding:
        from torch import nn

        return nn.Embedding(cfg.max_positions, cfg.d_model)


ENCODING = LearnedTable("abs", "learned absolute table of max_positions rows added to the input")

SCHEME = Scheme(name="abs", summary="learned absolute table on the task's IDs", encoding=ENCODING,
                train_transform=identity_ids, module=__name__, colour="tab:brown")
