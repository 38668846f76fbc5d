"""What every task generator shares: the columns of a task frame and the evaluation-grid loop.

A task frame holds the task's key columns (Int32) followed by the common columns ``prompt``,
``response``, ``prompt_pos``, ``response_pos`` (ragged lists of Int32) and ``answer`` (Int32).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


def frame_columns(drawn: dict[str, np.ndarray], **keys: np.ndarray) -> dict:
    """Per-sample columns of the common layout: ``keys`` (cast to Int32, in the order given), then
    the ragged lists cut from ``drawn``'s right-padded ``prompt``/``prompt_pos`` (row lengths
    ``prompt_len``) and ``response``/``response_pos`` (``response_len``), then its ``answer``."""
    from ..storage.ragged import ragged

    return {
        **{name: values.astype(np.int32) for name, values in keys.items()},
        "prompt": ragged(drawn["prompt"], drawn["prompt_len"]),
        "response": ragged(drawn["response"], drawn["response_len"]),
        "prompt_pos": ragged(drawn["prompt_pos"], drawn["prompt_len"]),
        "response_pos": ragged(drawn["response_pos"], drawn["response_len"]),
        "answer": drawn["answer"].astype(np.int32),
    }


def eval_grid(cells: Sequence[tuple], seed: int, draw_cell: Callable, why_empty: str):
    """Concatenate ``draw_cell(rng, *cell)`` (a polars DataFrame) over the evaluation ``cells``.

    Each cell draws from its own stream seeded by (seed, *cell), so adding or removing a cell
    leaves the others unchanged. An empty grid raises ValueError, explained by ``why_empty``.
    """
    import polars as pl

    if not cells:
        raise ValueError(f"the evaluation grid is empty: {why_empty}")
    return pl.concat([draw_cell(np.random.default_rng([seed, *cell]), *cell) for cell in cells])


def length_cells(params: dict) -> list[tuple[int]]:
    """One cell per evaluation length in ``params["lengths"]``, as 1-tuples; duplicates raise."""
    lengths = [int(n) for n in params["lengths"]]
    if len(set(lengths)) != len(lengths):
        raise ValueError(f"duplicate evaluation length in {lengths}")
    return [(n,) for n in lengths]


def length_range(params: dict, low: str = "n_min", high: str = "n_max", *, prefix: str = "") -> tuple[int, int]:
    """The training range (``params[low]``, ``params[high]``) of a task's length measure, checked:
    1 <= low <= high. A task's ``check_section`` calls it on its config section's ``data`` block
    (``prefix`` "data.", so the error names the config field), its training generator on its params
    (``prefix`` naming the task); the ValueError names the field."""
    n_min, n_max = int(params[low]), int(params[high])
    if n_min < 1:
        raise ValueError(f"{prefix}{low}={n_min} must be >= 1")
    if n_min > n_max:
        raise ValueError(f"{prefix}{low}={n_min} exceeds {high}={n_max}")
    return n_min, n_max


def check_eval_length(task: str, length: int) -> None:
    """Raise ValueError for an evaluation length below 1 (``task`` names the task in the message)."""
    if length < 1:
        raise ValueError(f"{task} eval lengths must be >= 1; got {length}")
