"""Sparse parity, D^sp(l, k) (paper, Figure 1).

A sample shows l bits, each preceded by a marker: ``*`` if the bit belongs to the hidden set S
(|S| = k, uniform over k-subsets of {1..l}), ``-`` otherwise. The response is the single token
XOR(b_i, i in S). The prompt is ``<bos> m_1 b_1 ... m_l b_l =``; the task's length measure is 2l.
The answer depends on the k marked bits (:data:`DEPENDENCIES`), read from the markers of the prompt.

Everything is vectorised over samples with NumPy and is a pure function of (params, seed).
"""

import functools
from typing import Callable

import numpy as np

from . import generator
from .dependency import Dependencies, Probe, parity_probe
from .task import Figure, Layout, Task, count, data_schema
from .vocab import Vocab

VOCAB = Vocab.with_specials("0", "1", "*", "-", "=")
BOS, ZERO, ONE, MARK, SKIP, EQUALS = (VOCAB.id(t) for t in ("<bos>", "0", "1", "*", "-", "="))


def sample(rng: np.random.Generator, k: np.ndarray, n_bits: np.ndarray) -> dict[str, np.ndarray]:
    """Draw one sample per entry of ``k`` and ``n_bits`` = l (int arrays of equal shape, 1 <= k <= l).

    Returns padded arrays: ``prompt`` [n, 2*max(l)+2] (right-padded with <pad>), ``prompt_len``,
    ``bits`` [n, max(l)], ``marked`` [n, max(l)] (bool) and ``answer`` (0/1).
    """
    k = np.asarray(k, dtype=np.int64)
    n_bits = np.asarray(n_bits, dtype=np.int64)
    if np.any(k < 1) or np.any(k > n_bits):
        raise ValueError("sparse_parity needs 1 <= k <= l for every sample")
    n, width = len(k), int(n_bits.max())
    column = np.arange(width)[None, :]
    inside = column < n_bits[:, None]
    bits = rng.integers(0, 2, size=(n, width), dtype=np.int64) * inside
    # A uniform k-subset of the first l slots: the k smallest of l i.i.d. uniform keys.
    keys = np.where(inside, rng.random((n, width)), np.inf)
    rank = np.argsort(np.argsort(keys, axis=1), axis=1)
    marked = rank < k[:, None]
    answer = (bits * marked).sum(axis=1) % 2

    prompt = np.zeros((n, 2 * width + 2), dtype=np.int64)
    prompt[:, 0] = BOS
    prompt[:, 1::2][:, :width] = np.where(marked, MARK, SKIP) * inside
    prompt[:, 2::2][:, :width] = np.where(bits == 1, ONE, ZERO) * inside
    prompt[np.arange(n), 2 * n_bits + 1] = EQUALS
    return {"prompt": prompt, "prompt_len": 2 * n_bits + 2, "bits": bits, "marked": marked,
            "answer": answer}


def check_k_train(k_train: int, l_max: int, l_max_field: str = "l_max") -> None:
    """K_train <= l_max: every training sample has k <= l <= l_max. ``check_section`` calls it on the
    config (``l_max_field`` "data.l_max"), :func:`generate_train` on its params; the ValueError names
    them."""
    if k_train > l_max:
        raise ValueError(f"k_train value {k_train} exceeds {l_max_field}={l_max}: no sample can have k <= l")


def train_k_l(rng: np.random.Generator, n: int, k_train: int, l_min: int, l_max: int):
    """The training law: k ~ Unif{1..K_train}, then l ~ Unif{max(k, l_min)..l_max} (1 <= l_min <=
    l_max and K_train <= l_max, as :func:`generate_train` checks)."""
    k = rng.integers(1, k_train + 1, size=n)
    low = np.maximum(k, l_min)
    n_bits = low + (rng.random(n) * (l_max - low + 1)).astype(np.int64)
    return k, n_bits


def sample_layout(rng: np.random.Generator, k: np.ndarray, n_bits: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`sample` completed to the common task layout: the response is the answer token alone;
    position IDs are sequential, ``prompt_pos`` 0..2l+1 and the answer's 2l+2."""
    drawn = sample(rng, k, n_bits)
    prompt, prompt_len = drawn["prompt"], drawn["prompt_len"]
    return {**drawn, "prompt_pos": np.broadcast_to(np.arange(prompt.shape[1]), prompt.shape),
            "response": np.where(drawn["answer"] == 1, ONE, ZERO)[:, None],
            "response_pos": prompt_len[:, None], "response_len": np.ones(len(prompt), dtype=np.int64)}


def _frame(drawn: dict[str, np.ndarray], k: np.ndarray, n_bits: np.ndarray):
    import polars as pl

    return pl.DataFrame(generator.frame_columns(drawn, k=k, l=n_bits, length=2 * n_bits))


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Tokens fed to the model for a sample of length measure ``length`` (= 2l): prompt plus answer."""
    return length + 3


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest position ID of a sample of length 2l = ``length``: its IDs are 0..2l+2."""
    return length + 2


def generate_train(params: dict, seed: int, draw: Callable = sample_layout):
    """Training set for one K_train: ``params`` = {k_train, l_min, l_max, n_samples}, drawn under
    :func:`train_k_l` from one stream seeded by (seed, k_train). ``draw`` turns (rng, k, l) into
    the common layout: :func:`sample_layout` here, the scratchpad variant's ``sample`` there."""
    generator.length_range(params, "l_min", "l_max", prefix="sparse_parity: ")
    check_k_train(params["k_train"], params["l_max"])
    rng = np.random.default_rng([seed, params["k_train"]])
    k, n_bits = train_k_l(rng, params["n_samples"], params["k_train"], params["l_min"], params["l_max"])
    return _frame(draw(rng, k, n_bits), k, n_bits)


def eval_cells(params: dict) -> list[tuple[int, int]]:
    """The (k_test, length) cells of the evaluation grid; cells with k > l (= length/2) are skipped."""
    return [(k, length) for k in params["k_test"] for length in params["lengths"] if k <= length // 2]


def generate_eval(params: dict, seed: int, draw: Callable = sample_layout, task: str = "sparse_parity"):
    """Evaluation grid: ``params`` = {k_test, lengths, n_per_cell}; ``n_per_cell`` samples per
    (k_test, length) cell, each from its own stream seeded by (seed, k, length). ``draw`` is as
    for :func:`generate_train`; ``task`` names the task in errors."""
    for length in params["lengths"]:
        if length % 2:
            raise ValueError(f"{task} eval lengths are 2l and must be even; got {length}")

    def draw_cell(rng: np.random.Generator, k_test: int, length: int):
        k = np.full(params["n_per_cell"], k_test, dtype=np.int64)
        n_bits = np.full(params["n_per_cell"], length // 2, dtype=np.int64)
        return _frame(draw(rng, k, n_bits), k, n_bits)

    return generator.eval_grid(eval_cells(params), seed, draw_cell,
                            f"every k_test {params['k_test']} exceeds l = length/2 for every length "
                            f"{params['lengths']}")


def bit_indices(prompt: np.ndarray) -> np.ndarray:
    """The sequence indices 2i of the bits b_i of a prompt ``<bos> m_1 b_1 ... m_l b_l =``."""
    return np.arange(2, len(prompt) - 1, 2)


def marked_bits(prompt: np.ndarray) -> np.ndarray:
    """The sequence indices of the marked bits (marker ``*``), in order."""
    return 2 + 2 * np.flatnonzero(prompt[1:-1:2] == MARK)


def dependency_sets(prompt: np.ndarray, response: np.ndarray) -> list[np.ndarray]:
    """The answer depends on the marked bits."""
    return [marked_bits(prompt)]


def probe(prompt: np.ndarray, response: np.ndarray, rng: np.random.Generator) -> Probe:
    """A random marked bit flipped (relevant), a random unmarked one (irrelevant; None when k = l)."""
    return parity_probe(dependency_sets(prompt, response), bit_indices(prompt), prompt, (ZERO, ONE), rng)


DEPENDENCIES = Dependencies(sets=dependency_sets, probe=probe)


@functools.cache
def prompt_schema():
    """The schema base of sparse parity's frames: the (k, l) columns and the prompt (shared by the
    scratchpad variant)."""
    import polars as pl

    from ..storage.table_schema import Field, dataframe_check
    from .frame_schema import TaskSchema

    class SparseParityPrompt(TaskSchema):
        """The (k, l) columns and the prompt ``<bos> m_1 b_1 ... m_l b_l =`` of sparse parity,
        shared by its scratchpad variant."""

        k: pl.Int32 = Field(ge=1)
        l: pl.Int32 = Field(ge=1)  # noqa: E741 (the frame's column "l": the name is the data)
        length: pl.Int32 = Field(ge=2)

        _vocab_size = len(VOCAB)

        @dataframe_check
        def k_at_most_l(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("k") <= pl.col("l"))

        @dataframe_check
        def length_is_2l(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("length") == 2 * pl.col("l"))

        @dataframe_check
        def prompt_has_2l_plus_2_tokens(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("prompt").list.len() == pl.col("length") + 2)

    return SparseParityPrompt


def schema():
    """The schema of a sparse parity frame."""
    import polars as pl

    from ..storage.table_schema import dataframe_check

    class SparseParitySchema(prompt_schema()):
        """One sample of D^sp(l, k) per row (docs/tasks.md)."""

        @dataframe_check
        def one_response_token(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("response").list.len() == 1)

    return SparseParitySchema


def train_lengths(data: dict) -> tuple[int, int]:
    """The training range of the length measure 2l: (2 l_min, 2 l_max)."""
    return 2 * data["l_min"], 2 * data["l_max"]


def check_section(section: dict) -> None:
    """1 <= l_min <= l_max, and every K_train <= l_max (else no sample has k <= l)."""
    l_max = generator.length_range(section["data"], "l_min", "l_max", prefix="data.")[1]
    for k in section["k_train"]:
        check_k_train(k, l_max, "data.l_max")


LAYOUT = Layout(
    by_k_train=True, data_fields=("l_min", "l_max"),
    data_schema=data_schema(l_min=count("Smallest number of bits l in training (2l = length)."),
                            l_max=count("Largest number of bits l in training.")))

TASK = Task(
    name="sparse_parity", summary="Sparse parity (Figure 1).", vocab=VOCAB,
    generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id, train_lengths=train_lengths,
    make_schema=schema, layout=LAYOUT, figure=Figure("figure1", "pipeline_src.figures.figure1:plot"),
    check_section=check_section, dependencies=DEPENDENCIES)
