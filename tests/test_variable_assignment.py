"""variable_assignment generator (SPEC 2.3) and its Parquet schema checks.

Expected values are recomputed independently of the generator: prompts are decoded to strings,
split into statements and the query chain is followed with a plain Python dict.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipeline_src import datasets
from pipeline_src.provenance import build_record
from pipeline_src.tasks import get_task

TASK = get_task("variable_assignment")
VOCAB = TASK.vocab

TRAIN = {"n_vars": 24, "n_min": 2, "n_max": 16, "d_max": 4, "scratchpad": True, "n_samples": 3000}
EVAL = {"n_vars": 24, "lengths": [1, 3, 8, 24], "d_max": 4, "scratchpad": True, "n_per_cell": 40}
EVAL_PLAIN = {**EVAL, "scratchpad": False}
DIGITS = {str(c) for c in range(10)}


def record(split: str, params: dict, seed: int) -> dict:
    spec = {"task": "variable_assignment", "split": split, "seed": seed, "params": params}
    return build_record("test", "data", spec, seeds={"seed": seed})


def generate(split: str, params: dict, seed: int) -> pl.DataFrame:
    return {"train": TASK.generate_train, "eval": TASK.generate_eval}[split](params, seed)


def write(frame: pl.DataFrame, path: Path, rec: dict) -> Path:
    datasets.write(frame, path, TASK.schema, rec)
    return path


def parse(prompt_ids, prompt_pos):
    """Decode ``<bos> statements ? q =`` into [(lhs, rhs, ID)] in prompt order and the query."""
    tokens = VOCAB.decode(prompt_ids)
    assert tokens[0] == "<bos>" and tokens[-3] == "?" and tokens[-1] == "=", tokens
    body, body_pos = tokens[1:-3], prompt_pos[1:-3]
    assert len(body) % 4 == 0, tokens
    statements = []
    for j in range(0, len(body), 4):
        lhs, eq, rhs, semi = body[j:j + 4]
        assert lhs.startswith("v") and eq == "=" and semi == ";", body[j:j + 4]
        assert rhs.startswith("v") or rhs in DIGITS, rhs
        ids = set(body_pos[j:j + 4])
        assert len(ids) == 1, body_pos[j:j + 4]  # the 4 tokens of a statement share one ID
        statements.append((lhs, rhs, ids.pop()))
    query = tokens[-2]
    assert query.startswith("v")
    return statements, query


def follow(statements, query):
    """The chain from ``query`` to its digit: [(rhs, ID of the statement read)] hop by hop."""
    table = {lhs: (rhs, sid) for lhs, rhs, sid in statements}
    hops, current = [], query
    while True:
        rhs, sid = table[current]
        hops.append((rhs, sid))
        if rhs in DIGITS:
            return hops
        current = rhs
        assert len(hops) <= len(statements), "cycle"


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=False)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def train_frame() -> pl.DataFrame:
    return generate("train", TRAIN, 11)


@pytest.fixture(scope="module")
def eval_frame() -> pl.DataFrame:
    return generate("eval", EVAL, 5)


@pytest.fixture(scope="module")
def plain_frame() -> pl.DataFrame:
    return generate("eval", EVAL_PLAIN, 5)


FRAMES = ["train", "eval", "plain"]


@pytest.fixture
def frames(train_frame, eval_frame, plain_frame):
    return {"train": train_frame, "eval": eval_frame, "plain": plain_frame}


# --- determinism -------------------------------------------------------------------------------

@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_same_seed_gives_byte_identical_parquet(tmp_path, split, params):
    rec = record(split, params, 3)
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 3), tmp_path / "b.parquet", rec)
    assert a.read_bytes() == b.read_bytes()
    assert datasets.read(a, TASK.schema).equals(generate(split, params, 3))


@pytest.mark.parametrize("split,params", [("train", {**TRAIN, "n_samples": 200}), ("eval", EVAL)])
def test_different_seeds_give_different_data(tmp_path, split, params):
    rec = record(split, params, 3)
    a = write(generate(split, params, 3), tmp_path / "a.parquet", rec)
    b = write(generate(split, params, 4), tmp_path / "b.parquet", rec)
    assert a.read_bytes() != b.read_bytes()
    prompts_a = generate(split, params, 3)["prompt"].to_list()
    prompts_b = generate(split, params, 4)["prompt"].to_list()
    assert sum(p != q for p, q in zip(prompts_a, prompts_b)) > len(prompts_a) // 2


def test_blocks_do_not_change_the_law(monkeypatch):
    """Drawing in blocks only bounds memory: a tiny block gives valid, equally distributed data."""
    from pipeline_src.tasks import variable_assignment

    monkeypatch.setattr(variable_assignment, "BLOCK", 7)
    frame = generate("train", {**TRAIN, "n_samples": 50}, 3)
    TASK.schema.validate(frame)
    assert frame.height == 50


def test_scratchpad_flag_changes_only_the_response(eval_frame, plain_frame):
    same = ["length", "n_statements", "depth", "prompt", "prompt_pos", "answer"]
    assert eval_frame.select(same).equals(plain_frame.select(same))


# --- labels, invariants and coupled IDs ---------------------------------------------------------

@pytest.mark.parametrize("which", FRAMES)
def test_statements_and_chains_are_well_formed(which, frames):
    params = {"train": TRAIN, "eval": EVAL, "plain": EVAL_PLAIN}[which]
    frame = frames[which]
    assert frame.height > 0
    for row in frame.iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"])
        n = len(statements)
        assert row["n_statements"] == row["length"] == n
        assert len(row["prompt"]) == 4 * n + 4
        lhs = [s[0] for s in statements]
        assert len(set(lhs)) == n  # every variable on a left side at most once
        names = set(lhs) | {s[1] for s in statements if s[1].startswith("v")}
        assert names == set(lhs)  # every right-hand variable is assigned: the n variables are all
        assert all(int(v[1:]) < params["n_vars"] for v in names)
        assert query in lhs
        for head in lhs:  # every chain, distractors included, ends in a digit
            assert follow(statements, head)[-1][0] in DIGITS
        heads = set(lhs) - {s[1] for s in statements}
        assert query in heads  # the query starts its chain
        for head in heads:  # distractor chains follow the depth law too (the last one cut to fit)
            assert len(follow(statements, head)) <= params["d_max"]
        assert sum(len(follow(statements, h)) for h in heads) == n  # the chains partition the statements
        hops = follow(statements, query)
        assert row["depth"] == len(hops)
        assert 1 <= row["depth"] <= min(params["d_max"], n)
        assert row["answer"] == int(hops[-1][0])


@pytest.mark.parametrize("which", FRAMES)
def test_response_follows_the_chain(which, frames):
    frame = frames[which]
    for row in frame.iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"])
        hops = follow(statements, query)
        response = VOCAB.decode(row["response"])
        if which == "plain":
            assert response == [hops[-1][0], "<eos>"]
        else:
            assert response == [rhs for rhs, _ in hops] + ["<eos>"]


@pytest.mark.parametrize("which", FRAMES)
def test_coupled_ids_follow_the_rule(which, frames):
    """<bos> 0; statement j -> r+j; `? q =` -> r+n+1..r+n+3; <eos> -> r+n+4 (r = 1)."""
    r = 1
    for row in frames[which].iter_rows(named=True):
        n = row["n_statements"]
        expected = [0] + [r + j for j in range(n) for _ in range(4)] + [r + n + 1, r + n + 2, r + n + 3]
        assert row["prompt_pos"] == expected
        assert row["response_pos"][-1] == r + n + 4


@pytest.mark.parametrize("which", FRAMES)
def test_each_response_token_has_the_id_of_the_statement_it_reads(which, frames):
    """Locality: each response token's ID is that of the statement whose rhs it is, and that
    statement's lhs is the previous hop's variable (the query for the first hop)."""
    for row in frames[which].iter_rows(named=True):
        statements, query = parse(row["prompt"], row["prompt_pos"])
        by_id = {sid: (lhs, rhs) for lhs, rhs, sid in statements}
        response = VOCAB.decode(row["response"])[:-1]
        ids = row["response_pos"][:-1]
        if which == "plain":  # only the answer: read from the chain's last statement
            lhs, rhs = by_id[ids[0]]
            assert rhs == response[0]
            assert follow(statements, query)[-1] == (rhs, ids[0])
            continue
        previous = query
        for token, sid in zip(response, ids):
            lhs, rhs = by_id[sid]
            assert rhs == token
            assert lhs == previous
            previous = token


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


def test_answers_digits_and_variables_are_spread(train_frame):
    assert set(train_frame["answer"].to_list()) == set(range(10))
    used = Counter()
    for prompt in train_frame["prompt"].to_list()[:600]:
        used.update(t for t in VOCAB.decode(prompt) if t.startswith("v"))
    assert set(used) == {f"v{i}" for i in range(TRAIN["n_vars"])}  # all names, not just v0..v{n_max-1}


def test_query_statement_position_is_uniform(eval_frame):
    """The shuffle puts the query statement anywhere: its ID spreads over all n statements."""
    cell = eval_frame.filter(pl.col("length") == 3)
    first = Counter(ids[0] for ids in cell["response_pos"].to_list())
    assert set(first) == {1, 2, 3}


def test_sequence_tokens_and_max_position(eval_frame, plain_frame):
    for frame, params in ((eval_frame, EVAL), (plain_frame, EVAL_PLAIN)):
        for row in frame.iter_rows(named=True):
            used = len(row["prompt"]) + len(row["response"])
            assert used <= TASK.sequence_tokens(row["length"], params) <= TASK.sequence_tokens(row["length"])
            assert TASK.max_position_id(row["length"]) == max(row["prompt_pos"] + row["response_pos"])
        for n in EVAL["lengths"]:  # the exact bound is reached
            lengths = frame.filter(pl.col("length") == n).select(
                pl.col("prompt").list.len() + pl.col("response").list.len())
            assert lengths.max().item() == TASK.sequence_tokens(n, params)


# --- evaluation grid and parameter errors -------------------------------------------------------

def test_eval_grid_cells_and_counts(eval_frame):
    counts = Counter(eval_frame["length"].to_list())
    assert counts == {n: EVAL["n_per_cell"] for n in EVAL["lengths"]}
    assert TASK.eval_cells(EVAL) == [(n,) for n in EVAL["lengths"]]


def test_changing_the_grid_leaves_other_cells_identical(eval_frame):
    other = generate("eval", {**EVAL, "lengths": [24, 8, 2]}, 5)
    for n in (8, 24):
        old = eval_frame.filter(pl.col("length") == n)
        assert parquet_bytes(old) == parquet_bytes(other.filter(pl.col("length") == n))


@pytest.mark.parametrize("split,params", [
    ("train", {**TRAIN, "n_vars": 15}),  # fewer variables than n_max statements
    ("eval", {**EVAL, "n_vars": 23}),  # fewer than the largest eval length
    ("train", {**TRAIN, "n_vars": 10_000}),  # more than the vocabulary holds
    ("train", {**TRAIN, "n_min": 0}),
    ("train", {**TRAIN, "d_max": 0}),
    ("train", {**TRAIN, "scratchpad": "yes"}),
    ("eval", {**EVAL, "lengths": [3, 3]}),
    ("eval", {**EVAL, "lengths": []}),
])
def test_bad_params_raise(split, params):
    with pytest.raises(ValueError):
        generate(split, params, 0)


def test_n_vars_error_says_why():
    with pytest.raises(ValueError, match="n_vars"):
        generate("eval", {**EVAL, "n_vars": 10}, 0)


# --- schema -------------------------------------------------------------------------------------

@pytest.fixture
def small_frame() -> pl.DataFrame:
    return generate("train", {**TRAIN, "n_max": 6, "n_samples": 30}, 2)


def test_valid_frame_round_trips(tmp_path, small_frame, plain_frame):
    for i, frame in enumerate((small_frame, plain_frame)):
        path = write(frame, tmp_path / f"ok{i}.parquet", record("train", {}, 0))
        assert datasets.read(path, TASK.schema).equals(frame)


@pytest.mark.parametrize("change,column", [
    (lambda f: f.rename({"depth": "depths"}), "depths"),
    (lambda f: f.drop("n_statements"), "n_statements"),
    (lambda f: f.with_columns(pl.col("answer").cast(pl.Int64)), "answer"),
])
def test_read_errors_name_file_and_column(tmp_path, small_frame, change, column):
    path = tmp_path / "bad.parquet"
    change(small_frame).write_parquet(path)
    with pytest.raises(datasets.DataError) as info:
        datasets.read(path, TASK.schema)
    assert str(path) in str(info.value)
    assert column in str(info.value)


BAD_FRAMES = {
    "depth_gt_n": lambda f: f.with_columns(depth=pl.col("n_statements") + 1),
    "length_not_n": lambda f: f.with_columns(length=pl.col("length") + 1),
    "answer_ten": lambda f: f.with_columns(answer=pl.lit(10, dtype=pl.Int32)),
    "answer_wrong": lambda f: f.with_columns(answer=(pl.col("answer") + 1) % 10),
    "prompt_cut": lambda f: f.with_columns(prompt=pl.col("prompt").list.head(pl.col("prompt").list.len() - 4)),
    "response_pos_short": lambda f: f.with_columns(response_pos=pl.col("response_pos").list.head(1)),
    "token_out_of_vocab": lambda f: f.with_columns(response=pl.col("response").list.eval(pl.element() + 1000)),
    "negative_id": lambda f: f.with_columns(prompt_pos=pl.col("prompt_pos").list.eval(pl.element() - 1)),
    "extra_column": lambda f: f.with_columns(extra=pl.lit(1, dtype=pl.Int32)),
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_write_validates_before_writing(tmp_path, small_frame, kind):
    bad = BAD_FRAMES[kind](small_frame)
    path = tmp_path / "out" / "bad.parquet"
    with pytest.raises(datasets.DataError) as info:
        datasets.write(bad, path, TASK.schema, record("train", {}, 0))
    assert str(path) in str(info.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
