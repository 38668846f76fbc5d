"""Task registry: each task is a pure seeded generator with a vocabulary and a Parquet schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import sparse_parity
from .vocab import Vocab


@dataclass(frozen=True)
class Task:
    name: str
    vocab: Vocab
    generate_train: Callable  # (params, seed) -> polars DataFrame
    generate_eval: Callable  # (params, seed) -> polars DataFrame
    eval_cells: Callable  # (eval params) -> list of cell keys
    sequence_tokens: Callable[[int], int]  # length measure -> tokens the model sees
    schema_name: str  # class in .schemas (imported lazily: pandera is slow to import)

    @property
    def schema(self):
        from . import schemas

        return getattr(schemas, self.schema_name)


TASKS = {
    "sparse_parity": Task("sparse_parity", sparse_parity.VOCAB, sparse_parity.generate_train,
                          sparse_parity.generate_eval, sparse_parity.eval_cells,
                          sparse_parity.sequence_tokens, "SparseParitySchema"),
}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]
