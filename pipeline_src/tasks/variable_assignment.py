"""Variable assignment with chains of pointers (paper, Figure 3; SPEC 2.3).

A sample holds n statements ``lhs = rhs ;`` (4 tokens each), shuffled. They form chains: the
query chain ``q = v_a1``; ``v_a1 = v_a2 ; ... ; v_ad = c`` (c a digit, d the depth) and distractor
chains that fill the remaining n - d statements, each also ending in a digit. Every statement has
its own left-hand variable, so the n variables of a sample are distinct and each is on a left side
exactly once. The prompt is ``<bos> statements ? q =``. With a scratchpad the response follows the
chain hop by hop, ``v_a2 ... v_ad c <eos>``; without it, it is ``c <eos>``. Length = n.

Coupled position IDs (evaluation offset r = 1): ``<bos>`` -> 0; the 4 tokens of the statement in
prompt order j (0-based) -> r+j; ``?``, ``q``, ``=`` -> r+n+1, r+n+2, r+n+3; each response token
except ``<eos>`` -> the ID of the statement whose right-hand side it is (input-dependent);
``<eos>`` -> r+n+4.

Variable names are drawn per sample as a uniform random n-subset of ``v0..v{n_vars-1}`` in random
order, so every name is trained even when training uses fewer statements than evaluation. The
vocabulary is fixed (``MAX_VARS`` names); ``n_vars`` selects how many of them are used.

Vectorised with NumPy over samples (in fixed blocks, to bound memory); a pure function of
(params, seed).
"""

import numpy as np

from . import layout
from .task import Figure, Layout, Task, count, data_schema, scratchpad_variant
from .vocab import Vocab

MAX_VARS = 256
DIGITS = tuple(str(c) for c in range(10))
VOCAB = Vocab.with_specials(*DIGITS, "=", ";", "?", *(f"v{i}" for i in range(MAX_VARS)))
BOS, EOS, EQUALS, SEMI, QUERY = (VOCAB.id(t) for t in ("<bos>", "<eos>", "=", ";", "?"))
DIGIT0 = VOCAB.id("0")
VAR0 = VOCAB.id("v0")
OFFSET = 1  # r at evaluation
CELL_COLUMNS = ("length",)
PREFIX = "variable_assignment: "  # of the generators' errors
BLOCK = 4096  # samples drawn per block: bounds the [block, n_vars] key matrix


def check_vars(n_vars: int, largest_n: int, prefix: str = "") -> None:
    """1 <= n_vars <= MAX_VARS, and n_vars >= ``largest_n``, the largest statement count: a sample with
    n statements needs n distinct variables. ``check_section`` calls it on the config (``prefix``
    "data."), the generators on their params; the ValueError names the field."""
    if not 1 <= n_vars <= MAX_VARS:
        raise ValueError(f"{prefix}n_vars={n_vars} must lie in 1..{MAX_VARS}")
    if n_vars < largest_n:
        raise ValueError(f"{prefix}n_vars={n_vars} is smaller than the largest statement count {largest_n}: "
                         f"a sample with n statements needs n distinct variables")


def depth_law(rng: np.random.Generator, n: np.ndarray, d_max: int) -> np.ndarray:
    """d ~ Unif{1..min(d_max, n)} per sample."""
    if d_max < 1:
        raise ValueError(f"variable_assignment needs d_max >= 1; got {d_max}")
    high = np.minimum(d_max, n)
    return 1 + (rng.random(len(n)) * high).astype(np.int64)


def sample(rng: np.random.Generator, n: np.ndarray, d: np.ndarray, n_vars: int, d_max: int,
           scratchpad: bool) -> dict[str, np.ndarray]:
    """Draw one sample per entry of ``n`` (statements) and ``d`` (query depth, 1 <= d <= n).

    Statements are first laid out in *slots*: slots 0..d-1 are the query chain (slot j's lhs is
    variable j, its rhs variable j+1, slot d-1's rhs the answer digit); slots d..n-1 hold distractor
    chains, consecutive in the same way, with depths drawn i.i.d. from Unif{1..d_max} and the last
    one cut to fit. Slot s gets variable ``names[s]`` on its left. Then the slots are shuffled into
    prompt order. Returns right-padded matrices with row lengths, plus ``answer``, ``slot_of``
    [N, max n] (prompt order -> slot) and ``order_of`` (slot -> prompt order).
    """
    n = np.asarray(n, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    if n.ndim != 1 or len(n) == 0 or n.shape != d.shape:
        raise ValueError("variable_assignment needs non-empty 1-d arrays n and d of equal shape")
    if np.any(n < 1) or np.any(d < 1) or np.any(d > n):
        raise ValueError("variable_assignment needs 1 <= d <= n for every sample")
    check_vars(n_vars, int(n.max()), PREFIX)
    count, width = len(n), int(n.max())
    rows = np.arange(count)[:, None]
    slot = np.arange(width)[None, :]
    inside = slot < n[:, None]

    # n distinct variable names per sample, in random order: the ranks of i.i.d. uniform keys.
    names = np.argsort(rng.random((count, n_vars)), axis=1)[:, :width]
    digits = rng.integers(0, 10, size=(count, width), dtype=np.int64)

    # chain ends: slot d-1 (query), then the distractors' cumulative depths, and slot n-1
    ends = slot == (d - 1)[:, None]
    cum = d[:, None] + np.cumsum(rng.integers(1, d_max + 1, size=(count, width), dtype=np.int64), axis=1)
    in_range = cum <= n[:, None]
    ends[np.nonzero(in_range)[0], cum[in_range] - 1] = True
    ends |= slot == (n - 1)[:, None]
    next_name = np.concatenate([names[:, 1:], np.zeros((count, 1), dtype=np.int64)], axis=1)
    lhs = VAR0 + names
    rhs = np.where(ends, DIGIT0 + digits, VAR0 + next_name)

    # shuffle the n slots into prompt order
    keys = np.where(inside, rng.random((count, width)), np.inf)
    slot_of = np.argsort(keys, axis=1)  # prompt order p -> slot (first n entries)
    order_of = np.argsort(slot_of, axis=1)  # slot -> prompt order

    statements = np.stack([lhs[rows, slot_of], np.full((count, width), EQUALS),
                           rhs[rows, slot_of], np.full((count, width), SEMI)], axis=2)
    statements = statements * inside[:, :, None]
    prompt = np.zeros((count, 4 * width + 4), dtype=np.int64)
    prompt[:, 0] = BOS
    prompt[:, 1:4 * width + 1] = statements.reshape(count, 4 * width)
    order = slot  # the same index range, read as prompt order p
    stmt_pos = np.repeat((OFFSET + order) * inside, 4, axis=1)  # all 4 tokens of statement p: r+p
    prompt_pos = np.zeros_like(prompt)
    prompt_pos[:, 1:4 * width + 1] = stmt_pos
    r = np.arange(count)
    for t, token in enumerate((QUERY, None, EQUALS)):  # `? q =` at 4n+1.. with IDs r+n+1..
        prompt[r, 4 * n + 1 + t] = VAR0 + names[:, 0] if token is None else token
        prompt_pos[r, 4 * n + 1 + t] = OFFSET + n + 1 + t

    answer = digits[r, d - 1]
    read_from = OFFSET + order_of  # ID of the statement in each slot
    if scratchpad:
        resp_width = int(d.max()) + 1
        hop = np.arange(resp_width)[None, :]
        chain = hop < d[:, None]
        response = np.zeros((count, resp_width), dtype=np.int64)
        response_pos = np.zeros_like(response)
        response[:, :resp_width - 1] = rhs[:, :resp_width - 1] * chain[:, :-1]
        response_pos[:, :resp_width - 1] = read_from[:, :resp_width - 1] * chain[:, :-1]
        response[r, d] = EOS
        response_pos[r, d] = OFFSET + n + 4
        response_len = d + 1
    else:
        response = np.stack([DIGIT0 + answer, np.full(count, EOS)], axis=1)
        response_pos = np.stack([read_from[r, d - 1], OFFSET + n + 4], axis=1)
        response_len = np.full(count, 2, dtype=np.int64)
    return {"prompt": prompt, "prompt_pos": prompt_pos, "prompt_len": 4 * n + 4,
            "response": response, "response_pos": response_pos, "response_len": response_len,
            "answer": answer, "slot_of": slot_of, "order_of": order_of}


def _frame(rng: np.random.Generator, n: np.ndarray, d: np.ndarray, params: dict):
    """Draw the samples in blocks of ``BLOCK`` rows from one stream (deterministic for fixed BLOCK)."""
    import polars as pl

    frames = []
    for start in range(0, len(n), BLOCK):
        part_n, part_d = n[start:start + BLOCK], d[start:start + BLOCK]
        drawn = sample(rng, part_n, part_d, int(params["n_vars"]), int(params["d_max"]),
                       bool(params["scratchpad"]))
        frames.append(pl.DataFrame(layout.frame_columns(drawn, length=part_n, n_statements=part_n,
                                                        depth=part_d)))
    return pl.concat(frames)


def _check_scratchpad(params: dict) -> None:
    if not isinstance(params["scratchpad"], bool):
        raise ValueError("variable_assignment's scratchpad must be true or false; "
                         f"got {params['scratchpad']!r}")


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Most tokens fed to the model for a sample with n = ``length`` statements: the prompt (4n+4)
    plus the longest response. Without ``params`` this bounds every depth law (d <= n, scratchpad);
    with ``params`` ({d_max, scratchpad}) it is exact."""
    if params is None:
        return 4 * length + 4 + length + 1
    if not params["scratchpad"]:
        return 4 * length + 4 + 2
    return 4 * length + 4 + min(int(params["d_max"]), length) + 1


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest coupled ID (evaluation offset r = 1) of a sample with n = ``length``: <eos> at r+n+4."""
    return OFFSET + length + 4


def generate_train(params: dict, seed: int):
    """Training set: ``params`` = {n_vars, n_min, n_max, d_max, scratchpad, n_samples};
    n ~ Unif{n_min..n_max}, d ~ Unif{1..min(d_max, n)}."""
    n_min, n_max = layout.length_range(params, prefix=PREFIX)
    _check_scratchpad(params)
    check_vars(int(params["n_vars"]), n_max, PREFIX)
    rng = np.random.default_rng([seed])
    n = rng.integers(n_min, n_max + 1, size=int(params["n_samples"]))
    d = depth_law(rng, n, int(params["d_max"]))
    return _frame(rng, n, d, params)


def eval_cells(params: dict) -> list[tuple[int]]:
    """One cell per statement count n, as 1-tuples keyed like ``CELL_COLUMNS``."""
    return layout.length_cells(params)


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``params`` = {n_vars, lengths, d_max, scratchpad, n_per_cell}; per cell n is
    fixed and d ~ Unif{1..min(d_max, n)}. Each cell has its own stream seeded by (seed, n)."""
    cells = eval_cells(params)
    if cells:  # an empty grid is reported by eval_grid
        _check_scratchpad(params)
        check_vars(int(params["n_vars"]), max(n for (n,) in cells), PREFIX)

    def draw_cell(rng: np.random.Generator, length: int):
        layout.check_eval_length("variable_assignment", length)
        n = np.full(int(params["n_per_cell"]), length, dtype=np.int64)
        return _frame(rng, n, depth_law(rng, n, int(params["d_max"])), params)

    return layout.eval_grid(cells, seed, draw_cell, "no lengths given")


def schema():
    """The pandera schema of a variable-assignment frame."""
    import pandera.polars as pa
    import polars as pl

    from .frame_schema import TaskSchema, token_is

    class VariableAssignmentSchema(TaskSchema):
        """One sample of variable assignment per row (SPEC 2.3): length = n statements."""

        n_statements: pl.Int32 = pa.Field(ge=1)
        depth: pl.Int32 = pa.Field(ge=1)
        answer: pl.Int32 = pa.Field(ge=0, le=9)

        _vocab_size = len(VOCAB)

        @pa.dataframe_check
        def length_is_n_statements(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("length") == pl.col("n_statements"))

        @pa.dataframe_check
        def depth_at_most_n_statements(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("depth") <= pl.col("n_statements"))

        @pa.dataframe_check
        def prompt_has_4n_plus_4_tokens(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(
                (pl.col("prompt").list.len() == 4 * pl.col("n_statements") + 4)
                & token_is("prompt", 0, BOS) & token_is("prompt", -3, QUERY)
                & token_is("prompt", -1, EQUALS))

        @pa.dataframe_check
        def response_is_chain_or_answer(cls, data) -> pl.LazyFrame:
            """``depth`` tokens plus <eos> (scratchpad) or the answer plus <eos> (no scratchpad)."""
            size = pl.col("response").list.len()
            return data.lazyframe.select(
                ((size == pl.col("depth") + 1) | (size == 2)) & token_is("response", -1, EOS))

        @pa.dataframe_check
        def answer_is_last_response_digit(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(token_is("response", -2, DIGIT0 + pl.col("answer")))

    return VariableAssignmentSchema


def train_lengths(data: dict) -> tuple[int, int]:
    """The training range of the statement count n: (n_min, n_max)."""
    return data["n_min"], data["n_max"]


def check_section(section: dict) -> None:
    """n_min <= n_max, and enough variable names for the largest statement count."""
    data = section["data"]
    n_max = layout.length_range(data, prefix="data.")[1]
    check_vars(data["n_vars"], max(n_max, *section["eval"]["lengths"]), "data.")


TASK = Task(
    name="variable_assignment", summary="Variable assignment (SPEC 2.3, Figure 3).", vocab=VOCAB,
    generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id, train_lengths=train_lengths,
    make_schema=schema,
    layout=Layout(
        by_k_train=False, data_fields=("n_vars", "n_min", "n_max", "d_max"), eval_data_fields=("n_vars", "d_max"),
        variants=("scratchpad", "direct"), variant_params=scratchpad_variant,
        data_schema=data_schema(n_min=count("Fewest statements n in training."),
                                n_max=count("Most statements n in training."),
                                d_max=count("Largest query depth; d ~ Unif{1..min(d_max, n)}."),
                                n_vars=count("Variable names in use (v0..).", maximum=MAX_VARS))),
    figure=Figure("figure3", "pipeline_src.figures.figure3:plot"), cell_columns=CELL_COLUMNS,
    answer_index=-2, headline_metrics={"scratchpad": "exact_match"}, check_section=check_section)
