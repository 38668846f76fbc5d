"""Variable assignment with chains of pointers (paper, Figure 3).

A sample holds n statements ``lhs = rhs ;`` (4 tokens each), shuffled. They form chains: the
query chain ``q = v_a1``; ``v_a1 = v_a2 ; ... ; v_ad = c`` (c a digit, d the depth) and distractor
chains that fill the remaining n - d statements, each also ending in a digit. The query depth d
follows ``depth_law`` (:func:`depth_law`): ``capped`` at d_max, so that a longer input adds only
distractors, or ``grows`` with n, so that it needs more hops than training showed. Every statement has
its own left-hand variable, so the n variables of a sample are distinct and each is on a left side
exactly once. The prompt is ``<bos> statements ? q =``. With a scratchpad the response follows the
chain hop by hop, ``v_a2 ... v_ad c <eos>``; without it, it is ``c <eos>``. Length = n.

Coupled position IDs (evaluation offset r = 1): ``<bos>`` -> 0; the 4 tokens of the statement in
prompt order j (0-based) -> r+j; ``?``, ``q``, ``=`` -> r+n+1, r+n+2, r+n+3; each response token
except ``<eos>`` -> the ID of the statement whose right-hand side it is (input-dependent);
``<eos>`` -> r+n+4.

Variable names are drawn per sample as a uniform random n-subset of the ``n_vars`` names in random
order, so every name is trained even when training uses fewer statements than evaluation. The
vocabulary is fixed (``MAX_VARS`` name tokens). With ``name_tokens`` L = 1 (the default) name k is
the one token ``v{k}``. With L > 1 a name is a word of L letters: the letters are the first A name
tokens ``v0..v{A-1}``, where A^L = n_vars, and name k is k written in base A (most significant
letter first), so the n_vars names are all words of L letters. The same seed draws the same
chains, digits and name indices for every L; only the spelling differs. A statement then has
2L + 2 tokens (L + 3 when its right side is a digit), all with the statement's ID; the query's L
letters share r+n+2, and a scratchpad hop to a variable has its L letters, all with the ID of the
statement they are read from.

Under teacher forcing each scratchpad token (a letter of a hop, or the answer digit) depends on the
right-hand token at the same letter of the statement defining the name it resolves (the query for
the first hop, else the previous hop); without the scratchpad the answer depends on the right sides
of every statement on the query chain; ``<eos>`` on no token (:data:`DEPENDENCIES`). The names
(left sides, query, earlier hops) say where to look, as sparse parity's markers, and are in no set.

Vectorised with NumPy over samples (in fixed blocks, to bound memory); a pure function of
(params, seed).
"""

import numpy as np

from . import generator
from .dependency import Dependencies, Probe, change_probe, response_sets
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
DROP = -1  # marks the unused letter columns of a digit in a name-sized slot


def check_vars(n_vars: int, largest_n: int, prefix: str = "", name_tokens: int = 1) -> int:
    """1 <= n_vars <= MAX_VARS, n_vars >= ``largest_n`` (the largest statement count: a sample with
    n statements needs n distinct variables) and, for names of ``name_tokens`` L > 1 tokens, n_vars
    = A^L for a whole number of letters A >= 2. Returns A (n_vars when L = 1). ``check_section``
    calls it on the config (``prefix`` "data."), the generators on their params; the ValueError
    names the field."""
    if not 1 <= n_vars <= MAX_VARS:
        raise ValueError(f"{prefix}n_vars={n_vars} must lie in 1..{MAX_VARS}")
    if n_vars < largest_n:
        raise ValueError(f"{prefix}n_vars={n_vars} is smaller than the largest statement count {largest_n}: "
                         f"a sample with n statements needs n distinct variables")
    if not isinstance(name_tokens, int) or isinstance(name_tokens, bool) or name_tokens < 1:
        raise ValueError(f"{prefix}name_tokens={name_tokens!r} must be a whole number >= 1")
    letters = round(n_vars ** (1 / name_tokens))
    if letters ** name_tokens != n_vars or (name_tokens > 1 and letters < 2):
        raise ValueError(f"{prefix}n_vars={n_vars} is not a power A^{name_tokens} of a letter count A >= 2, "
                         f"as names of name_tokens={name_tokens} letters need (e.g. n_vars=64 with 2 or 3)")
    return letters


DEPTH_LAWS = ("capped", "grows")


def depth_law(rng: np.random.Generator, n: np.ndarray, d_max: int, law: str = "capped") -> np.ndarray:
    """The query chain's depth per sample, one uniform draw each: ``capped``, d ~ Unif{1..min(d_max, n)}
    (the hops a chain needs stay at most d_max whatever the length); ``grows``, d ~ Unif{ceil(n/2)..n}
    (at least half the statements are on the query chain, so a test at m times the training length
    needs about m times the hops training showed). The distractors keep Unif{1..d_max} either way."""
    if d_max < 1:
        raise ValueError(f"variable_assignment needs d_max >= 1; got {d_max}")
    if law not in DEPTH_LAWS:
        raise ValueError(f"variable_assignment's depth_law={law!r} must be one of {list(DEPTH_LAWS)}")
    if law == "capped":
        low, high = np.ones_like(n), np.minimum(d_max, n)
    else:
        low, high = (n + 1) // 2, n
    return low + (rng.random(len(n)) * (high - low + 1)).astype(np.int64)


def spell(names: np.ndarray, letters: int, name_tokens: int) -> np.ndarray:
    """The tokens of name indices ``names`` [...]: their base-``letters`` digits, most significant
    first, as name tokens ``v0..`` [..., name_tokens]."""
    powers = letters ** np.arange(name_tokens - 1, -1, -1)
    return VAR0 + (names[..., None] // powers) % letters


def compact(tokens: np.ndarray, positions: np.ndarray, keep: np.ndarray, start: int = 0):
    """Move each row's kept entries of ``tokens``/``positions`` [N, W] to the left, in order, after
    ``start`` leading columns left empty; returns (tokens, positions, kept count), right-padded
    with 0 to ``start`` + the largest count."""
    kept = keep.sum(axis=1)
    rows, cols = np.nonzero(keep)
    dest = start + np.cumsum(keep, axis=1)[rows, cols] - 1
    out_tokens = np.zeros((len(tokens), start + int(kept.max())), dtype=np.int64)
    out_positions = np.zeros_like(out_tokens)
    out_tokens[rows, dest] = tokens[rows, cols]
    out_positions[rows, dest] = positions[rows, cols]
    return out_tokens, out_positions, kept


def sample(rng: np.random.Generator, n: np.ndarray, d: np.ndarray, n_vars: int, d_max: int,
           scratchpad: bool, name_tokens: int = 1) -> dict[str, np.ndarray]:
    """Draw one sample per entry of ``n`` (statements) and ``d`` (query depth, 1 <= d <= n).

    Statements are first laid out in *slots*: slots 0..d-1 are the query chain (slot j's lhs is
    variable j, its rhs variable j+1, slot d-1's rhs the answer digit); slots d..n-1 hold distractor
    chains, consecutive in the same way, with depths drawn i.i.d. from Unif{1..d_max} and the last
    one cut to fit. Slot s gets variable ``names[s]`` on its left. Then the slots are shuffled into
    prompt order. Names are spelled with ``name_tokens`` letters each (module docstring). Returns
    right-padded matrices with row lengths, plus ``answer``, ``slot_of`` [N, max n] (prompt order ->
    slot) and ``order_of`` (slot -> prompt order).
    """
    n = np.asarray(n, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    if n.ndim != 1 or len(n) == 0 or n.shape != d.shape:
        raise ValueError("variable_assignment needs non-empty 1-d arrays n and d of equal shape")
    if np.any(n < 1) or np.any(d < 1) or np.any(d > n):
        raise ValueError("variable_assignment needs 1 <= d <= n for every sample")
    letters = check_vars(n_vars, int(n.max()), PREFIX, name_tokens)
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
    # each slot's sides as name_tokens columns; a digit takes the first, DROP marks the rest
    lhs = spell(names, letters, name_tokens)
    rhs = np.where(ends[:, :, None], DROP, spell(next_name, letters, name_tokens))
    rhs[:, :, 0] = np.where(ends, DIGIT0 + digits, rhs[:, :, 0])

    # shuffle the n slots into prompt order
    keys = np.where(inside, rng.random((count, width)), np.inf)
    slot_of = np.argsort(keys, axis=1)  # prompt order p -> slot (first n entries)
    order_of = np.argsort(slot_of, axis=1)  # slot -> prompt order

    # statement p in prompt order: `lhs = rhs ;`, every token with the ID r+p
    statements = np.concatenate([lhs[rows, slot_of], np.full((count, width, 1), EQUALS),
                                 rhs[rows, slot_of], np.full((count, width, 1), SEMI)], axis=2)
    keep = (statements != DROP) & inside[:, :, None]
    order = slot  # the same index range, read as prompt order p
    stmt_pos = np.broadcast_to((OFFSET + order)[:, :, None], statements.shape)
    prompt, prompt_pos, body = compact(statements.reshape(count, -1), stmt_pos.reshape(count, -1),
                                       keep.reshape(count, -1), start=1)
    prompt[:, 0] = BOS
    prompt_len = 1 + body + name_tokens + 2
    prompt = np.pad(prompt, ((0, 0), (0, name_tokens + 2)))
    prompt_pos = np.pad(prompt_pos, ((0, 0), (0, name_tokens + 2)))
    r = np.arange(count)
    query = [np.full(count, QUERY), *lhs[:, 0].T, np.full(count, EQUALS)]  # q: the lhs of slot 0
    query_pos = [1, *[2] * name_tokens, 3]  # `? q =` -> r+n+1, r+n+2 (every letter of q), r+n+3
    for t, (token, pos) in enumerate(zip(query, query_pos, strict=False)):
        prompt[r, 1 + body + t] = token
        prompt_pos[r, 1 + body + t] = OFFSET + n + pos

    answer = digits[r, d - 1]
    read_from = OFFSET + order_of  # ID of the statement in each slot
    if scratchpad:  # hop j: the rhs of slot j (L letters, or the answer digit at j = d-1), then <eos>
        hops = int(d.max())
        chain = (slot[:, :hops] < d[:, None])[:, :, None] & (rhs[:, :hops] != DROP)
        hop_pos = np.broadcast_to(read_from[:, :hops, None], chain.shape)
        response, response_pos, hop_tokens = compact(rhs[:, :hops].reshape(count, -1),
                                                     hop_pos.reshape(count, -1), chain.reshape(count, -1))
        response = np.pad(response, ((0, 0), (0, 1)))
        response_pos = np.pad(response_pos, ((0, 0), (0, 1)))
        response[r, hop_tokens] = EOS
        response_pos[r, hop_tokens] = OFFSET + n + 4
        response_len = hop_tokens + 1
    else:
        response = np.stack([DIGIT0 + answer, np.full(count, EOS)], axis=1)
        response_pos = np.stack([read_from[r, d - 1], OFFSET + n + 4], axis=1)
        response_len = np.full(count, 2, dtype=np.int64)
    return {"prompt": prompt, "prompt_pos": prompt_pos, "prompt_len": prompt_len,
            "response": response, "response_pos": response_pos, "response_len": response_len,
            "answer": answer, "slot_of": slot_of, "order_of": order_of}


def _frame(rng: np.random.Generator, n: np.ndarray, d: np.ndarray, params: dict):
    """Draw the samples in blocks of ``BLOCK`` rows from one stream (deterministic for fixed BLOCK)."""
    import polars as pl

    frames = []
    for start in range(0, len(n), BLOCK):
        part_n, part_d = n[start:start + BLOCK], d[start:start + BLOCK]
        drawn = sample(rng, part_n, part_d, int(params["n_vars"]), int(params["d_max"]),
                       bool(params["scratchpad"]), params["name_tokens"])
        frames.append(pl.DataFrame(generator.frame_columns(drawn, length=part_n, n_statements=part_n,
                                                        depth=part_d)))
    return pl.concat(frames)


def _check_scratchpad(params: dict) -> None:
    if not isinstance(params["scratchpad"], bool):
        raise ValueError("variable_assignment's scratchpad must be true or false; "
                         f"got {params['scratchpad']!r}")


def sequence_tokens(length: int, params: dict | None = None) -> int:
    """Most tokens fed to the model for a sample with n = ``length`` statements: the prompt plus the
    longest response, both reached by the deepest query chain the depth law allows (d_top =
    min(d_max, n) capped, n when it grows). A statement has 2L + 2 tokens (L = ``name_tokens``), L - 1
    fewer when its right side is a digit, which is the case for the last statement of each chain: at
    least 1 + ceil((n - d_top) / d_max) chains. With ``params`` ({d_max, depth_law, scratchpad,
    name_tokens}) this is exact; without, it bounds every depth law (d <= n, scratchpad) for
    one-token names (prompt 4n + 4)."""
    if params is None:
        return 4 * length + 4 + length + 1
    per_name, d_max = params["name_tokens"], int(params["d_max"])
    deepest = length if params["depth_law"] == "grows" else min(d_max, length)
    chains = 1 + -(-(length - deepest) // d_max)
    prompt = 1 + length * (2 * per_name + 2) - chains * (per_name - 1) + per_name + 2
    if not params["scratchpad"]:
        return prompt + 2
    return prompt + (deepest - 1) * per_name + 2


def max_position_id(length: int, params: dict | None = None) -> int:
    """Largest coupled ID (evaluation offset r = 1) of a sample with n = ``length``: <eos> at r+n+4."""
    return OFFSET + length + 4


def generate_train(params: dict, seed: int):
    """Training set: ``params`` = {n_vars, name_tokens, n_min, n_max, d_max, depth_law, scratchpad,
    n_samples}; n ~ Unif{n_min..n_max}, d by ``depth_law`` (:func:`depth_law`)."""
    n_min, n_max = generator.length_range(params, prefix=PREFIX)
    _check_scratchpad(params)
    check_vars(int(params["n_vars"]), n_max, PREFIX, params["name_tokens"])
    rng = np.random.default_rng([seed])
    n = rng.integers(n_min, n_max + 1, size=int(params["n_samples"]))
    d = depth_law(rng, n, int(params["d_max"]), params["depth_law"])
    return _frame(rng, n, d, params)


def eval_cells(params: dict) -> list[tuple[int]]:
    """One cell per statement count n, as 1-tuples keyed like ``CELL_COLUMNS``."""
    return generator.length_cells(params)


def generate_eval(params: dict, seed: int):
    """Evaluation grid: ``params`` = {n_vars, name_tokens, lengths, d_max, depth_law, scratchpad,
    n_per_cell}; per cell n is fixed and d drawn by ``depth_law``. Each cell has its own stream seeded
    by (seed, n)."""
    cells = eval_cells(params)
    if cells:  # an empty grid is reported by eval_grid
        _check_scratchpad(params)
        check_vars(int(params["n_vars"]), max(n for (n,) in cells), PREFIX, params["name_tokens"])

    def draw_cell(rng: np.random.Generator, length: int):
        generator.check_eval_length("variable_assignment", length)
        n = np.full(int(params["n_per_cell"]), length, dtype=np.int64)
        return _frame(rng, n, depth_law(rng, n, int(params["d_max"]), params["depth_law"]), params)

    return generator.eval_grid(cells, seed, draw_cell, "no lengths given")


def query_chain(prompt: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The statements of ``<bos> statements ? q =`` on the query chain, as the sequence indices of
    their right sides in chain order (the last a digit), and the indices of every digit right side."""
    query = int(np.flatnonzero(prompt == QUERY)[0])
    right_side, digits, start = {}, [], 1
    for end in np.flatnonzero(prompt[:query] == SEMI):
        equals = start + int(np.flatnonzero(prompt[start:end] == EQUALS)[0])
        right_side[tuple(prompt[start:equals].tolist())] = rhs = np.arange(equals + 1, end)
        if len(rhs) == 1 and DIGIT0 <= prompt[rhs[0]] < DIGIT0 + len(DIGITS):
            digits.append(rhs[0])
        start = end + 1
    chain, name = [], tuple(prompt[query + 1:-1].tolist())
    for _ in right_side:  # a chain visits each statement at most once
        chain.append(right_side[name])
        if chain[-1][0] in digits:
            break
        name = tuple(prompt[chain[-1]].tolist())
    return chain, np.asarray(digits, dtype=np.int64)


def dependency_sets(prompt: np.ndarray, response: np.ndarray) -> list[np.ndarray]:
    """With the scratchpad (a response of one token per right-side token on the query chain, plus
    ``<eos>``) each token depends on the right-side token it copies; without (``c <eos>``; with
    depth 1 the two are the same) the answer depends on every right side of the chain."""
    hops = np.concatenate(query_chain(prompt)[0])
    reads = [[i] for i in hops] if len(response) == len(hops) + 1 else [hops]
    return response_sets(reads, len(prompt), carry=False)


def probe(prompt: np.ndarray, response: np.ndarray, rng: np.random.Generator) -> Probe:
    """The answer digit; the chain's digit changed to another (relevant), the digit of a random
    statement off the chain (irrelevant; None when every digit is on the chain)."""
    chain, digits = query_chain(prompt)
    token = len(response) - 2
    depends = dependency_sets(prompt, response)[token]
    return change_probe(token, chain[-1], np.setdiff1d(digits, depends), prompt,
                        range(DIGIT0, DIGIT0 + len(DIGITS)), rng)


DEPENDENCIES = Dependencies(sets=dependency_sets, probe=probe)


def schema():
    """The schema of a variable-assignment frame."""
    import polars as pl

    from ..storage.table_schema import Field, dataframe_check
    from .frame_schema import TaskSchema, token_is

    class VariableAssignmentSchema(TaskSchema):
        """One sample of variable assignment per row: length = n statements."""

        n_statements: pl.Int32 = Field(ge=1)
        depth: pl.Int32 = Field(ge=1)
        answer: pl.Int32 = Field(ge=0, le=9)

        _vocab_size = len(VOCAB)

        @dataframe_check
        def length_is_n_statements(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("length") == pl.col("n_statements"))

        @dataframe_check
        def depth_at_most_n_statements(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(pl.col("depth") <= pl.col("n_statements"))

        @dataframe_check
        def prompt_has_statements_then_query(cls, data) -> pl.LazyFrame:
            """``<bos> statements ? q =``: 4n + 4 tokens with one-token names (``?`` third from the
            end); longer names make it longer, with exactly one ``?``."""
            size, one_token = pl.col("prompt").list.len(), 4 * pl.col("n_statements") + 4
            query_once = pl.col("prompt").list.eval(pl.element() == QUERY).list.sum() == 1
            return data.lazyframe.select(
                ((size == one_token) & token_is("prompt", -3, QUERY) | (size > one_token) & query_once)
                & token_is("prompt", 0, BOS) & token_is("prompt", -1, EQUALS))

        @dataframe_check
        def response_is_chain_or_answer(cls, data) -> pl.LazyFrame:
            """The answer plus <eos> (no scratchpad, or depth 1), or depth - 1 names of equal length,
            the answer and <eos> (scratchpad)."""
            size, hops = pl.col("response").list.len(), pl.col("depth") - 1
            chain = (hops > 0) & (size > hops + 1) & ((size - 2) % pl.max_horizontal(hops, 1) == 0)
            return data.lazyframe.select(((size == 2) | chain) & token_is("response", -1, EOS))

        @dataframe_check
        def answer_is_last_response_digit(cls, data) -> pl.LazyFrame:
            return data.lazyframe.select(token_is("response", -2, DIGIT0 + pl.col("answer")))

    return VariableAssignmentSchema


def train_lengths(data: dict) -> tuple[int, int]:
    """The training range of the statement count n: (n_min, n_max)."""
    return data["n_min"], data["n_max"]


def check_section(section: dict) -> None:
    """n_min <= n_max, and enough variable names for the largest statement count."""
    data = section["data"]
    n_max = generator.length_range(data, prefix="data.")[1]
    check_vars(data["n_vars"], max(n_max, *section["eval"]["lengths"]), "data.", data["name_tokens"])


TASK = Task(
    name="variable_assignment", summary="Variable assignment (Figure 3).", vocab=VOCAB,
    generate_train=generate_train, generate_eval=generate_eval, eval_cells=eval_cells,
    sequence_tokens=sequence_tokens, max_position_id=max_position_id, train_lengths=train_lengths,
    make_schema=schema,
    layout=Layout(
        by_k_train=False, data_fields=("n_vars", "name_tokens", "n_min", "n_max", "d_max", "depth_law"),
        eval_data_fields=("n_vars", "name_tokens", "d_max", "depth_law"),
        variants=("scratchpad", "direct"), variant_params=scratchpad_variant,
        data_schema=data_schema(n_min=count("Fewest statements n in training."),
                                n_max=count("Most statements n in training."),
                                d_max=count("Largest depth of a distractor chain, and of the query chain under "
                                            "depth_law capped."),
                                depth_law={"type": "string", "enum": list(DEPTH_LAWS),
                                           "description": "The query chain's depth d at n statements: capped, "
                                           "d ~ Unif{1..min(d_max, n)} (longer inputs add only distractors); "
                                           "grows, d ~ Unif{ceil(n/2)..n} (longer inputs need more hops)."},
                                n_vars=count("Variable names in use; with name_tokens > 1 a power A^name_tokens "
                                             "(A letters).", maximum=MAX_VARS),
                                name_tokens=count("Tokens per variable name (letters v0..v{A-1}); 1: one token "
                                                  "v{k} per name.", maximum=8))),
    figure=Figure("figure3", "pipeline_src.figures.figure3:plot"), cell_columns=CELL_COLUMNS,
    answer_index=-2, headline_metrics={"scratchpad": "exact_match"}, check_section=check_section,
    dependencies=DEPENDENCIES)
