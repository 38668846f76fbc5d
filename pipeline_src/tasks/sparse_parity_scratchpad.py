"""Sparse parity with a scratchpad (ours, beyond the paper; a variant of Figure 2's task).

The prompt is the sparse parity prompt of Figure 1, ``<bos> m_1 b_1 ... m_l b_l =``, drawn by
:func:`sparse_parity.sample` (same vocabulary, same token IDs, and for the same seed and params
the same prompts as ``sparse_parity``). The response is the running parity over the marked bits in
order, ``s_1 ... s_k <eos>`` with s_j = XOR of the first j marked bits; the answer s_k is the
sparse parity label. Length = 2l, as for sparse parity.

Coupled position IDs (no offset, r = 0, as sparse parity's prompt IDs): the prompt keeps its
sequential IDs 0..2l+1 (``<bos>`` 0, m_i 2i-1, b_i 2i, ``=`` 2l+1); s_j gets the ID of the j-th
marked *bit* token, 2 i_j, which depends on the input: the case PPC exists for; ``<eos>`` gets the
ID after ``=``, 2l+2.

Under teacher forcing s_j depends on the j-th marked bit and, for j >= 2, on s_{j-1}; ``<eos>`` on
no token (:data:`DEPENDENCIES`).

Vectorised with NumPy over samples; a pure function of (params, seed).
"""

import numpy as np

from . import sparse_parity
from .dependency import Dependencies, Probe, parity_probe, response_sets
from .sparse_parity import ONE, VOCAB, ZERO, eval_cells, train_k_l  # noqa: F401 (re-exported)
from .task import Figure, Task

EOS = VOCAB.id("<eos>")
CELL_COLUMNS = ("k", "length")


def sample(rng: np.random.Generator, k: np.ndarray, n_bits: np.ndarray) -> dict[str, np.ndarray]:
    """The sparse parity prompt for each (k, l) plus the scratchpad response and coupled IDs.

    Returns right-padded matrices with row lengths, plus ``marked_index`` [N, max k] (the 1-based
    indices i_j of the marked bits in order, 0 past k) and ``answer``.
    """
    drawn = sparse_parity.sample(rng, k, n_bits)
    k = np.asarray(k, dtype=np.int64)
    n_bits = np.asarray(n_bits, dtype=np.int64)
    count, width = drawn["bits"].shape
    rows = np.arange(count)
    marked = drawn["marked"]
    # the marked slots in increasing order: a stable sort puts marked (key 0) before unmarked (1)
    order = np.argsort(~marked, axis=1, kind="stable")
    k_width = int(k.max())
    hop = np.arange(k_width + 1)[None, :]
    chain = hop[:, :k_width] < k[:, None]
    marked_index = (order[:, :k_width] + 1) * chain  # i_j, 1-based
    running = np.cumsum(drawn["bits"] * marked, axis=1) % 2
    scratch = np.take_along_axis(running, order[:, :k_width], axis=1)

    response = np.zeros((count, k_width + 1), dtype=np.int64)
    response[:, :k_width] = np.where(scratch == 1, ONE, ZERO) * chain
    response[rows, k] = EOS
    response_pos = np.zeros_like(response)
    response_pos[:, :k_width] = 2 * marked_index  # s_j -> ID of b_{i_j}
    response_pos[rows, k] = 2 * n_bits + 2  # <eos> -> the ID after `=`
    prompt_pos = np.broadcast_to(np.arange(drawn["prompt"].shape[1]), drawn["prompt"].shape)
    return {"prompt": drawn["prompt"], "prompt_pos": prompt_pos, "prompt_len": drawn["prompt_len"],
            "response": response, "response_pos": response_pos, "response_len": k + 1,
            "marked_index": marked_index, "answer": drawn["answer"]}


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Most tokens fed to the model for a sample of length 2l = ``length``: the prompt (2l+2) plus
    k+1 response tokens. Without ``params``, k <= l bounds it; with ``params`` holding ``k_test``
    (evaluation) or ``k_train`` (training) the largest k is used."""
    n_bits = length // 2
    k = n_bits
    if params is not None:
        k_values = params["k_test"] if "k_test" in params else [params["k_train"]]
        k = min(n_bits, max(int(v) for v in k_values))
    return length + 2 + k + 1


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest coupled ID of a sample of length 2l = ``length``: <eos> at 2l+2."""
    return length + 2


def generate_train(params: dict, seed: int):
    """Training set for one K_train: ``params`` = {k_train, l_min, l_max, n_samples}; the law of
    sparse parity (k ~ Unif{1..K_train}, l ~ Unif{max(k, l_min)..l_max}) and its seeding."""
    return sparse_parity.generate_train(params, seed, draw=sample)


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``params`` = {k_test, lengths, n_per_cell}; cells as sparse parity
    (k > l skipped), each seeded by (seed, k, length)."""
    return sparse_parity.generate_eval(params, seed, draw=sample, task="sparse_parity_scratchpad")


def dependency_sets(prompt: np.ndarray, response: np.ndarray) -> list[np.ndarray]:
    """s_j depends on the j-th marked bit and s_{j-1}, ``<eos>`` on nothing."""
    return response_sets([[i] for i in sparse_parity.marked_bits(prompt)], len(prompt), carry=True)


def probe(prompt: np.ndarray, response: np.ndarray, rng: np.random.Generator) -> Probe:
    """A random s_j; its marked bit flipped (relevant), another bit, marked or not (irrelevant; None
    when l = 1)."""
    return parity_probe(dependency_sets(prompt, response), sparse_parity.bit_indices(prompt), prompt, (ZERO, ONE),
                        rng)


DEPENDENCIES = Dependencies(sets=dependency_sets, probe=probe)


def schema():
    """The schema of a sparse parity frame with the scratchpad response."""
    import polars as pl

    from ..storage.table_schema import dataframe_check
    from .frame_schema import token_is

    class SparseParityScratchpadSchema(sparse_parity.prompt_schema()):
        """One sample of sparse parity with a running-parity scratchpad per row."""

        @dataframe_check
        def response_has_k_plus_1_tokens(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(
                (pl.col("response").list.len() == pl.col("k") + 1) & token_is("response", -1, EOS))

        @dataframe_check
        def answer_is_last_scratchpad_token(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(token_is("response", -2, ZERO + pl.col("answer")))

    return SparseParityScratchpadSchema


TASK = Task(
    name="sparse_parity_scratchpad",
    summary="Sparse parity with a scratchpad over the marked bits (our figure).", vocab=VOCAB,
    generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id,
    train_lengths=sparse_parity.train_lengths, make_schema=schema, layout=sparse_parity.LAYOUT,
    figure=Figure("sparse_parity_scratchpad", "pipeline_src.figures.sparse_parity_scratchpad_figure:plot"),
    cell_columns=CELL_COLUMNS, answer_index=-2, check_section=sparse_parity.check_section,
    dependencies=DEPENDENCIES)
