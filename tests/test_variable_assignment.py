"""variable_assignment generator (Figure 3) and its own Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings,
split into statements and the query chain is followed with a plain Python dict.
"""

from __future__ import annotations

import functools
from collections import Counter

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.tasks import get_task

from .helpers import TASK_PARAMS, assert_write_rejects, frame_fixtures, record, small_frame, write
from .helpers import generate as generate_task

NAME = "variable_assignment"
TASK = get_task(NAME)
VOCAB = TASK.vocab

TRAIN = {**TASK_PARAMS[NAME]["train"], "n_samples": 3000}
EVAL = TASK_PARAMS[NAME]["eval"]
EVAL_PLAIN = {**EVAL, "scratchpad": False}
DIGITS = {str(c) for c in range(10)}

generate = functools.partial(generate_task, NAME)
train_frame, eval_frame = frame_fixtures(NAME, TRAIN)


def parse(prompt_ids, prompt_pos, name_tokens=1):
    """Decode ``<bos> statements ? q =`` into [(lhs, rhs, ID, tokens)] in prompt order and the
    query; a name is the tuple of its ``name_tokens`` letters, a digit a 1-tuple."""
    tokens = VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>" and tokens[-1] == "=", tokens
    assert tokens[-2 - name_tokens] == "?", tokens
    body, body_pos = tokens[1:-2 - name_tokens], prompt_pos[1:-2 - name_tokens]
    assert body and body[-1] == ";", tokens
    statements, start = [], 0
    for end in (i for i, token in enumerate(body) if token == ";"):
        words, ids = body[start:end], set(body_pos[start:end + 1])
        assert len(ids) == 1, body_pos[start:end + 1]  # the tokens of a statement share one ID
        assert words.count("=") == 1, words
        lhs, rhs = tuple(words[:words.index("=")]), tuple(words[words.index("=") + 1:])
        assert len(lhs) == name_tokens and all(t.startswith("v") for t in lhs), words
        assert rhs in {(c,) for c in DIGITS} or (len(rhs) == name_tokens and all(t.startswith("v") for t in rhs)), words
        statements.append((lhs, rhs, ids.pop(), end + 1 - start))
        start = end + 1
    query = tuple(tokens[-1 - name_tokens:-1])
    assert all(t.startswith("v") for t in query)
    return statements, query


def follow(statements, query):
    """The chain from ``query`` to its digit: [(rhs, ID of the statement read)] hop by hop."""
    table = {lhs: (rhs, sid) for lhs, rhs, sid, _ in statements}
    hops, current = [], query
    while True:
        rhs, sid = table[current]
        hops.append((rhs, sid))
        if rhs[0] in DIGITS:
            return hops
        current = rhs
        assert len(hops) <= len(statements), "cycle"


# frames by kind: one-token names (the default), and names of 2 and 3 letters (n_vars = 5^2, 3^3)
PARAMS = {
    "train": TRAIN, "eval": EVAL, "plain": EVAL_PLAIN,
    "train_2": {**TRAIN, "n_vars": 25, "name_tokens": 2},
    "eval_3": {**EVAL, "n_vars": 27, "name_tokens": 3},
    "plain_2": {**EVAL_PLAIN, "n_vars": 25, "name_tokens": 2},
    # the query chain's depth grows with n: Unif{ceil(n/2)..n}
    "train_grows": {**TRAIN, "depth_law": "grows"},
    "eval_grows": {**EVAL, "depth_law": "grows"},
    "eval_grows_2": {**EVAL, "n_vars": 25, "name_tokens": 2, "depth_law": "grows"},
}
FRAMES = sorted(PARAMS)


@functools.cache
def frame_of(which: str) -> pl.DataFrame:
    """Training frames with seed 11, evaluation frames with seed 5 (as ``frame_fixtures``)."""
    if which.startswith("train"):
        return generate("train", PARAMS[which], 11)
    return generate("eval", PARAMS[which], 5)


@pytest.fixture
def frames():
    return {which: frame_of(which) for which in FRAMES}


def letters_of(params) -> int:
    """A, the letters of a name: A^name_tokens = n_vars."""
    return round(params["n_vars"] ** (1 / params["name_tokens"]))


# --- blocks and the scratchpad flag -------------------------------------------------------------

def test_blocks_do_not_change_the_law(monkeypatch):
    """Drawing in blocks only bounds memory: a tiny block gives valid, equally distributed data."""
    from pipeline_src.tasks import variable_assignment

    monkeypatch.setattr(variable_assignment, "BLOCK", 7)
    frame = generate("train", {**TRAIN, "n_samples": 50}, 3)
    TASK.schema.validate(frame)
    assert frame.height == 50


def test_scratchpad_flag_changes_only_the_response(eval_frame):
    same = ["length", "n_statements", "depth", "prompt", "prompt_pos", "answer"]
    assert eval_frame.select(same).equals(frame_of("plain").select(same))


# --- labels, invariants and coupled IDs ---------------------------------------------------------

@pytest.mark.parametrize("which", FRAMES)
def test_statements_and_chains_are_well_formed(which, frames):
    params = PARAMS[which]
    frame = frames[which]
    assert frame.height > 0
    letters = letters_of(params)
    for row in frame.iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"], params["name_tokens"])
        n = len(statements)
        assert row["n_statements"] == row["length"] == n
        assert len(row["prompt"]) == 1 + sum(s[3] for s in statements) + params["name_tokens"] + 2
        lhs = [s[0] for s in statements]
        assert len(set(lhs)) == n  # every variable on a left side at most once
        names = set(lhs) | {s[1] for s in statements if s[1][0].startswith("v")}
        assert names == set(lhs)  # every right-hand variable is assigned: the n variables are all
        assert all(int(letter[1:]) < letters for name in names for letter in name)
        assert query in lhs
        for head in lhs:  # every chain, distractors included, ends in a digit
            assert follow(statements, head)[-1][0][0] in DIGITS
        heads = set(lhs) - {s[1] for s in statements}
        assert query in heads  # the query starts its chain
        for head in heads - {query}:  # distractor chains: at most d_max deep (the last one cut to fit)
            assert len(follow(statements, head)) <= params["d_max"]
        assert sum(len(follow(statements, h)) for h in heads) == n  # the chains partition the statements
        hops = follow(statements, query)
        assert row["depth"] == len(hops)
        low, high = ((n + 1) // 2, n) if params["depth_law"] == "grows" else (1, min(params["d_max"], n))
        assert low <= row["depth"] <= high
        assert row["answer"] == int(hops[-1][0][0])


@pytest.mark.parametrize("which", FRAMES)
def test_response_follows_the_chain(which, frames):
    params = PARAMS[which]
    for row in frames[which].iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"], params["name_tokens"])
        hops = follow(statements, query)
        response = VOCAB.decode(row["response"])
        if which.startswith("plain"):
            assert response == [hops[-1][0][0], "<eos>"]
        else:
            assert response == [token for rhs, _ in hops for token in rhs] + ["<eos>"]


@pytest.mark.parametrize("which", FRAMES)
def test_coupled_ids_follow_the_rule(which, frames):
    """<bos> 0; every token of statement j -> r+j; `?` r+n+1, each letter of q r+n+2, `=` r+n+3;
    <eos> -> r+n+4 (r = 1)."""
    r, per_name = 1, PARAMS[which]["name_tokens"]
    for row in frames[which].iter_rows(named=True):
        n = row["n_statements"]
        statements, _ = parse(row["prompt"], row["prompt_pos"], per_name)
        expected = ([0] + [r + j for j, statement in enumerate(statements) for _ in range(statement[3])]
                    + [r + n + 1] + [r + n + 2] * per_name + [r + n + 3])
        assert row["prompt_pos"] == expected
        assert row["response_pos"][-1] == r + n + 4


@pytest.mark.parametrize("which", FRAMES)
def test_each_response_token_has_the_id_of_the_statement_it_reads(which, frames):
    """Locality: each response token's ID is that of the statement whose rhs it is part of, and
    that statement's lhs is the previous hop's variable (the query for the first hop)."""
    params = PARAMS[which]
    for row in frames[which].iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"], params["name_tokens"])
        by_id = {sid: (lhs, rhs) for lhs, rhs, sid, _ in statements}
        response = VOCAB.decode(row["response"])[:-1]
        ids = row["response_pos"][:-1]
        if which.startswith("plain"):  # only the answer: read from the chain's last statement
            lhs, rhs = by_id[ids[0]]
            assert rhs == (response[0],)
            assert follow(statements, query)[-1] == (rhs, ids[0])
            continue
        previous, at = query, 0
        while at < len(response):
            lhs, rhs = by_id[ids[at]]
            assert tuple(response[at:at + len(rhs)]) == rhs
            assert set(ids[at:at + len(rhs)]) == {ids[at]}
            assert lhs == previous
            previous, at = rhs, at + len(rhs)


def test_depth_law_and_statement_counts(train_frame):
    counts = Counter(train_frame["n_statements"].to_list())
    support = range(TRAIN["n_min"], TRAIN["n_max"] + 1)
    assert set(counts) == set(support)
    for value in support:
        assert abs(counts[value] / TRAIN["n_samples"] - 1 / len(support)) < 0.03
    for n in (2, 10):  # d ~ Unif{1..min(d_max, n)}
        depths = Counter(train_frame.filter(pl.col("n_statements") == n)["depth"].to_list())
        high = min(TRAIN["d_max"], n)
        assert set(depths) == set(range(1, high + 1))
        total = sum(depths.values())
        for value in depths.values():
            assert abs(value / total - 1 / high) < 0.15


def test_growing_depth_law():
    """depth_law grows: d ~ Unif{ceil(n/2)..n} at every n, in training and evaluation alike."""
    for which, lengths in (("train_grows", (2, 9, 16)), ("eval_grows", (3, 8, 24))):
        frame = frame_of(which)
        for n in lengths:
            depths = Counter(frame.filter(pl.col("n_statements") == n)["depth"].to_list())
            support = range((n + 1) // 2, n + 1)
            assert set(depths) == set(support), (which, n, depths)
            total = sum(depths.values())
            for value in depths.values():
                assert abs(value / total - 1 / len(support)) < 0.5 / len(support) + 0.1


def test_a_growing_scratchpad_needs_more_hops_than_training_showed():
    """Followed by hand: each training sample's scratchpad has at most n_max hops; at n = 24 every
    evaluation sample's query chain needs at least 12, and its scratchpad writes each of them."""
    trained = [len(follow(*parse(row["prompt"], row["prompt_pos"]))) for row in
               frame_of("train_grows").head(500).iter_rows(named=True)]
    assert max(trained) == TRAIN["n_max"]
    longest = frame_of("eval_grows").filter(pl.col("length") == 24)
    assert longest.height == EVAL["n_per_cell"]
    for row in longest.iter_rows(named=True):
        hops = follow(*parse(row["prompt"], row["prompt_pos"]))
        assert 12 <= len(hops) == row["depth"] and len(row["response"]) == len(hops) + 1


def test_capped_law_is_the_depth_law_of_before():
    """The capped law draws exactly the depths of d ~ Unif{1..min(d_max, n)} from the same stream, so
    datasets made before the law was a choice are unchanged."""
    import numpy as np

    from pipeline_src.tasks.variable_assignment import depth_law

    n = np.random.default_rng(0).integers(1, 30, size=1000)
    drawn = depth_law(np.random.default_rng(1), n, 4, "capped")
    before = 1 + (np.random.default_rng(1).random(len(n)) * np.minimum(4, n)).astype(np.int64)
    assert np.array_equal(drawn, before)


def test_answers_digits_and_variables_are_spread(train_frame):
    assert set(train_frame["answer"].to_list()) == set(range(10))
    used = Counter()
    for prompt in train_frame["prompt"].to_list()[:600]:
        used.update(t for t in VOCAB.decode(prompt) if t.startswith("v"))
    assert set(used) == {f"v{i}" for i in range(TRAIN["n_vars"])}  # all names, not just v0..v{n_max-1}


def test_multi_token_names_are_all_words_of_their_letters():
    """With 2-token names over 5 letters every one of the 25 words is used as a name, and the same
    seed draws the same samples as with one-token names, spelled differently: the lengths, depths,
    answers and the IDs of the statements the response reads are equal."""
    params = PARAMS["train_2"]
    frame = frame_of("train_2")
    words = set()
    for row in frame.head(600).iter_rows(named=True):
        words.update(s[0] for s in parse(row["prompt"], row["prompt_pos"], 2)[0])
    assert words == {(f"v{a}", f"v{b}") for a in range(5) for b in range(5)}
    one_token = generate("train", {**params, "name_tokens": 1}, 11)
    same = ["length", "n_statements", "depth", "answer"]
    assert frame.select(same).equals(one_token.select(same))
    reads = [sorted(set(ids[:-1])) for ids in frame["response_pos"].to_list()]
    assert reads == [sorted(set(ids[:-1])) for ids in one_token["response_pos"].to_list()]


def test_query_statement_position_is_uniform(eval_frame):
    """The shuffle puts the query statement anywhere: its ID spreads over all n statements."""
    cell = eval_frame.filter(pl.col("length") == 3)
    first = Counter(ids[0] for ids in cell["response_pos"].to_list())
    assert set(first) == {1, 2, 3}


@pytest.mark.parametrize("which", ["eval", "plain", "eval_3", "plain_2", "eval_grows", "eval_grows_2"])
def test_sequence_tokens_and_max_position(which, frames):
    frame, params = frames[which], PARAMS[which]
    for row in frame.iter_rows(named=True):
        used = len(row["prompt"]) + len(row["response"])
        assert used <= TASK.sequence_tokens(row["length"], params)
        if params["name_tokens"] == 1:
            assert TASK.sequence_tokens(row["length"], params) <= TASK.sequence_tokens(row["length"])
        assert TASK.max_position_id(row["length"]) == max(row["prompt_pos"] + row["response_pos"])
    # the exact bound is reached: always with one-token names; with longer ones where one chain
    # (n <= d_max) of full depth is likely among the cell's samples
    # (n <= d_max) of full depth is likely among the cell's samples; when the depth grows, the longest
    # sample is the one chain of depth n, likely among a cell's 40 samples for n <= 8
    deepest = 8 if params["depth_law"] == "grows" else params["d_max"]
    reached = [n for n in params["lengths"] if params["name_tokens"] == 1 and params["depth_law"] == "capped"
               or n <= deepest]
    for n in reached:
        lengths = frame.filter(pl.col("length") == n).select(
            pl.col("prompt").list.len() + pl.col("response").list.len())
        assert lengths.max().item() == TASK.sequence_tokens(n, params)


# --- evaluation grid and parameter errors -------------------------------------------------------

def test_eval_grid_cells():
    """One cell per statement count, in order (the frame's cells are checked by the contract)."""
    assert TASK.eval_cells(EVAL) == [(n,) for n in EVAL["lengths"]]


@pytest.mark.parametrize("split,params", [
    ("train", {**TRAIN, "n_vars": 15}),  # fewer variables than n_max statements
    ("eval", {**EVAL, "n_vars": 23}),  # fewer than the largest eval length
    ("train", {**TRAIN, "n_vars": 10_000}),  # more than the vocabulary holds
    ("train", {**TRAIN, "n_min": 0}),
    ("train", {**TRAIN, "d_max": 0}),
    ("train", {**TRAIN, "depth_law": "deep"}),
    ("train", {**TRAIN, "scratchpad": "yes"}),
    ("train", {**TRAIN, "name_tokens": 2}),  # 24 names are not a square number of words
    ("train", {**TRAIN, "n_vars": 27, "name_tokens": 2}),
    ("train", {**TRAIN, "name_tokens": 0}),
    ("eval", {**EVAL, "lengths": [3, 3]}),
    ("eval", {**EVAL, "lengths": []}),
])
def test_bad_params_raise(split, params):
    with pytest.raises(ValueError):
        generate(split, params, 0)


def test_n_vars_error_says_why():
    with pytest.raises(ValueError, match="n_vars"):
        generate("eval", {**EVAL, "n_vars": 10}, 0)


# --- schema checks specific to this task (the shared ones are in test_task_contract.py) ---------

@pytest.mark.parametrize("which", ["plain", "train_2", "eval_3", "plain_2"])
def test_frames_round_trip(tmp_path, which):
    """Answer-only responses (no scratchpad) and multi-token names pass the schema too."""
    frame = frame_of(which)
    split = "train" if which.startswith("train") else "eval"
    path = write(NAME, frame, tmp_path / "frame.parquet", record(NAME, split, PARAMS[which], 5))
    assert datasets.read(path, TASK.schema).equals(frame)


BAD_FRAMES = {
    "depth_gt_n": lambda f: f.with_columns(depth=pl.col("n_statements") + 1),
    "length_not_n": lambda f: f.with_columns(length=pl.col("length") + 1),
    "answer_ten": lambda f: f.with_columns(answer=pl.lit(10, dtype=pl.Int32)),
    "answer_wrong": lambda f: f.with_columns(answer=(pl.col("answer") + 1) % 10),
    "prompt_cut": lambda f: f.with_columns(prompt=pl.col("prompt").list.head(pl.col("prompt").list.len() - 4)),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, kind):
    assert_write_rejects(NAME, BAD_FRAMES[kind](small_frame(NAME)), tmp_path)
