"""Parity with a scratchpad (paper, Figure 2).

The prompt is ``<bos> b_1 ... b_n =`` and the response ``s_1 ... s_n <eos>`` with
s_i = b_1 XOR ... XOR b_i (the running parity); the answer is s_n. The length measure is n.
Without the scratchpad (``scratchpad: false``, the paper's baseline) the response is ``s_n <eos>``.

Position IDs are the *coupled* IDs of Cho et al. (2024) with the evaluation offset r = 1:
``<bos>`` -> 0, b_i -> r+i, ``=`` -> r, s_i -> r+i, ``<eos>`` -> r+n+1. So s_i shares its ID with
b_i, and every next token sits one ID after the token that predicts it. Without the scratchpad,
s_n -> r+n and ``<eos>`` -> r+n+1. The random training offset
r is the positional scheme's business (positions are data; the scheme transforms them).

Under teacher forcing s_i depends on b_i and, for i >= 2, on s_{i-1}; without the scratchpad s_n
depends on every bit; ``<eos>`` on no token (:data:`DEPENDENCIES`).

Everything is vectorised over samples with NumPy and is a pure function of (params, seed).
"""

import numpy as np

from . import generator
from .dependency import Dependencies, Probe, parity_probe, response_sets
from .task import Figure, Layout, Task, count, data_schema, scratchpad_variant
from .vocab import Vocab

VOCAB = Vocab.with_specials("0", "1", "=")
BOS, EOS, ZERO, ONE, EQUALS = (VOCAB.id(t) for t in ("<bos>", "<eos>", "0", "1", "="))
OFFSET = 1  # r at evaluation (docs/reconstruction.md)
CELL_COLUMNS = ("length",)


def sample(rng: np.random.Generator, n: np.ndarray, scratchpad: bool = True) -> dict[str, np.ndarray]:
    """Draw one sample per entry of ``n`` (int array, n >= 1).

    Returns right-padded matrices ``prompt``/``prompt_pos`` [N, max(n)+2] and
    ``response``/``response_pos`` [N, max(n)+1] (with the scratchpad; else [N, 2]) with their row
    lengths, plus ``bits`` [N, max(n)] (0 past n) and ``answer`` (s_n, 0/1).
    """
    n = np.asarray(n, dtype=np.int64)
    if n.ndim != 1 or len(n) == 0:
        raise ValueError("parity_scratchpad needs a non-empty 1-d array of lengths")
    if np.any(n < 1):
        raise ValueError("parity_scratchpad needs n >= 1 for every sample")
    count, width = len(n), int(n.max())
    rows = np.arange(count)
    column = np.arange(width)[None, :]
    inside = column < n[:, None]
    bits = rng.integers(0, 2, size=(count, width), dtype=np.int64) * inside
    running = np.cumsum(bits, axis=1) % 2
    answer = running[rows, n - 1]

    prompt = np.zeros((count, width + 2), dtype=np.int64)
    prompt[:, 0] = BOS
    prompt[:, 1:width + 1] = np.where(bits == 1, ONE, ZERO) * inside
    prompt[rows, n + 1] = EQUALS
    prompt_pos = np.zeros_like(prompt)
    prompt_pos[:, 1:width + 1] = (OFFSET + 1 + column) * inside  # b_i -> r + i (i is 1-based)
    prompt_pos[rows, n + 1] = OFFSET  # `=` -> r

    response = np.zeros((count, width + 1), dtype=np.int64)
    response[:, :width] = np.where(running == 1, ONE, ZERO) * inside
    response[rows, n] = EOS
    response_pos = np.zeros_like(response)
    response_pos[:, :width] = (OFFSET + 1 + column) * inside  # s_i -> r + i
    response_pos[rows, n] = OFFSET + n + 1  # <eos> -> r + n + 1
    if not scratchpad:  # keep the last step only: s_n <eos>, with the same IDs
        last = np.stack([n - 1, n], axis=1)
        response, response_pos = np.take_along_axis(response, last, 1), np.take_along_axis(response_pos, last, 1)
    return {"prompt": prompt, "prompt_pos": prompt_pos, "prompt_len": n + 2,
            "response": response, "response_pos": response_pos,
            "response_len": n + 1 if scratchpad else np.full_like(n, 2),
            "bits": bits, "answer": answer}


def _frame(rng: np.random.Generator, n: np.ndarray, params: dict):
    import polars as pl

    scratchpad = params["scratchpad"]
    if not isinstance(scratchpad, bool):
        raise ValueError(f"parity_scratchpad's scratchpad must be true or false; got {scratchpad!r}")
    return pl.DataFrame(generator.frame_columns(sample(rng, n, scratchpad), length=n))


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Tokens fed to the model for a sample with n = ``length`` bits: (n+2) prompt + (n+1) response
    (2 without the scratchpad; ``params`` None: with)."""
    if params is not None and not params["scratchpad"]:
        return length + 4
    return 2 * length + 3


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest coupled ID (evaluation offset r = 1) of a sample with n = ``length``: <eos> at r+n+1."""
    return OFFSET + length + 1


def generate_train(params: dict, seed: int):
    """Training set: ``params`` = {n_min, n_max, scratchpad, n_samples}; n ~ Unif{n_min..n_max}."""
    n_min, n_max = generator.length_range(params, prefix="parity_scratchpad: ")
    rng = np.random.default_rng([seed])
    n = rng.integers(n_min, n_max + 1, size=int(params["n_samples"]))
    return _frame(rng, n, params)


def eval_cells(params: dict) -> list[tuple[int]]:
    """One cell per length n, as 1-tuples keyed like ``CELL_COLUMNS``."""
    return generator.length_cells(params)


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``params`` = {lengths, scratchpad, n_per_cell}. Each cell has its own stream
    seeded by (seed, n), so adding or removing a cell leaves the others unchanged."""

    def draw_cell(rng: np.random.Generator, length: int):
        generator.check_eval_length("parity_scratchpad", length)
        n = np.full(int(params["n_per_cell"]), length, dtype=np.int64)
        return _frame(rng, n, params)

    return generator.eval_grid(eval_cells(params), seed, draw_cell, "no lengths given")


def dependency_sets(prompt: np.ndarray, response: np.ndarray) -> list[np.ndarray]:
    """s_i depends on b_i and s_{i-1} (scratchpad: n + 1 response tokens), s_n alone on every bit
    (without; with n = 1 the two are the same); ``<eos>`` on nothing."""
    bits = np.arange(1, len(prompt) - 1)
    reads = [[i] for i in bits] if len(response) == len(bits) + 1 else [bits]
    return response_sets(reads, len(prompt), carry=True)


def probe(prompt: np.ndarray, response: np.ndarray, rng: np.random.Generator) -> Probe:
    """With the scratchpad a random s_i, b_i flipped (relevant) and another bit (irrelevant; None when
    n = 1); without, the answer and a random bit flipped (irrelevant: None, it depends on all)."""
    return parity_probe(dependency_sets(prompt, response), np.arange(1, len(prompt) - 1), prompt, (ZERO, ONE), rng)


DEPENDENCIES = Dependencies(sets=dependency_sets, probe=probe)


def schema():
    """The schema of a parity-with-scratchpad frame."""
    import polars as pl

    from ..storage.table_schema import dataframe_check
    from .frame_schema import TaskSchema, token_is

    class ParityScratchpadSchema(TaskSchema):
        """One sample of parity with a scratchpad per row: length = n bits."""

        _vocab_size = len(VOCAB)

        @dataframe_check
        def prompt_has_n_plus_2_tokens(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(
                (pl.col("prompt").list.len() == pl.col("length") + 2)
                & token_is("prompt", 0, BOS) & token_is("prompt", -1, EQUALS))

        @dataframe_check
        def response_is_scratchpad_or_answer(cls, data) -> pl.LazyFrame:
            """n tokens plus <eos> (scratchpad) or the answer plus <eos> (no scratchpad)."""
            size = pl.col("response").list.len()
            return data.lazyframe.select(
                ((size == pl.col("length") + 1) | (size == 2)) & token_is("response", -1, EOS))

        @dataframe_check
        def answer_is_last_scratchpad_token(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(token_is("response", -2, ZERO + pl.col("answer")))

    return ParityScratchpadSchema


def train_lengths(data: dict) -> tuple[int, int]:
    """The training range of n: (n_min, n_max)."""
    return data["n_min"], data["n_max"]


def check_section(section: dict) -> None:
    generator.length_range(section["data"], prefix="data.")


TASK = Task(
    name="parity_scratchpad", summary="Parity with a scratchpad (Figure 2).", vocab=VOCAB,
    generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id, train_lengths=train_lengths,
    make_schema=schema,
    layout=Layout(by_k_train=False, data_fields=("n_min", "n_max"), variants=("scratchpad", "direct"),
                  variant_params=scratchpad_variant,
                  data_schema=data_schema(n_min=count("Fewest bits n in training."),
                                          n_max=count("Most bits n in training."))),
    figure=Figure("figure2", "pipeline_src.figures.figure2:plot"), cell_columns=CELL_COLUMNS,
    answer_index=-2, headline_metrics={"scratchpad": "exact_match"}, check_section=check_section,
    dependencies=DEPENDENCIES)
