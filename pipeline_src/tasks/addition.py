"""Integer addition with position coupling (Cho et al. 2024, "Position Coupling").

The prompt is ``<bos> a_n ... a_1 + b_n ... b_1 =``: two operands of n digits, most significant
first, zero-padded to the same length (so a, b ~ Unif[0, 10^n)). The response is the sum, least
significant digit first and padded to n+1 digits, ``c_1 ... c_{n+1} <eos>``; the length measure is
n. The answer is the carry out of the top digit, c_{n+1} (0 or 1): the one digit that depends on
every digit of both operands.

Coupled position IDs (evaluation offset r = 1): ``<bos>`` -> 0; the digits of equal significance
share an ID, a_i, b_i and c_i -> r+i; ``+`` and ``=`` -> r (so c_1, predicted at ``=``, sits one ID
after it, and each c_{i+1} one after c_i); c_{n+1} -> r+n+1 and ``<eos>`` -> r+n+2. The random
training offset is the positional scheme's business, as for every task.

With ``pad_operands`` (ours; off unless set, as ``config/config.yaml`` sets it) every response
token has an input token of its own ID: both operands get one more leading 0,
a_{n+1} = b_{n+1} = 0 -> r+n+1 (the carry out's partners), and ``+`` takes ``<eos>``'s ID r+n+2,
so the prompt is ``<bos> 0 a_n ... a_1 + 0 b_n ... b_1 =``
(2n+5 tokens). Without it the carry out and ``<eos>`` have no partner, and a model has to tell them
from what it attends to when no ID matches (docs/performance_log.md, "The addition anchor"). The random
draws are the same either way: the same seed gives the same sums.

Under teacher forcing c_i depends on a_i and b_i and, for i >= 2, on a_{i-1}, b_{i-1} and c_{i-1}
(the carry into digit i); ``<eos>`` on no token (:data:`DEPENDENCIES`).

Cho et al. train a 1-layer decoder on 1-30 digit operands and add 200-digit numbers with coupled
IDs; ``config/paper.yaml`` holds their setting. Vectorised with NumPy; a pure function of
(params, seed).
"""

import numpy as np

from . import generator
from .dependency import Dependencies, Probe, change_probe, pick, response_sets
from .task import Figure, Layout, Task, count, data_schema
from .vocab import Vocab

VOCAB = Vocab.with_specials(*(str(d) for d in range(10)), "+", "=")
BOS, EOS, PLUS, EQUALS, DIGIT0 = (VOCAB.id(t) for t in ("<bos>", "<eos>", "+", "=", "0"))
OFFSET = 1  # r at evaluation
CELL_COLUMNS = ("length",)


def sample(rng: np.random.Generator, n: np.ndarray, pad_operands: bool = False) -> dict[str, np.ndarray]:
    """One sum per entry of ``n`` (operand digits, >= 1): right-padded ``prompt``/``prompt_pos``
    [N, 2 max(n) + 3, or + 5 with ``pad_operands``] and ``response``/``response_pos`` [N, max(n) + 2]
    with their row lengths, the digits of ``a``, ``b`` and the sum ``c`` (least significant first,
    [N, max(n) + 1], 0 past the number) and ``answer`` (the carry out, c_{n+1})."""
    n = np.asarray(n, dtype=np.int64)
    if n.ndim != 1 or len(n) == 0:
        raise ValueError("addition needs a non-empty 1-d array of digit counts")
    if np.any(n < 1):
        raise ValueError("addition needs n >= 1 digits for every sample")
    size, width = len(n), int(n.max())
    rows = np.arange(size)
    inside = np.arange(width + 1)[None, :] < n[:, None]  # digit s (0-based significance) of the operands
    a = rng.integers(0, 10, size=(size, width + 1)) * inside
    b = rng.integers(0, 10, size=(size, width + 1)) * inside
    c = np.zeros_like(a)
    carry = np.zeros(size, dtype=np.int64)
    for s in range(width + 1):  # schoolbook addition, least significant digit first
        total = a[:, s] + b[:, s] + carry
        c[:, s], carry = total % 10, total // 10

    pad = int(bool(pad_operands))
    m = n + pad  # digits written per operand
    prompt = np.zeros((size, 2 * (width + pad) + 3), dtype=np.int64)
    prompt_pos = np.zeros_like(prompt)
    prompt[:, 0] = BOS
    row, s = np.nonzero(np.arange(width + 1)[None, :] < m[:, None])  # a's and b's digits of s = n are the pad's 0
    for operand, column in ((a, m[row] - s), (b, 2 * m[row] + 1 - s)):  # most significant digit first
        prompt[row, column] = DIGIT0 + operand[row, s]
        prompt_pos[row, column] = OFFSET + 1 + s  # digit of significance s+1 -> r + s + 1
    prompt[rows, m + 1], prompt_pos[rows, m + 1] = PLUS, OFFSET + (n + 2) * pad  # <eos>'s ID when padded
    prompt[rows, 2 * m + 2], prompt_pos[rows, 2 * m + 2] = EQUALS, OFFSET

    response = np.zeros((size, width + 2), dtype=np.int64)
    response_pos = np.zeros_like(response)
    row, s = np.nonzero(np.arange(width + 1)[None, :] <= n[:, None])  # c_1 .. c_{n+1}
    response[row, s], response_pos[row, s] = DIGIT0 + c[row, s], OFFSET + 1 + s
    response[rows, n + 1], response_pos[rows, n + 1] = EOS, OFFSET + n + 2
    return {"prompt": prompt, "prompt_pos": prompt_pos, "prompt_len": 2 * m + 3,
            "response": response, "response_pos": response_pos, "response_len": n + 2,
            "a": a, "b": b, "c": c, "answer": c[rows, n]}


def _frame(rng: np.random.Generator, n: np.ndarray, pad_operands: bool):
    import polars as pl

    return pl.DataFrame(generator.frame_columns(sample(rng, n, pad_operands), length=n))


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Tokens fed to the model for n = ``length`` digits: the prompt (2n+3, 2n+5 with
    ``pad_operands``) and the response (n+2)."""
    return 3 * length + 5 + 2 * _padded(params)


def _padded(params: dict | None) -> bool:
    return bool((params or {}).get("pad_operands", False))


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest coupled ID (r = 1) of a sample with n = ``length`` digits: <eos> at r+n+2."""
    return OFFSET + length + 2


def train_lengths(data: dict) -> tuple[int, int]:
    """The training range of the operand digits n: (n_min, n_max)."""
    return data["n_min"], data["n_max"]


def generate_train(params: dict, seed: int):
    """Training set: ``params`` = {n_min, n_max, n_samples, pad_operands}; n ~ Unif{n_min..n_max},
    then both operands uniform over n-digit strings (leading zeros allowed)."""
    n_min, n_max = generator.length_range(params, prefix="addition: ")
    rng = np.random.default_rng([seed])
    return _frame(rng, rng.integers(n_min, n_max + 1, size=int(params["n_samples"])), _padded(params))


def eval_cells(params: dict) -> list[tuple[int]]:
    """One cell per operand length n, as 1-tuples keyed like ``CELL_COLUMNS``."""
    return generator.length_cells(params)


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``params`` = {lengths, n_per_cell, pad_operands}; each cell from its own
    stream seeded by (seed, n)."""

    def draw_cell(rng: np.random.Generator, length: int):
        generator.check_eval_length("addition", length)
        return _frame(rng, np.full(int(params["n_per_cell"]), length, dtype=np.int64), _padded(params))

    return generator.eval_grid(eval_cells(params), seed, draw_cell, "no lengths given")


def check_section(section: dict) -> None:
    generator.length_range(section["data"], prefix="data.")


def digit_indices(prompt: np.ndarray, i: int) -> list[int]:
    """The sequence indices of a_i and b_i (significance ``i``, 1-based) in the prompt
    ``<bos> a_m ... a_1 + b_m ... b_1 =`` (m = n, or n + 1 with ``pad_operands``); none outside 1..m."""
    m = (len(prompt) - 3) // 2
    return [m + 1 - i, 2 * m + 2 - i] if 1 <= i <= m else []


def operand_digits(response: np.ndarray) -> int:
    """n, from the response ``c_1 ... c_{n+1} <eos>`` (the prompt has n or n + 1 digits per operand)."""
    return len(response) - 2


def dependency_sets(prompt: np.ndarray, response: np.ndarray) -> list[np.ndarray]:
    """c_i depends on a_i, b_i and, for i >= 2, on a_{i-1}, b_{i-1} and c_{i-1}; ``<eos>`` on nothing.

    The carry into digit i is (a_{i-1} + b_{i-1} + carry_{i-1}) >= 10, and under teacher forcing
    carry_{i-1} = (c_{i-1} - a_{i-1} - b_{i-1}) mod 10: the carry is c_{i-1} < a_{i-1} + b_{i-1},
    which c_{i-1} alone does not give (nor a_{i-1} and b_{i-1} alone). The leading zeros of
    ``pad_operands`` are constant, so no token depends on them.
    """
    n = operand_digits(response)

    def digits(i: int) -> list[int]:
        return digit_indices(prompt, i) if i <= n else []

    reads = [digits(i) + digits(i - 1) for i in range(1, n + 2)]
    return response_sets(reads, len(prompt), carry=True)


def probe(prompt: np.ndarray, response: np.ndarray, rng: np.random.Generator) -> Probe:
    """A random c_i, i in 1..n (not the carry out c_{n+1}); a_i or b_i changed to another digit
    (relevant: that always changes c_i), a digit of significance other than i and i-1 (irrelevant;
    None when there is none)."""
    n = operand_digits(response)
    i = pick(range(1, n + 1), rng)
    depends = dependency_sets(prompt, response)[i - 1]
    digits = np.concatenate([digit_indices(prompt, s) for s in range(1, n + 1)])
    return change_probe(i - 1, digit_indices(prompt, i), np.setdiff1d(digits, depends), prompt,
                        range(DIGIT0, DIGIT0 + 10), rng)


DEPENDENCIES = Dependencies(sets=dependency_sets, probe=probe)


def schema():
    """The schema of an addition frame."""
    import polars as pl

    from ..storage.table_schema import dataframe_check
    from .frame_schema import TaskSchema, token_is

    class AdditionSchema(TaskSchema):
        """One sum per row: length = n operand digits."""

        _vocab_size = len(VOCAB)

        @dataframe_check
        def prompt_has_2n_plus_3_or_5_tokens(cls, data) -> pl.LazyFrame:
            """2n + 3 tokens, or 2n + 5 with ``pad_operands``."""
            tokens = pl.col("prompt").list.len() - 2 * pl.col("length")
            return data.lazyframe.select(
                tokens.is_in([3, 5]) & token_is("prompt", 0, BOS) & token_is("prompt", -1, EQUALS))

        @dataframe_check
        def response_has_n_plus_1_digits(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(
                (pl.col("response").list.len() == pl.col("length") + 2) & token_is("response", -1, EOS))

        @dataframe_check
        def answer_is_the_carry_out(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(token_is("response", -2, DIGIT0 + pl.col("answer")))

    return AdditionSchema


TASK = Task(
    name="addition", summary="Integer addition, sum least significant digit first (Cho et al. 2024).",
    vocab=VOCAB, generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id, train_lengths=train_lengths,
    make_schema=schema,
    layout=Layout(by_k_train=False, data_fields=("n_min", "n_max", "pad_operands"), eval_data_fields=("pad_operands",),
                  variants=("direct",),
                  data_schema=data_schema(n_min=count("Fewest operand digits n in training."),
                                          n_max=count("Most operand digits n in training."),
                                          pad_operands={"type": "boolean", "description": (
                                              "One more leading 0 per operand (the carry out's partners) and "
                                              "`+` at <eos>'s ID: every response token has an input token of "
                                              "its own ID (ours).")})),
    figure=Figure("addition", "pipeline_src.figures.addition_figure:plot"), cell_columns=CELL_COLUMNS,
    answer_index=-2, headline_metrics={"direct": "exact_match"}, check_section=check_section,
    dependencies=DEPENDENCIES)
