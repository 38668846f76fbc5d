"""From dataset rows to padded tensors: the model sees prompt + response, right-padded."""

from __future__ import annotations

from dataclasses import dataclass, fields

import polars as pl
import torch

from ..devices.placement import to_device
from ..storage.ragged import padded


@dataclass
class SequenceTable:
    """Every sample as one right-padded sequence (prompt followed by response)."""

    tokens: torch.Tensor  # [N, W] int64, <pad> = 0 past each row's length
    positions: torch.Tensor  # [N, W] int64 base position IDs, 0 past each row's length
    lengths: torch.Tensor  # [N] tokens in prompt + response
    prompt_lengths: torch.Tensor  # [N]

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, *, coupled: bool = True) -> "SequenceTable":
        """The base IDs are the task's coupled IDs (``coupled``) or plain 0..L-1 per row."""
        both = frame.select(seq=pl.concat_list("prompt", "response"),
                            pos=pl.concat_list("prompt_pos", "response_pos"))
        tokens, lengths = padded(both["seq"])
        tokens, lengths = torch.from_numpy(tokens), torch.from_numpy(lengths)
        if coupled:
            positions = torch.from_numpy(padded(both["pos"])[0])
        else:
            column = torch.arange(tokens.shape[1])[None, :]
            positions = column.masked_fill(column >= lengths[:, None], 0).expand_as(tokens).clone()
        prompt_lengths = frame["prompt"].list.len().to_numpy()
        return cls(tokens, positions, lengths, torch.from_numpy(prompt_lengths.astype("int64")))

    def __len__(self) -> int:
        return len(self.lengths)


@dataclass
class TrainingBatch:
    inputs: torch.Tensor  # [B, T] tokens 0..L-2 of each sequence
    positions: torch.Tensor  # [B, T+1] base IDs of tokens 0..L-1: the inputs' IDs, then the last target's
    targets: torch.Tensor  # [B, T] tokens 1..L-1 (the next token at each input position)
    loss_mask: torch.Tensor  # [B, T] bool: True where the target is a response token
    lengths: torch.Tensor  # [B] real input tokens per row
    # long [n]: where loss_mask is True, as indices into [B * T] (found on the CPU, so that selecting
    # on a GPU needs no host read); None when every target is scored (full windows)
    scored_rows: torch.Tensor | None
    # long [B]: each row's k, where the source's samples have one (the log counts accuracy per k); else None
    groups: torch.Tensor | None = None

    def to(self, device: torch.device) -> "TrainingBatch":
        """The same batch with every tensor on ``device`` (the same tensors where they already are;
        see :func:`pipeline_src.devices.placement.to_device`)."""
        return TrainingBatch(**{f.name: None if (value := getattr(self, f.name)) is None else to_device(value, device)
                                for f in fields(self)})

    @classmethod
    def full_windows(cls, inputs: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor) -> "TrainingBatch":
        """A batch of full windows, every target scored (``positions`` [B, T+1] as for any batch)."""
        B, T = inputs.shape
        return cls(inputs=inputs, positions=positions, targets=targets,
                   loss_mask=torch.ones(B, T, dtype=torch.bool, device=inputs.device),
                   lengths=torch.full((B,), T, dtype=torch.long, device=inputs.device), scored_rows=None)

    def scored(self, values: torch.Tensor) -> torch.Tensor:
        """The rows of ``values`` [B, T, ...] where a target is scored, as [n, ...] in row-major order
        (the same values, in the same order, as ``values[loss_mask]``). With every target scored, a
        view: no copy of a [B, T, vocab] tensor forward, no scatter into zeros backward."""
        rows = values.flatten(0, 1)
        return rows if self.scored_rows is None else rows[self.scored_rows]


def training_batch(table: SequenceTable, index: torch.Tensor, pad_multiple: int,
                   groups: torch.Tensor | None = None) -> TrainingBatch:
    """Rows ``index`` as next-token-prediction tensors, padded to a multiple of ``pad_multiple``
    so that the CPU sees few distinct shapes; ``groups`` (each row's k, or None) carried along."""
    lengths = table.lengths[index] - 1
    width = int(lengths.max())
    width = -(-width // pad_multiple) * pad_multiple
    tokens = _fit(table.tokens[index], width + 1)
    positions = _fit(table.positions[index], width + 1)
    column = torch.arange(width)[None, :]
    real = column < lengths[:, None]
    loss_mask = (column >= table.prompt_lengths[index][:, None] - 1) & real
    return TrainingBatch(tokens[:, :-1], positions, tokens[:, 1:], loss_mask, lengths,
                         scored_rows=loss_mask.flatten().nonzero().squeeze(1), groups=groups)


def _fit(matrix: torch.Tensor, width: int) -> torch.Tensor:
    """Cut or right-pad (with 0) a [B, W] matrix to [B, width]."""
    if matrix.shape[1] >= width:
        return matrix[:, :width]
    return torch.nn.functional.pad(matrix, (0, width - matrix.shape[1]))
