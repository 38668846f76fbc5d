"""Task registry: each task is a pure seeded generator with a vocabulary and a Parquet schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import parity_scratchpad, sparse_parity, sparse_parity_scratchpad, variable_assignment
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
    # columns that key one evaluation cell; eval_cells returns tuples in this order
    cell_columns: tuple[str, ...] = ("k", "length")
    # index in ``response`` of the answer token (-1: the response is the answer; -2: ... <eos>)
    answer_index: int = -1
    # (length, params=None) -> largest coupled position ID of a sample of that length
    max_position_id: Callable | None = None

    @property
    def schema(self):
        from . import schemas

        return getattr(schemas, self.schema_name)


TASKS = {
    "sparse_parity": Task("sparse_parity", sparse_parity.VOCAB, sparse_parity.generate_train,
                          sparse_parity.generate_eval, sparse_parity.eval_cells,
                          sparse_parity.sequence_tokens, "SparseParitySchema",
                          max_position_id=sparse_parity.max_position_id),
    "parity_scratchpad": Task("parity_scratchpad", parity_scratchpad.VOCAB,
                              parity_scratchpad.generate_train, parity_scratchpad.generate_eval,
                              parity_scratchpad.eval_cells, parity_scratchpad.sequence_tokens,
                              "ParityScratchpadSchema", cell_columns=parity_scratchpad.CELL_COLUMNS,
                              answer_index=-2, max_position_id=parity_scratchpad.max_position_id),
    "variable_assignment": Task("variable_assignment", variable_assignment.VOCAB,
                                variable_assignment.generate_train, variable_assignment.generate_eval,
                                variable_assignment.eval_cells, variable_assignment.sequence_tokens,
                                "VariableAssignmentSchema", cell_columns=variable_assignment.CELL_COLUMNS,
                                answer_index=-2, max_position_id=variable_assignment.max_position_id),
    "sparse_parity_scratchpad": Task("sparse_parity_scratchpad", sparse_parity_scratchpad.VOCAB,
                                     sparse_parity_scratchpad.generate_train,
                                     sparse_parity_scratchpad.generate_eval,
                                     sparse_parity_scratchpad.eval_cells,
                                     sparse_parity_scratchpad.sequence_tokens,
                                     "SparseParityScratchpadSchema",
                                     cell_columns=sparse_parity_scratchpad.CELL_COLUMNS,
                                     answer_index=-2,
                                     max_position_id=sparse_parity_scratchpad.max_position_id),
}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]
